"""Scripted conversations: turns to replay, with what each should give where the file says.

A scripted-turn CSV holds `conversation_id`, `turn_id` and `user_utterance`, and optionally
`expected_action`, an `expected_<slot>` column for any slot of the frame, and `expected_fallback`
(`true` where the turn's generated reply is meant to be replaced by the fixed fallback, `false` where it
must not be; `devstack check-pack` compares it, and reads a blank cell as `false`). A blank cell expects
nothing. The columns are read from the file and checked against the frame: the code knows frames
and slots, not the desk's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from dialogue.actions import Action
from dialogue.pack.loader import PackError, describe, read_csv_records
from dialogue.pack.schema import Frame

EXPECTED_PREFIX = "expected_"
NOT_SLOTS = ("action", "fallback")
"""The `expected_*` columns that name no slot: the action, and whether the fixed fallback answers."""
_REQUIRED = ("conversation_id", "turn_id", "user_utterance")


class ScriptedTurn(BaseModel):
    """One row of a scripted conversation; `expected_slots` holds the slots the row expects a value for."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    conversation_id: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    turn_id: Annotated[int, Field(ge=1)]
    user_utterance: Annotated[str, StringConstraints(min_length=1)]
    expected_action: Action | None = None
    expected_fallback: bool | None = None
    expected_slots: dict[str, str] = Field(default_factory=dict)


def read_scripted_turns(path: str | os.PathLike[str], frame: Frame | None = None) -> list[ScriptedTurn]:
    """Read scripted turns from a CSV file; with a frame, every `expected_<slot>` must be one of its
    slots and every value one it allows."""
    file = Path(path)
    header, records = read_csv_records(file)
    missing = [name for name in _REQUIRED if name not in header]
    unknown = [name for name in header if name not in _REQUIRED and not name.startswith(EXPECTED_PREFIX)]
    if missing or unknown:
        raise PackError(
            f"{file}: header must hold {list(_REQUIRED)} and expected_* columns; missing {missing}, "
            f"unexpected {unknown}"
        )
    slots = [name.removeprefix(EXPECTED_PREFIX) for name in header if name.startswith(EXPECTED_PREFIX)]
    slots = [slot for slot in slots if slot not in NOT_SLOTS]
    if frame is not None and (strange := [slot for slot in slots if slot not in frame.slot_names]):
        raise PackError(f"{file}: expected_* columns name no slot of the frame: {strange}")
    turns: list[ScriptedTurn] = []
    for line, record in records:
        expected = {slot: record[EXPECTED_PREFIX + slot] for slot in slots if record[EXPECTED_PREFIX + slot]}
        if frame is not None:
            for slot, value in expected.items():
                if value not in frame.slot(slot).values:
                    raise PackError(f"{file}, row at line {line}: expected_{slot}: {slot} never holds that value")
        try:
            turns.append(
                ScriptedTurn(
                    conversation_id=record["conversation_id"],
                    turn_id=record["turn_id"],  # type: ignore[arg-type]
                    user_utterance=record["user_utterance"],
                    expected_action=record.get("expected_action") or None,  # type: ignore[arg-type]
                    expected_fallback=record.get("expected_fallback", "").strip() or None,  # type: ignore[arg-type]
                    expected_slots=expected,
                )
            )
        except ValidationError as error:
            raise PackError(f"{file}, row at line {line}: {describe(error)}") from None
    return turns


def scripted_turns_by_conversation(turns: Sequence[ScriptedTurn]) -> dict[str, list[ScriptedTurn]]:
    """Group scripted turns by conversation, in file order, each sorted by turn id."""
    grouped: dict[str, list[ScriptedTurn]] = {}
    for turn in turns:
        grouped.setdefault(turn.conversation_id, []).append(turn)
    return {key: sorted(rows, key=lambda row: row.turn_id) for key, rows in grouped.items()}
