"""Replay scripted conversations through the local stack, compare with the expected columns, and
print the seed's tables: dialogue trace, token counts, replies, screens and fallback, the shown
transcript and the retained record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from devstack.stack import LocalStack
from devstack.token_accounting import count_tokens, naive_messages, token_row
from dialogue.actions import CONTENT_SCREENS, Action, ScreenProfile
from dialogue.pack import DomainPack, Frame, ScriptedTurn, get_pack
from dialogue.realize import build_realizer_messages, passage_ids
from dialogue.replies import fixed_reply
from dialogue.state import DialogueState


class ReplayedTurn(BaseModel):
    """One replayed turn; `replay --json` prints `json_record()`. It holds no user text."""

    conversation_id: str
    turn_id: int
    api_conversation_id: str
    api_turn_id: int
    intent: str
    injection_screen: bool
    privileged_request: bool
    slots: dict[str, str]
    action: str
    # The handbook topic that decided an inform or an abstention, and the rows the prompt used.
    topic: str | None
    passage_ids: list[str]
    reply_source: str
    status: str
    # Tokens, in the Qwen2.5 vocabulary.
    naive_tokens: int
    state_prompt_tokens: int
    max_new_tokens: int
    prompt_plus_output: int
    design_budget: int
    # Realization and screening.
    engine: str | None
    model_id: str | None
    revision: str | None
    raw_reply: str | None
    output_tokens: int | None
    ended_by_eos: bool | None
    hit_token_cap: bool | None
    screen_profile: str
    screens_fired: list[str]
    screen_checks: dict[str, bool] | None
    fallback_used: bool
    final_reply: str | None
    reply_screen: str
    human_review: str
    # Expectations, when the file has them: a value per frame slot (None where the row expects none).
    expected_slots: dict[str, str | None]
    expected_action: str | None
    state_matches: bool | None
    action_matches: bool | None

    def json_record(self) -> dict[str, Any]:
        """The row with each slot and each expectation as a field of its own (`program`, `expected_program`)."""
        record = self.model_dump(mode="json", exclude={"slots", "expected_slots"})
        record.update(self.slots)
        record.update({f"expected_{slot}": value for slot, value in self.expected_slots.items()})
        return record

    @property
    def uses_model(self) -> bool:
        return self.reply_source == "model"

    @property
    def matches(self) -> bool | None:
        if self.state_matches is None and self.action_matches is None:
            return None
        return self.state_matches is not False and self.action_matches is not False


# A turn's retained flags, as the turn's record holds them, and what the realizer said of its wording.
STORED_FIELDS = (
    "intent", "injection_screen", "privileged_request", "reply_source", "status", "fallback_used", "reply_screen",
    "human_review",
)  # fmt: skip
GENERATION_FIELDS = {"engine", "model_id", "revision", "output_tokens", "ended_by_eos", "hit_token_cap"}


class ReplayError(RuntimeError):
    """The local stack answered a scripted turn with an unexpected status."""


def _state_matches(slots: dict[str, str], turn: ScriptedTurn) -> bool | None:
    if not turn.expected_slots:
        return None
    return all(slots[slot] == value for slot, value in turn.expected_slots.items())


def replay_conversation(
    stack: LocalStack, turns: Sequence[ScriptedTurn], pack: DomainPack | None = None
) -> list[ReplayedTurn]:
    """Run one scripted conversation through the API, the realizer and the screen function."""
    from dialogue.settings import get_settings

    pack = pack or get_pack()
    profile = ScreenProfile(get_settings().screen_profile or pack.spec.screens.profile)
    created = stack.call_api("POST", "/conversations")
    if created.status != 201:
        raise ReplayError(f"creating a conversation answered {created.status}")
    api_id = created.body["conversation_id"]
    rows: list[ReplayedTurn] = []
    for index, turn in enumerate(turns):
        stack.labels[api_id] = turn.conversation_id
        posted = stack.call_api("POST", f"/conversations/{api_id}/turns", {"text": turn.user_utterance})
        if posted.status not in (200, 202):
            raise ReplayError(f"turn {turn.conversation_id}/{turn.turn_id} answered {posted.status}")
        stack.drain()
        fetched = stack.call_api("GET", f"/conversations/{api_id}/turns/{posted.body['turn_id']}")
        if fetched.status != 200:
            raise ReplayError(f"reading turn {turn.conversation_id}/{turn.turn_id} answered {fetched.status}")
        # The reply as the resident gets it; the flags as the table keeps them.
        detail: dict[str, Any] = {
            **stack.stored_turn(api_id, posted.body["turn_id"]),
            "reply": fetched.body.get("reply"),
        }
        action = Action(detail["action"])
        slots = detail["slots"]
        state = DialogueState.from_slots(pack.frame, slots)
        naive = count_tokens(
            naive_messages(pack.spec.prompts.naive_system, [t.user_utterance for t in turns[: index + 1]])
        )
        topic = detail.get("topic")
        state_tokens = count_tokens(build_realizer_messages(state, action, pack, topic))
        rows_used = list(passage_ids(action, state, pack, topic)) if action.uses_model else []
        realized = stack.realized_replies().get((api_id, detail["turn_id"]))
        fired = detail["screens_fired"]
        generation = (
            dict.fromkeys(GENERATION_FIELDS) if realized is None else realized.model_dump(include=GENERATION_FIELDS)
        )
        rows.append(
            ReplayedTurn.model_validate(
                {
                    "conversation_id": turn.conversation_id,
                    "turn_id": turn.turn_id,
                    "api_conversation_id": api_id,
                    "api_turn_id": detail["turn_id"],
                    "slots": slots,
                    "action": action,
                    "topic": topic,
                    "passage_ids": rows_used,
                    **{name: detail[name] for name in STORED_FIELDS},
                    **token_row(naive, state_tokens, action.uses_model),
                    **generation,
                    "raw_reply": realized.text
                    if realized
                    else (None if action.uses_model else fixed_reply(action, state, pack, topic)),
                    "screen_profile": profile,
                    "screens_fired": fired,
                    "screen_checks": {name: name not in fired for name in profile.screens} if realized else None,
                    "final_reply": detail.get("reply"),
                    "expected_slots": {slot: turn.expected_slots.get(slot) for slot in pack.frame.slot_names},
                    "expected_action": turn.expected_action,
                    "state_matches": _state_matches(slots, turn),
                    "action_matches": None if turn.expected_action is None else action == turn.expected_action,
                }
            )
        )
    return rows


# --- tables ------------------------------------------------------------------------------------------

NOT_APPLICABLE = "not applicable"


def _cell(value: object) -> str:
    if value is None:
        return NOT_APPLICABLE
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    return str(value)


def format_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table with a title line, sized to its cells."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [max([len(header), *(len(row[index]) for row in cells)]) for index, header in enumerate(headers)]
    rule = "  ".join("-" * width for width in widths)
    out = [title, "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip(), rule]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(out)


def trace_table(rows: Sequence[ReplayedTurn], frame: Frame) -> str:
    return format_table(
        "Dialogue trace from state updates and policy actions",
        ["Conversation", "Turn", "Rule intent", *(slot.label for slot in frame.slots), "Action",
         "State matches expected", "Action matches expected"],
        [[r.conversation_id, r.turn_id, r.intent, *(r.slots[name] for name in frame.slot_names), r.action,
          r.state_matches, r.action_matches] for r in rows],
    )  # fmt: skip


def token_table(rows: Sequence[ReplayedTurn]) -> str:
    return format_table(
        "User-turn transcript prompt counts compared with state-prompt counts (Qwen2.5 tokens)",
        ["Conversation", "Turn", "Action", "Model call", "User-turn transcript tokens", "State prompt tokens",
         "Maximum new tokens", "State prompt plus output", "Design budget"],
        [[r.conversation_id, r.turn_id, r.action, r.uses_model, r.naive_tokens, r.state_prompt_tokens,
          r.max_new_tokens, r.prompt_plus_output, r.design_budget] for r in rows],
    )  # fmt: skip


def reply_source_label(row: ReplayedTurn, engine_label: str) -> str:
    return engine_label if row.uses_model else "fixed text"


def replies_table(rows: Sequence[ReplayedTurn], engine_label: str) -> str:
    return format_table(
        "Replies from fixed text or model realization",
        ["Conversation", "Turn", "Action", "Reply source", "Raw reply", "Output tokens", "EOS emitted",
         "Hit token cap"],
        [[r.conversation_id, r.turn_id, r.action, reply_source_label(r, engine_label), r.raw_reply,
          r.output_tokens if r.uses_model else None, r.ended_by_eos, r.hit_token_cap] for r in rows],
    )  # fmt: skip


def _check(row: ReplayedTurn, *names: str) -> bool | None:
    if row.screen_checks is None:
        return None
    return all(row.screen_checks[name] for name in names)


def screens_table(rows: Sequence[ReplayedTurn], engine_label: str) -> str:
    def fired(row: ReplayedTurn) -> str | None:
        if not row.uses_model:
            return None
        content = [name for name in row.screens_fired if name in CONTENT_SCREENS]
        return ", ".join(content) or "none"

    return format_table(
        "Automatic reply checks and fixed fallback for generated wording",
        ["Conversation", "Turn", "Action", "Reply source", "Numerals screen", "Program-name screen",
         "Action-slot screen", "Personal-detail screen", "Promise-word screen", "Failed screen checks",
         "EOS before token cap", "Reply screen", "Human checks", "Reply shown after fallback rule"],
        [[r.conversation_id, r.turn_id, r.action, reply_source_label(r, engine_label), _check(r, "numerals"),
          _check(r, "program_names"), _check(r, "action_slots"), _check(r, "personal_details"),
          _check(r, "promise_words", "placeholders"), fired(r),
          (bool(r.ended_by_eos) and not r.hit_token_cap) if r.uses_model else None,
          r.reply_screen, r.human_review, r.final_reply] for r in rows],
    )  # fmt: skip


def shown_transcript(rows: Sequence[ReplayedTurn], utterances: dict[tuple[str, int], str], conversation: str) -> str:
    """The seed's shown-replies table for one conversation. The utterances come from the local file."""
    return format_table(
        f"Shown replies for conversation {conversation} after fallback rules",
        ["User turn", "Action", "Reply shown"],
        [[utterances[(r.conversation_id, r.turn_id)], r.action, r.final_reply]
         for r in rows if r.conversation_id == conversation],
    )  # fmt: skip


def retained_table(rows: Sequence[ReplayedTurn], frame: Frame) -> str:
    return format_table(
        "Retained record with slots, actions, and flags only",
        ["Conversation", "Turn", *(slot.retained_label for slot in frame.slots), "Action", "Injection screen",
         "Staff-only request", "Reply screen", "Human checks"],
        [[r.conversation_id, r.turn_id, *(r.slots[name] for name in frame.slot_names), r.action,
          r.injection_screen, r.privileged_request, r.reply_screen, r.human_review] for r in rows],
    )  # fmt: skip


def summary_line(rows: Sequence[ReplayedTurn]) -> str:
    compared = [row for row in rows if row.matches is not None]
    matched = sum(1 for row in compared if row.matches)
    unchecked = len(rows) - len(compared)
    extra = f", {unchecked} without expectations" if unchecked else ""
    generated = [row for row in rows if row.uses_model]
    fallbacks = sum(1 for row in generated if row.fallback_used)
    held = sum(1 for row in generated if row.reply_screen == "held for human review")
    return (
        f"{matched} of {len(compared)} turns match the expected state and action{extra}. "
        f"{fallbacks} of {len(generated)} generated replies replaced by fixed fallback text; "
        f"{held} held for human review."
    )
