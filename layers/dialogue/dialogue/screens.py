"""Screens on generated replies, and the fixed-fallback rule.

Two profiles of content screens. The lesson's (the seed's six): numerals absent from the selected
facts, program names other than the state's, missing action slots, personal-detail requests, promise
words, bracketed placeholders. The desk's: those six and eight more, each a small pure function on the
pack's words (`[screens.desk]`): status claims the desk cannot make, personal questions in other words,
program or service names the pack does not know, day and date words absent from the selected facts,
wording that addresses staff or a third person, a request that asks the resident nothing,
boilerplate that does not belong at a desk, and contact promises with a time or another channel.
Wording the selected handbook rows themselves use is the handbook's, and passes.
Generation checks: the model hit its token cap, never emitted EOS, failed, or the prompt was over
budget. Any of these shows the fixed fallback; only a content screen labels the reply
"held for human review". Every generated reply's human check stays "pending".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from pydantic import BaseModel, ConfigDict

from dialogue.actions import Action, HumanReview, ReplyScreen, Screen, ScreenProfile
from dialogue.pack import DomainPack
from dialogue.pack.patterns import CompiledDeskWords
from dialogue.realize import RealizedReply, ReplyDeadline
from dialogue.records import Draft, ScreenOutcome
from dialogue.replies import fixed_reply
from dialogue.state import DialogueState

_NUMERAL = re.compile(r"\b\d+\b")


class ScreenReport(BaseModel):
    """Which content screens of a profile passed (True) or fired (False) on one reply."""

    model_config = ConfigDict(frozen=True)

    passed: dict[Screen, bool]

    @property
    def fired(self) -> tuple[Screen, ...]:
        return tuple(name for name, passed in self.passed.items() if not passed)

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


def _beyond(pattern: re.Pattern[str], folded: str, facts: str) -> bool:
    """Whether `pattern` finds, in the case-folded reply, wording that the (case-folded) facts do not hold."""
    return any(match.group(0) not in facts for match in pattern.finditer(folded))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z]+")


@lru_cache(maxsize=512)
def _fact_words(facts: str) -> frozenset[str]:
    """The facts' words, each without a plural s ("saturdays" counts as "saturday"): a few rows, reused."""
    return frozenset(word.removesuffix("s") for word in _WORD.findall(facts))


# Each screen below takes the reply case-folded (`folded`) and the selected rows' text case-folded
# (`facts`), and says whether the reply passes.


def status_claims_ok(folded: str, words: CompiledDeskWords, facts: str) -> bool:
    """No claim the desk cannot make: enrolled, registered, a confirmed or reserved seat, all set."""
    return not _beyond(words.status_claim, folded, facts)


def personal_questions_ok(folded: str, words: CompiledDeskWords, facts: str) -> bool:
    """No request for personal details in other words: how old, date of birth, where you live."""
    return not _beyond(words.personal_question, folded, facts)


def unknown_programs_ok(reply: str, words: CompiledDeskWords, pack: DomainPack, facts: str) -> bool:
    """Every program- or service-like name (in the reply as written: capitals count) is one of the pack's,
    by a reply alias, or one the facts name."""
    aliases = pack.compiled.program_aliases.values()
    for match in words.program_name.finditer(reply):
        name = match.group(0)
        if not any(alias.search(name) for alias in aliases) and name.casefold() not in facts:
            return False
    return True


def date_words_ok(folded: str, words: CompiledDeskWords, facts: str) -> bool:
    """Every day, month or relative date word is one the selected facts hold ("mondays" for "monday")."""
    allowed = None
    for match in words.date_word.finditer(folded):
        allowed = allowed if allowed is not None else _fact_words(facts)
        if not all(word.removesuffix("s") in allowed for word in _WORD.findall(match.group(0))):
            return False
    return True


def third_person_ok(folded: str, words: CompiledDeskWords, facts: str) -> bool:
    """The reply speaks to the resident, not about "the person" or "the applicant", nor to staff."""
    return not _beyond(words.third_person, folded, facts)


def request_asks_ok(folded: str, action: Action, pack: DomainPack) -> bool:
    """A request for a slot asks the resident something: it holds a question."""
    return "?" in folded or action not in {slot.request_action for slot in pack.frame.requested_slots}


def boilerplate_ok(folded: str, words: CompiledDeskWords) -> bool:
    """No condolences, apologies for a loss or "as an AI": wording that does not belong at a desk."""
    return words.boilerplate.search(folded) is None


def contact_promises_ok(folded: str, words: CompiledDeskWords, channel: str, facts: str) -> bool:
    """A promise to contact the resident names no time and no channel but the chosen one.

    A sentence that names every channel offers the choice rather than promising one."""
    if words.contact_promise.search(folded) is None:
        return True
    for sentence in _SENTENCE_END.split(folded):
        if not words.contact_promise.search(sentence):
            continue
        if _beyond(words.time, sentence, facts) or not date_words_ok(sentence, words, facts):
            return False
        named = {value for value, pattern in words.channels.items() if pattern.search(sentence)}
        if named and named != {channel} and named != set(words.channels):
            return False
    return True


def screen_reply(
    reply: str,
    action: Action,
    slots: Mapping[str, str],
    pack: DomainPack,
    passage_ids: Sequence[str] | None = None,
    profile: ScreenProfile = ScreenProfile.LESSON,
) -> ScreenReport:
    """Run every content screen of `profile` on one generated reply. `passage_ids` are the rows its
    prompt held (the job's); without them, the rows the pack gives the action and program outside any
    topic."""
    program = slots[pack.program_slot]
    patterns = pack.compiled
    rows = pack.passage_ids_for(action, program) if passage_ids is None else passage_ids
    facts = allowed_fact_text(rows, pack)
    passed = {
        Screen.NUMERALS: numerals_ok(reply, facts),
        Screen.PROGRAM_NAMES: program_names_ok(reply, action, program, pack, facts),
        Screen.ACTION_SLOTS: action_slots_ok(reply, action, slots, pack),
        Screen.PERSONAL_DETAILS: patterns.personal_detail.search(reply) is None,
        Screen.PROMISE_WORDS: patterns.promise.search(reply) is None,
        Screen.PLACEHOLDERS: patterns.placeholder.search(reply) is None,
    }
    if profile is ScreenProfile.DESK:
        words, spec = patterns.desk, pack.spec.screens.desk
        if words is None or spec is None:
            raise ValueError("this pack has no [screens.desk] words, so only the lesson profile can run")
        folded, folded_facts = reply.casefold(), facts.casefold()
        channel = slots.get(spec.contact_slot, "")
        passed |= {
            Screen.STATUS_CLAIMS: status_claims_ok(folded, words, folded_facts),
            Screen.PERSONAL_QUESTIONS: personal_questions_ok(folded, words, folded_facts),
            Screen.UNKNOWN_PROGRAMS: unknown_programs_ok(reply, words, pack, folded_facts),
            Screen.DATE_WORDS: date_words_ok(folded, words, folded_facts),
            Screen.THIRD_PERSON: third_person_ok(folded, words, folded_facts),
            Screen.REQUEST_ASKS: request_asks_ok(folded, action, pack),
            Screen.BOILERPLATE: boilerplate_ok(folded, words),
            Screen.CONTACT_PROMISES: contact_promises_ok(folded, words, channel, folded_facts),
        }
    return ScreenReport(passed=passed)


def generation_problems(realized: RealizedReply) -> tuple[Screen, ...]:
    """Why the model's output cannot be shown whatever its wording."""
    checks = (
        (Screen.OVER_BUDGET, realized.over_budget),
        (Screen.FAILED, realized.failed),
        (Screen.TOKEN_CAP, realized.hit_token_cap),
        (Screen.NO_EOS, not realized.ended_by_eos),
    )
    return tuple(screen for screen, fired in checks if fired)


def decide(realized: RealizedReply, pack: DomainPack, profile: ScreenProfile | None = None) -> ScreenOutcome:
    """Screen a realized reply with `profile` (default: the pack's) and choose what the user sees: the
    reply, or the fixed fallback."""
    job = realized.job
    profile = profile or pack.spec.screens.profile
    report = screen_reply(realized.text, job.action, job.slots, pack, job.fact_ids, profile)
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
