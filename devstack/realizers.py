"""The realizers devstack can run: the realizer's engines (`template`, `smollm`, `qwen`, `vllm`, built by
`realizer.engines.build_engine`) and `canned:FILE`.

`canned:FILE` reads chosen drafts from a CSV (conversation_id, turn_id, reply, and optionally
output_tokens, ended_by_eos, hit_token_cap) keyed by the scripted conversation and turn ids, to show
the screens on exactly those drafts; a conversation id `*` stands for any conversation (a page's, say).
A job with no canned row is answered as failed, so it falls back.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from dialogue.pack import read_csv_rows
from dialogue.realize import Realization, RealizeJob
from realizer.engines import ENGINE_NAMES, Engine, build_engine

REALIZER_NAMES = (*ENGINE_NAMES, "canned:FILE")


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
            row = self._replies.get((label, job.turn_id)) or self._replies.get(("*", job.turn_id))
            if row is None:
                answers.append(Realization(text="", ended_by_eos=False, hit_token_cap=False, failed=True))
                continue
            flags = row.model_dump(include={"ended_by_eos", "hit_token_cap", "output_tokens"})
            answers.append(Realization(text=row.reply, **flags))
        return answers


def build_realizer(
    name: str, labels: Mapping[str, str], *, model: str | None = None, revision: str | None = None
) -> Engine:
    """The engine for a `--realizer` value. Model engines import torch or vLLM only when chosen.

    `model` and `revision` choose the checkpoint for `qwen` and `vllm` (default: the pinned Qwen).
    """
    if name.startswith("canned:"):
        return CannedEngine(Path(name.removeprefix("canned:")), labels)
    if name == "vllm":
        # devstack's stdout holds the tables or the JSON lines; vLLM's own logs go to stderr.
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    return build_engine(name, model=model, revision=revision, progress=True)
