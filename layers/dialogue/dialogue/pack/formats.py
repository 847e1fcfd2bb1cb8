"""The pack format's versions: what each one made a pack hold, and what a pack written for an earlier one
gets instead, so that a desk written from the docs of its day keeps loading.

`domain.toml` says which format it is written in with `format_version = N`, at the top of the file,
before the first table. A pack that says none was written before formats had numbers: it is read as the
earliest format, 1, so every default below applies where the pack lacks the table. A pack that declares
a format is held to it: whatever that format needs and the pack lacks is refused at load, in one line
naming the file, the table and the key to add.

| format | since (commit)  | what a pack must hold from then on                                                   |
| ------ | --------------- | ------------------------------------------------------------------------------------ |
| 1      | c0cf78c         | the format docs/DOMAIN_PACKS.md first documented: seven fixed actions, two of them   |
|        |                 | `request_program` and `request_contact`, each with its `[actions.*]` table           |
| 2      | f1f7d99         | a request action per slot the desk asks for (`request_<name>` in the slot's          |
|        |                 | `request_action`), and no `[actions.*]` table for a request no slot asks with         |
| 3      | e59a0de         | `[actions.clarify]` (a correction the desk could not read)                           |
| 4      | eb2586a         | `[actions.next_step]` (after the confirmation, a turn that changes nothing)          |

Read as an earlier format than the one that needs it, a pack lacking `[actions.clarify]` or
`[actions.next_step]` gets `DEFAULT_ACTIONS`' texts, which name no desk; read as format 1, a pack's
`[actions.request_program]` or `[actions.request_contact]` that no slot asks with (format 1 wanted both,
asked or not) is left unread. Every other field added since format 1 is optional in every format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FORMAT_KEY = "format_version"
EARLIEST_FORMAT = 1
CURRENT_FORMAT = 4
"""The format this release writes and reads without a default (the shipped desks and the starter declare it)."""

_FIXED = "Use the fixed reply outside the model."

DEFAULT_ACTIONS: Mapping[str, tuple[int, Mapping[str, str]]] = {
    # A correction the desk could not read ("sorry, I meant the other one"), or a "no" to the confirmation:
    # ask again, and never confirm the old value.
    "clarify": (
        3,
        {
            "instruction": _FIXED,
            "fixed_text": "I did not catch what you want to change. Please say again what you would like.",
        },
    ),
    # After the confirmation, a turn that changes nothing ("ok", "thanks"): what happens next, not the
    # confirmation again.
    "next_step": (
        4,
        {
            "instruction": _FIXED,
            "fixed_text": "Your choices are noted, and nothing more is needed from you now. "
            "You can ask me a question meanwhile.",
        },
    ),
}
"""Per action a later format added: the format that needs its table, and the table a pack of an earlier
format gets in its place."""

FORMAT_1_REQUESTS = ("request_program", "request_contact")
"""Format 1's two fixed request actions, whose tables every pack of that format held, asked with or not."""


@dataclass(frozen=True)
class PackFormat:
    """How a pack's domain.toml was read: the format it declared (None: none), the format it was read as,
    the tables it got by default and the ones left unread."""

    declared: int | None
    read_as: int
    defaulted: tuple[str, ...] = ()
    left_unread: tuple[str, ...] = ()

    def __str__(self) -> str:
        said = f"format {self.read_as}" if self.declared else f"format {self.read_as} (no {FORMAT_KEY}: the earliest)"
        if self.defaulted:
            said += f"; defaulted {', '.join(self.defaulted)}"
        if self.left_unread:
            said += f"; left unread {', '.join(self.left_unread)} (no slot asks with it)"
        return said


def read_format(data: Mapping[str, Any]) -> tuple[dict[str, Any], PackFormat]:
    """domain.toml's contents (`data`, as TOML read them) with the defaults of the format it is read as, and
    how it was read. ValueError, naming the field, for a `format_version` this release does not read."""
    declared = data.get(FORMAT_KEY)
    if declared is not None and (type(declared) is not int or not EARLIEST_FORMAT <= declared <= CURRENT_FORMAT):
        raise ValueError(
            f"field {FORMAT_KEY}: {declared!r} is no format this release reads; write a whole number from "
            f"{EARLIEST_FORMAT} to {CURRENT_FORMAT}"
        )
    read_as = declared if declared is not None else EARLIEST_FORMAT
    actions = data.get("actions")
    if not isinstance(actions, dict):  # the schema names what is wrong with it
        return dict(data), PackFormat(declared, read_as)
    filled = dict(actions)
    defaulted = []
    for name, (needed_from, table) in DEFAULT_ACTIONS.items():
        if read_as < needed_from and name not in filled:
            filled[name] = dict(table)
            defaulted.append(f"[actions.{name}]")
    unread = []
    if read_as < 2:
        asked = {slot.get("request_action") for slot in _slots(data)}
        for name in FORMAT_1_REQUESTS:
            if name in filled and name not in asked:
                del filled[name]
                unread.append(f"[actions.{name}]")
    return {**data, "actions": filled}, PackFormat(declared, read_as, tuple(defaulted), tuple(unread))


def _slots(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    frame = data.get("frame")
    slots = frame.get("slots") if isinstance(frame, dict) else None
    return [slot for slot in slots if isinstance(slot, dict)] if isinstance(slots, list) else []
