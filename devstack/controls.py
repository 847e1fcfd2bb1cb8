"""Screen the seed's control replies: drafts written to test the screens without any model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from dialogue.actions import Action
from dialogue.pack import UNKNOWN, DomainPack, read_csv_rows
from dialogue.screens import screen_reply


class ControlReply(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    control_id: Annotated[str, Field(min_length=1)]
    reply: Annotated[str, Field(min_length=1)]
    action: Action
    program: str
    contact_channel: str


class ControlResult(BaseModel):
    control_id: str
    reply: str
    action: str
    program: str
    contact_channel: str
    numerals: bool
    program_names: bool
    action_slots: bool
    personal_details: bool
    promise_words: bool
    placeholders: bool
    screen_label: str


def read_controls(path: Path) -> list[ControlReply]:
    return read_csv_rows(path, ControlReply)


def screen_controls(controls: list[ControlReply], pack: DomainPack) -> list[ControlResult]:
    results = []
    for control in controls:
        slots = dict.fromkeys(pack.frame.slot_names, UNKNOWN)
        slots.update({"program": control.program, "contact_channel": control.contact_channel})
        report = screen_reply(control.reply, control.action, slots, pack)
        results.append(
            ControlResult(
                control_id=control.control_id,
                reply=control.reply,
                action=control.action,
                program=control.program,
                contact_channel=control.contact_channel,
                **report.passed,
                screen_label=report.label,
            )
        )
    return results
