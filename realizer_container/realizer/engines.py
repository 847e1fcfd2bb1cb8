"""Realization engines behind one interface. Each gets whole batches of jobs and answers in order.

`template` words each action with the pack's fixed wording and calls no model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from dialogue.pack import DomainPack
from dialogue.realize import RealizeJob


class Realization(BaseModel):
    """One engine output: the wording and how generation ended."""

    model_config = ConfigDict(frozen=True)

    text: str
    ended_by_eos: bool
    hit_token_cap: bool
    failed: bool = False
    over_budget: bool = False
    prompt_tokens: int | None = None
    output_tokens: int | None = None


class Engine(Protocol):
    name: str
    model_id: str | None
    revision: str | None

    def realize(self, jobs: Sequence[RealizeJob]) -> list[Realization]: ...


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
        program = job.slots.get(pack.program_slot, "unknown")
        return template.format_map({**job.slots, "program_display": pack.program_display(program), "facts": facts})

    def realize(self, jobs: Sequence[RealizeJob]) -> list[Realization]:
        return [Realization(text=self.word(job), ended_by_eos=True, hit_token_cap=False) for job in jobs]
