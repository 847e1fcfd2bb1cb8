"""Screen a desk's control replies: drafts written to test the screens without any model.

A control file holds `control_id`, `reply` and `action`, and a column for each frame slot the reply's
checks need (the seed's: `program` and `contact_channel`); slots without a column are unknown. An
`expected_label` column, where a desk has one, holds the label each reply must get ("held for human
review", "not flagged by screen"); `devstack check-pack` compares them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from devstack.replay import format_table
from dialogue.actions import LESSON_SCREENS, Action, ReplyScreen, ScreenProfile
from dialogue.pack import UNKNOWN, DomainPack, PackError
from dialogue.pack.loader import describe, read_csv_records
from dialogue.screens import screen_reply

_FIELDS = ("control_id", "reply", "action")
_EXPECTED = "expected_label"


class ControlReply(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    control_id: Annotated[str, Field(min_length=1)]
    reply: Annotated[str, Field(min_length=1)]
    action: Action
    slots: dict[str, str]
    expected_label: ReplyScreen | None = None


class ControlResult(BaseModel):
    control_id: str
    reply: str
    action: str
    slots: dict[str, str]
    numerals: bool
    program_names: bool
    action_slots: bool
    personal_details: bool
    promise_words: bool
    placeholders: bool
    # With the desk profile: the desk's own screens that fired (the lesson's columns above stay).
    desk_screens_fired: list[str] | None = None
    screen_label: str

    def json_record(self) -> dict[str, Any]:
        """The result with each slot as a field of its own."""
        return {**self.model_dump(mode="json", exclude={"slots"}), **self.slots}


def read_controls(path: Path, pack: DomainPack) -> list[ControlReply]:
    """The control replies of `path`; every column but the three fixed ones must be a frame slot."""
    header, records = read_csv_records(path)
    missing = [name for name in _FIELDS if name not in header]
    slot_columns = [name for name in header if name not in (*_FIELDS, _EXPECTED)]
    strange = [name for name in slot_columns if name not in pack.frame.slot_names]
    if missing or strange:
        raise PackError(
            f"{path}: header must hold {list(_FIELDS)}, frame slots and perhaps {_EXPECTED}; "
            f"missing {missing}, unknown {strange}"
        )
    controls = []
    for line, record in records:
        slots = {name: record[name] for name in slot_columns}
        for name, value in slots.items():
            if value not in pack.frame.slot(name).values:
                raise PackError(f"{path}, row at line {line}: field {name}: {name} never holds that value")
        try:
            given = {name: record[name] for name in _FIELDS} | {"slots": slots}
            if record.get(_EXPECTED):
                given[_EXPECTED] = record[_EXPECTED]
            controls.append(ControlReply.model_validate(given))
        except ValidationError as error:
            raise PackError(f"{path}, row at line {line}: {describe(error)}") from None
    return controls


def screen_controls(
    controls: list[ControlReply], pack: DomainPack, profile: ScreenProfile = ScreenProfile.LESSON
) -> list[ControlResult]:
    results = []
    for control in controls:
        slots = dict.fromkeys(pack.frame.slot_names, UNKNOWN)
        slots.update(control.slots)
        report = screen_reply(control.reply, control.action, slots, pack, profile=profile)
        desk = [str(screen) for screen in report.fired if screen not in LESSON_SCREENS]
        results.append(
            ControlResult(
                control_id=control.control_id,
                reply=control.reply,
                action=control.action,
                slots=control.slots,
                **{str(screen): report.passed[screen] for screen in LESSON_SCREENS},
                desk_screens_fired=desk if profile is ScreenProfile.DESK else None,
                screen_label=report.label,
            )
        )
    return results


def control_table(results: Sequence[ControlResult], pack: DomainPack) -> str:
    """The seed's control table: each reply, its slots and every screen's verdict."""
    shown = [slot for slot in pack.frame.slot_names if any(slot in result.slots for result in results)]
    screens = ["Numerals", "Program names", "Action slots", "Personal details", "Promise words", "Screen label"]
    labels = [pack.frame.slot(slot).retained_label for slot in shown]
    headers = ["Control", "Control reply", "Action", *labels, *screens]
    rows = [
        [r.control_id, r.reply, r.action, *(r.slots.get(slot, UNKNOWN) for slot in shown), r.numerals,
         r.program_names, r.action_slots, r.personal_details, r.promise_words and r.placeholders, r.screen_label]
        for r in results
    ]  # fmt: skip
    if any(result.desk_screens_fired is not None for result in results):
        headers.insert(-1, "Desk screens fired")
        for row, result in zip(rows, results, strict=True):
            row.insert(-1, ", ".join(result.desk_screens_fired or []) or "none")
    return format_table("Control replies with labels from deterministic automatic checks", headers, rows)
