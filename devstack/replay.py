"""Replay scripted conversations through the local stack and compare with the expected columns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from devstack.stack import LocalStack


class ReplayedTurn(BaseModel):
    """One replayed turn, as `replay --json` prints it."""

    conversation_id: str
    turn_id: int
    api_conversation_id: str
    api_turn_id: int
    intent: str
    injection_screen: bool
    privileged_request: bool
    program: str
    childcare_needed: str
    contact_channel: str
    action: str
    reply_source: str
    status: str
    final_reply: str | None
    reply_screen: str
    human_review: str
    screens_fired: list[str]
    fallback_used: bool
    expected_program: str | None
    expected_childcare: str | None
    expected_contact: str | None
    expected_action: str | None
    state_matches: bool | None
    action_matches: bool | None

    @property
    def matches(self) -> bool | None:
        if self.state_matches is None and self.action_matches is None:
            return None
        return self.state_matches is not False and self.action_matches is not False


def _state_matches(detail: dict[str, Any], turn: Any) -> bool | None:
    expected = {
        "program": turn.expected_program,
        "childcare_needed": turn.expected_childcare,
        "contact_channel": turn.expected_contact,
    }
    given = {slot: value for slot, value in expected.items() if value is not None}
    if not given:
        return None
    return all(detail["slots"][slot] == value for slot, value in given.items())


class ReplayError(RuntimeError):
    """The local stack answered a scripted turn with an unexpected status."""


def replay_conversation(stack: LocalStack, turns: Sequence[Any]) -> list[ReplayedTurn]:
    """Run one scripted conversation through the API, the realizer and the screen function."""
    created = stack.call_api("POST", "/conversations")
    if created.status != 201:
        raise ReplayError(f"creating a conversation answered {created.status}")
    api_id = created.body["conversation_id"]
    rows: list[ReplayedTurn] = []
    for turn in turns:
        posted = stack.call_api("POST", f"/conversations/{api_id}/turns", {"text": turn.user_utterance})
        if posted.status not in (200, 202):
            raise ReplayError(f"turn {turn.conversation_id}/{turn.turn_id} answered {posted.status}")
        stack.drain()
        fetched = stack.call_api("GET", f"/conversations/{api_id}/turns/{posted.body['turn_id']}")
        if fetched.status != 200:
            raise ReplayError(f"reading turn {turn.conversation_id}/{turn.turn_id} answered {fetched.status}")
        detail = fetched.body
        rows.append(
            ReplayedTurn(
                conversation_id=turn.conversation_id,
                turn_id=turn.turn_id,
                api_conversation_id=api_id,
                api_turn_id=detail["turn_id"],
                intent=detail["intent"],
                injection_screen=detail["injection_screen"],
                privileged_request=detail["privileged_request"],
                program=detail["slots"]["program"],
                childcare_needed=detail["slots"]["childcare_needed"],
                contact_channel=detail["slots"]["contact_channel"],
                action=detail["action"],
                reply_source=detail["reply_source"],
                status=detail["status"],
                final_reply=detail.get("reply"),
                reply_screen=detail["reply_screen"],
                human_review=detail["human_review"],
                screens_fired=detail["screens_fired"],
                fallback_used=detail["fallback_used"],
                expected_program=turn.expected_program,
                expected_childcare=turn.expected_childcare,
                expected_contact=turn.expected_contact,
                expected_action=turn.expected_action,
                state_matches=_state_matches(detail, turn),
                action_matches=None if turn.expected_action is None else detail["action"] == turn.expected_action,
            )
        )
    return rows


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return str(value)


def format_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table with a title line, sized to its cells."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [max([len(header), *(len(row[index]) for row in cells)]) for index, header in enumerate(headers)]
    line = "  ".join("-" * width for width in widths)
    out = [title, "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)), line]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(out)


def trace_table(rows: Sequence[ReplayedTurn]) -> str:
    return format_table(
        "Dialogue trace from state updates and policy actions",
        [
            "Conversation",
            "Turn",
            "Rule intent",
            "Program",
            "Child care",
            "Contact",
            "Action",
            "State matches expected",
            "Action matches expected",
        ],
        [
            [
                r.conversation_id,
                r.turn_id,
                r.intent,
                r.program,
                r.childcare_needed,
                r.contact_channel,
                r.action,
                r.state_matches,
                r.action_matches,
            ]
            for r in rows
        ],
    )


def replies_table(rows: Sequence[ReplayedTurn]) -> str:
    return format_table(
        "Replies shown after screens and fallback",
        [
            "Conversation",
            "Turn",
            "Action",
            "Reply source",
            "Screens fired",
            "Reply screen",
            "Human checks",
            "Reply shown",
        ],
        [
            [
                r.conversation_id,
                r.turn_id,
                r.action,
                r.reply_source,
                (", ".join(r.screens_fired) or "none") if r.reply_source == "model" else "not applicable",
                r.reply_screen,
                r.human_review,
                r.final_reply,
            ]
            for r in rows
        ],
    )


def summary_line(rows: Sequence[ReplayedTurn]) -> str:
    compared = [row for row in rows if row.matches is not None]
    matched = sum(1 for row in compared if row.matches)
    unchecked = len(rows) - len(compared)
    extra = f", {unchecked} without expectations" if unchecked else ""
    return f"{matched} of {len(compared)} turns match the expected state and action{extra}."
