"""Screens on generated replies, and the fixed-fallback rule.

Two profiles of content screens. The lesson's (the seed's six): numerals absent from the selected
facts, program names other than the state's, missing action slots, personal-detail requests, promise
words, bracketed placeholders. The desk's: those six and eight more, each a small pure function on the
pack's words (`[screens.desk]`): status claims the desk cannot make, personal questions in other words,
program or service names the pack does not know, day and date words absent from the selected facts,
wording that addresses staff or a third person, a request that asks the resident nothing,
boilerplate that does not belong at a desk, and contact promises with a time or another channel.
Wording the selected handbook rows themselves use is the handbook's, and passes.

Every screen reads the reply as a resident reads it, not as its characters are written: normalized
by `dialogue.normalize.normalize_reply` (NFKC, typographic quotes, apostrophes and dashes made plain,
invisible characters gone, Cyrillic and Greek look-alikes made Latin, whitespace collapsed), so
"You\\u2019re enrolled" is held like "You're enrolled". The lesson's screens, the placeholder, the
required patterns, the program aliases and the confirm's slot checks read that form with its letter
case; the desk's word screens read it case-folded (`normalize`, as understanding reads a turn); the
unknown-program screen, which needs capitals, reads a reply with no lower-case letter in title case
(`names_text`), so that "THE WELDING CERTIFICATE" reads "The Welding Certificate". The handbook rows
the reply is checked against are read the same way. The resident is shown the reply as the model
wrote it.

Generation checks: the model hit its token cap, never emitted EOS, failed, or the prompt was over
budget. Any of these shows the fixed fallback; only a content screen labels the reply
"held for human review". Which replies then wait for a person's check is dialogue.human_checks': in the
lesson profile every generated reply's human check is "pending"; at a desk a reply shown as the fallback
always is, and a reply shown as drafted is drawn at the desk's rate.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

from dialogue.actions import Action, HumanReview, ReplyScreen, Screen, ScreenProfile
from dialogue.human_checks import Draw, human_review
from dialogue.normalize import normalize, normalize_reply
from dialogue.pack import DomainPack, SlotSpec
from dialogue.pack.compiled import CompiledDeskWords
from dialogue.realize import RealizedReply, ReplyDeadline
from dialogue.records import Draft, ScreenOutcome
from dialogue.replies import cold_reply_line, fixed_reply, generic_fallback, outlives_pack, turn_fallback
from dialogue.state import DialogueState

_NUMERAL = re.compile(r"\b\d+\b")
_DIGIT = re.compile(r"\d")


class ScreenReport(NamedTuple):
    """Which content screens of a profile passed (True) or fired (False) on one reply."""

    screens: tuple[Screen, ...]
    results: tuple[bool, ...]
    fired: tuple[Screen, ...]

    @classmethod
    def of(cls, screens: tuple[Screen, ...], results: Sequence[bool]) -> ScreenReport:
        return cls(screens, tuple(results), tuple(name for name, ok in zip(screens, results, strict=True) if not ok))

    @property
    def passed(self) -> dict[Screen, bool]:
        return dict(zip(self.screens, self.results, strict=True))

    @property
    def label(self) -> ReplyScreen:
        return ReplyScreen.HELD if self.fired else ReplyScreen.NOT_FLAGGED


def allowed_fact_text(passage_ids: Sequence[str], pack: DomainPack) -> str:
    """The text of the handbook rows the prompt held, joined: the only source of numerals."""
    return " ".join(pack.passages[passage_id].text for passage_id in passage_ids if passage_id in pack.passages)


_CAPITALS = re.compile(r"[A-Z][A-Z'-]*")


def names_text(text: str) -> str:
    """The text the unknown-program screen reads: `text`, or, where it has no lower-case letter (a reply
    in capitals), each word capitalized ("WELDING" reads "Welding", "YOU'RE" "You're"), so that its
    names read as in sentence case. Only letter case changes: the reply's words stay the same. A name
    in capitals inside a reply in sentence case is read as written (a check on every word would cost
    every reply about a microsecond, where `isupper` costs a few hundredths)."""
    return _CAPITALS.sub(lambda word: word[0].capitalize(), text) if text.isupper() else text


@lru_cache(maxsize=512)
def _numerals(text: str) -> frozenset[str]:
    """The numerals of the selected rows' text: a few rows, reused by every reply they prompt."""
    return frozenset(_NUMERAL.findall(text))


def numerals_ok(reply: str, allowed_text: str) -> bool:
    if _DIGIT.search(reply) is None:  # found at once, where the numeral pattern tries every word
        return True
    numbers = _NUMERAL.findall(reply)
    return not numbers or _numerals(allowed_text).issuperset(numbers)


def program_names_ok(reply: str, action: Action, program: str, pack: DomainPack, allowed_text: str = "") -> bool:
    """A reply may name only the state's program, or a program the rows its prompt held name (a row
    listing the programs offered); a reply asking for the program may name any."""
    if action is pack.frame.slot(pack.program_slot).request_action:
        return True
    lowered, allowed = reply.casefold(), allowed_text.casefold()
    mentioned = [p for p in pack.spec.programs if p.display_name.casefold() in lowered]
    return all(p.id == program or p.display_name.casefold() in allowed for p in mentioned)


def _names_of(spec: SlotSpec, value: str) -> tuple[str, ...]:
    """What a reply may call a slot's value: the value itself, or its label where the pack gives one."""
    label = spec.value_labels.get(value)
    return (value, label) if label else (value,)


def _says(reply: str, name: str) -> bool:
    """Whether the reply says `name` as a whole word or words, in any case (a plural "s" allowed):
    "no" is not said by "noted", "bag" is by "bags"; an identifier's underscores may be spaces."""
    words = r"[\s_-]+".join(re.escape(word) for word in name.replace("_", " ").split())
    return re.search(rf"(?<!\w){words}s?(?!\w)", reply, re.IGNORECASE) is not None


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
        elif not any(_says(reply, name) for name in _names_of(pack.frame.slot(slot), value)):
            return False
    return True


def folded_reply(text: str) -> str:
    """`text`, a reply in `normalize_reply`'s form, case-folded as `normalize` folds it."""
    return text.lower() if text.isascii() else normalize(text)  # for ASCII text in this form, the same


def _beyond(pattern: re.Pattern[str], folded: str, facts: str) -> bool:
    """Whether `pattern` finds, in the case-folded reply, wording that the (case-folded) facts do not hold."""
    for match in pattern.finditer(folded):  # noqa: SIM110 - no generator on the fast path
        if match.group(0) not in facts:
            return True
    return False


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


def unknown_programs_ok(text: str, words: CompiledDeskWords, pack: DomainPack, facts: str) -> bool:
    """Every program- or service-like name (in the reply with its capitals, as `names_text` reads them)
    is one of the pack's, by a reply alias, or one the facts name."""
    joined, aliases = pack.compiled.any_program_alias, pack.compiled.program_aliases.values()
    for match in words.program_name.finditer(names_text(text)):
        name = match.group(0)
        known = joined.search(name) if joined is not None else any(alias.search(name) for alias in aliases)
        if not known and name.casefold() not in facts:
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
    return "?" in folded or action not in pack.frame.request_actions


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
    """Run every content screen of `profile` on one generated reply, read normalized (see the module's
    note). `passage_ids` are the rows its prompt held (the job's); without them, the rows the pack
    gives the action and program outside any topic."""
    program = slots[pack.program_slot]
    patterns = pack.compiled
    rows = pack.passage_ids_for(action, program) if passage_ids is None else passage_ids
    facts, folded_facts = _facts(pack, tuple(rows))
    desk = profile is ScreenProfile.DESK
    text = normalize_reply(reply)
    results = [
        numerals_ok(text, facts),
        program_names_ok(text, action, program, pack, facts),
        action_slots_ok(text, action, slots, pack),
        patterns.personal_detail.search(text) is None,
        patterns.promise.search(text) is None,
        patterns.placeholder.search(text) is None,
    ]
    if desk:
        words, spec = patterns.desk, pack.spec.screens.desk
        if words is None or spec is None:
            raise ValueError("this pack has no [screens.desk] words, so only the lesson profile can run")
        channel = slots.get(spec.contact_slot, "") if spec.contact_slot else ""
        folded = folded_reply(text)
        results += (
            status_claims_ok(folded, words, folded_facts),
            personal_questions_ok(folded, words, folded_facts),
            unknown_programs_ok(text, words, pack, folded_facts),
            date_words_ok(folded, words, folded_facts),
            third_person_ok(folded, words, folded_facts),
            request_asks_ok(folded, action, pack),
            boilerplate_ok(folded, words),
            contact_promises_ok(folded, words, channel, folded_facts),
        )
    return ScreenReport.of(profile.screens, results)


def generation_problems(realized: RealizedReply) -> tuple[Screen, ...]:
    """Why the model's output cannot be shown whatever its wording."""
    if not (realized.over_budget or realized.failed or realized.hit_token_cap) and realized.ended_by_eos:
        return ()
    checks = (
        (Screen.OVER_BUDGET, realized.over_budget),
        (Screen.FAILED, realized.failed),
        (Screen.TOKEN_CAP, realized.hit_token_cap),
        (Screen.NO_EOS, not realized.ended_by_eos),
    )
    return tuple(screen for screen, fired in checks if fired)


def decide(
    realized: RealizedReply, pack: DomainPack, profile: ScreenProfile | None = None, draw: Draw | None = None
) -> ScreenOutcome:
    """Screen a realized reply with `profile` (default: the pack's) and choose what the user sees: the
    reply, or the fixed fallback; and whether it waits for a person's check (dialogue.human_checks, with
    `draw` for the random source, default the installed one).

    A reply worded for a turn that has outlived the pack (a deploy between its job and its reply took its
    action or slot values: `dialogue.replies.outlives_pack`) cannot be screened by this pack, so it is not
    shown: the resident gets the desk's generic fallback, as from the turn's deadline; no content screen ran,
    so nothing is labelled held, and, as for every fallback shown, the draft waits for a person's check."""
    job = realized.job
    profile = profile or pack.spec.screens.profile
    if _outlives(pack, job.action, tuple(job.slots.items())):
        return ScreenOutcome(
            screens_fired=generation_problems(realized),
            fallback_used=True,
            reply_screen=ReplyScreen.NOT_APPLICABLE,
            human_review=human_review(fallback_used=True, profile=profile, rate=0.0),
            final_reply=generic_fallback(pack),
            draft=_draft(realized),
        )
    report = screen_reply(realized.text, job.action, job.slots, pack, job.fact_ids, profile)
    fired = report.fired + generation_problems(realized)
    final_reply = _fallback(pack, job.action, tuple(job.slots.items())) if fired else realized.text
    return ScreenOutcome(
        screens_fired=fired,
        fallback_used=bool(fired),
        reply_screen=report.label,
        human_review=human_review(
            fallback_used=bool(fired), profile=profile, rate=pack.spec.staff.shown_check_rate, source=draw
        ),
        final_reply=final_reply,
        draft=_draft(realized),
    )


def _draft(realized: RealizedReply) -> Draft:
    """What the model wrote, as the turn keeps it for staff."""
    return Draft(
        text=realized.text,
        output_tokens=realized.output_tokens,
        ended_by_eos=realized.ended_by_eos,
        hit_token_cap=realized.hit_token_cap,
        passage_ids=realized.job.fact_ids,
    )


class _PackByIdentity:
    """A pack as a cache key by identity: hashing a pack's fields would cost more than the reply."""

    __slots__ = ("pack",)

    def __init__(self, pack: DomainPack) -> None:
        self.pack = pack

    def __hash__(self) -> int:
        return id(self.pack)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _PackByIdentity) and other.pack is self.pack


def _facts(pack: DomainPack, rows: tuple[str, ...]) -> tuple[str, str]:
    """The selected rows' text, read as the reply is: normalized with its case, and case-folded. A few
    rows, shared by many replies."""
    return _cached_facts(_PackByIdentity(pack), rows)


@lru_cache(maxsize=512)
def _cached_facts(key: _PackByIdentity, rows: tuple[str, ...]) -> tuple[str, str]:
    facts = normalize_reply(allowed_fact_text(rows, key.pack))
    return facts, normalize(facts)


def _outlives(pack: DomainPack, action: Action, slots: tuple[tuple[str, str], ...]) -> bool:
    """`dialogue.replies.outlives_pack`, cached per job's action and slots (reading the slots under the frame
    costs about 20 µs, a quarter of a reply's screening)."""
    return _cached_outlives(_PackByIdentity(pack), action, slots)


@lru_cache(maxsize=1024)
def _cached_outlives(key: _PackByIdentity, action: Action, slots: tuple[tuple[str, str], ...]) -> bool:
    return outlives_pack(action, dict(slots), key.pack)


def _fallback(pack: DomainPack, action: Action, slots: tuple[tuple[str, str], ...]) -> str:
    """The fixed text for `action` in the job's state (checked against the frame), the same each time."""
    return _cached_fallback(_PackByIdentity(pack), action, slots)


@lru_cache(maxsize=1024)
def _cached_fallback(key: _PackByIdentity, action: Action, slots: tuple[tuple[str, str], ...]) -> str:
    return fixed_reply(action, DialogueState.read_stored(key.pack.frame, dict(slots))[0], key.pack)


def deadline_outcome(deadline: ReplyDeadline, pack: DomainPack) -> ScreenOutcome:
    """What a turn still pending at its deadline shows: the fixed fallback. No model text was screened,
    so nothing is held and no human check is pending. A turn that has outlived the pack (its action gone,
    or slots a pack change no longer allows) gets the desk's generic fallback (`dialogue.replies.turn_fallback`),
    so a deadline always ends its turn.

    A deadline the dispatch function sent seconds after its turn, because the realizer was cold
    (`realizer_cold`), adds the desk's line that a person will check the reply (`cold_reply_line`), and
    holds the turn for that check: its human check is pending, with the fallback as the draft the staff
    review, so it enters the review queue."""
    fallback = turn_fallback(deadline.action, deadline.slots, pack)
    if deadline.realizer_cold:
        return ScreenOutcome(
            screens_fired=(Screen.DEADLINE,),
            fallback_used=True,
            reply_screen=ReplyScreen.NOT_APPLICABLE,
            human_review=HumanReview.PENDING,
            final_reply=f"{fallback} {cold_reply_line(pack)}",
            draft=Draft(text=fallback, ended_by_eos=False, hit_token_cap=False),
        )
    return ScreenOutcome(
        screens_fired=(Screen.DEADLINE,),
        fallback_used=True,
        reply_screen=ReplyScreen.NOT_APPLICABLE,
        human_review=HumanReview.NOT_APPLICABLE,
        final_reply=fallback,
    )
