"""Screens on generated replies, and the fixed-fallback rule.

Content screens (the seed's): numerals absent from the selected facts, program names other than the
state's, missing action slots, personal-detail requests, promise words, bracketed placeholders.
Generation checks: the model hit its token cap, never emitted EOS, failed, or the prompt was over
budget. Any of these shows the fixed fallback; only a content screen labels the reply
"held for human review". Every generated reply's human check stays "pending".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from dialogue.actions import CONTENT_SCREENS, Action, HumanReview, ReplyScreen, Screen
from dialogue.pack import DomainPack
from dialogue.realize import RealizedReply, ReplyDeadline
from dialogue.records import Draft, ScreenOutcome
from dialogue.replies import fixed_reply
from dialogue.state import DialogueState

_NUMERAL = re.compile(r"\b\d+\b")


class ScreenReport(BaseModel):
    """Which content screens passed (True) or fired (False) on one reply."""

    model_config = ConfigDict(frozen=True)

    passed: dict[Screen, bool]

    @property
    def fired(self) -> tuple[Screen, ...]:
        return tuple(name for name in CONTENT_SCREENS if not self.passed[name])

    @property
    def label(self) -> ReplyScreen:
        return ReplyScreen.HELD if self.fired else ReplyScreen.NOT_FLAGGED


def allowed_fact_text(passage_ids: Sequence[str], pack: DomainPack) -> str:
    """The text of the handbook rows the prompt held, joined: the only source of numerals."""
    return " ".join(pack.passages[passage_id].text for passage_id in passage_ids if passage_id in pack.passages)


def numerals_ok(reply: str, allowed_text: str) -> bool:
    allowed = set(_NUMERAL.findall(allowed_text))
    return all(number in allowed for number in _NUMERAL.findall(reply))


def program_names_ok(reply: str, action: Action, program: str, pack: DomainPack, allowed_text: str = "") -> bool:
    """A reply may name only the state's program, or a program the rows its prompt held name (a row
    listing the programs offered); a request_program reply may name any."""
    if action is Action.REQUEST_PROGRAM:
        return True
    lowered, allowed = reply.casefold(), allowed_text.casefold()
    mentioned = [p for p in pack.spec.programs if p.display_name.casefold() in lowered]
    return all(p.id == program or p.display_name.casefold() in allowed for p in mentioned)


def action_slots_ok(reply: str, action: Action, slots: Mapping[str, str], pack: DomainPack) -> bool:
    """The reply carries what its action is for: the pack's required patterns and slot values."""
    spec = pack.action(action)
    if not all(pattern.search(reply) for pattern in pack.compiled.required[action]):
        return False
    for slot in spec.required_slots:
        value = slots[slot]
        if slot == pack.program_slot:
            alias = pack.compiled.program_aliases.get(value)
            if alias is None or not alias.search(reply):
                return False
        elif value.casefold() not in reply.casefold():
            return False
    return True


def screen_reply(
    reply: str,
    action: Action,
    slots: Mapping[str, str],
    pack: DomainPack,
    passage_ids: Sequence[str] | None = None,
) -> ScreenReport:
    """Run every content screen on one generated reply. `passage_ids` are the rows its prompt held (the
    job's); without them, the rows the pack gives the action and program outside any topic."""
    program = slots[pack.program_slot]
    patterns = pack.compiled
    rows = pack.passage_ids_for(action, program) if passage_ids is None else passage_ids
    facts = allowed_fact_text(rows, pack)
    return ScreenReport(
        passed={
            Screen.NUMERALS: numerals_ok(reply, facts),
            Screen.PROGRAM_NAMES: program_names_ok(reply, action, program, pack, facts),
            Screen.ACTION_SLOTS: action_slots_ok(reply, action, slots, pack),
            Screen.PERSONAL_DETAILS: patterns.personal_detail.search(reply) is None,
            Screen.PROMISE_WORDS: patterns.promise.search(reply) is None,
            Screen.PLACEHOLDERS: patterns.placeholder.search(reply) is None,
        }
    )


def generation_problems(realized: RealizedReply) -> tuple[Screen, ...]:
    """Why the model's output cannot be shown whatever its wording."""
    checks = (
        (Screen.OVER_BUDGET, realized.over_budget),
        (Screen.FAILED, realized.failed),
        (Screen.TOKEN_CAP, realized.hit_token_cap),
        (Screen.NO_EOS, not realized.ended_by_eos),
    )
    return tuple(screen for screen, fired in checks if fired)


def decide(realized: RealizedReply, pack: DomainPack) -> ScreenOutcome:
    """Screen a realized reply and choose what the user sees: the reply, or the fixed fallback."""
    job = realized.job
    report = screen_reply(realized.text, job.action, job.slots, pack, job.fact_ids)
    stops = generation_problems(realized)
    fallback = bool(report.fired or stops)
    state = DialogueState.from_slots(pack.frame, job.slots)
    return ScreenOutcome(
        screens_fired=report.fired + stops,
        fallback_used=fallback,
        reply_screen=report.label,
        human_review=HumanReview.PENDING,
        final_reply=fixed_reply(job.action, state, pack) if fallback else realized.text,
        draft=Draft(
            text=realized.text,
            output_tokens=realized.output_tokens,
            ended_by_eos=realized.ended_by_eos,
            hit_token_cap=realized.hit_token_cap,
            passage_ids=job.fact_ids,
        ),
    )


def deadline_outcome(deadline: ReplyDeadline, pack: DomainPack) -> ScreenOutcome:
    """What a turn still pending at its deadline shows: the fixed fallback. No model text was screened,
    so nothing is held and no human check is pending."""
    state = DialogueState.from_slots(pack.frame, deadline.slots)
    return ScreenOutcome(
        screens_fired=(Screen.DEADLINE,),
        fallback_used=True,
        reply_screen=ReplyScreen.NOT_APPLICABLE,
        human_review=HumanReview.NOT_APPLICABLE,
        final_reply=fixed_reply(deadline.action, state, pack),
    )
