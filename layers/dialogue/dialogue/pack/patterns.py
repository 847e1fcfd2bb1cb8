"""A pack's regular expressions: how each kind is checked at load, and all of them compiled once.

Understanding patterns are matched against `dialogue.normalize.normalize(text)` (NFKC-folded,
case-folded, invisible characters gone); the reply screens, program aliases and required patterns run
on a generated reply normalized with its letter case kept (`dialogue.normalize.normalize_reply`), and
the desk's word screens on that case-folded (`normalize` of it): see `dialogue.screens`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, StringConstraints

from dialogue.pack.word_gate import GatedPattern, GateIndex

if TYPE_CHECKING:
    from dialogue.actions import Action
    from dialogue.pack.schema import DomainSpec, IntentRule, ScreenRule, SlotRule, Topic

NonEmptyText = Annotated[str, StringConstraints(min_length=1, strip_whitespace=True)]


def compile_pattern(pattern: str, flags: re.RegexFlag = re.IGNORECASE) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as error:
        raise ValueError(f"invalid regular expression: {error}") from None


# Escapes that name a character by its number (\x41, \u0041, \N{...}, octal) or refer back to a group.
_NUMBERED_ESCAPE = re.compile(r"\\(?:[xuUN0-9])")


def compile_understanding(pattern: str) -> re.Pattern[str]:
    """An understanding pattern, for matching against `normalize(text)`, which is case-folded.

    Written in lower case, with no escape that names a character by number, a pattern matches
    normalized text the same with or without IGNORECASE: the text's only letters that IGNORECASE
    equates with a lower-case ASCII letter are that letter itself (see `dialogue.normalize`). It is
    compiled without it, which lets Python's re skip ahead on literal characters (about twice as
    fast). Any other pattern keeps IGNORECASE.
    """
    if pattern.isascii() and not any(char.isupper() for char in pattern) and not _NUMBERED_ESCAPE.search(pattern):
        return compile_pattern(pattern, re.NOFLAG)
    return compile_pattern(pattern)


def gated_reply_pattern(pattern: str, gates: GateIndex) -> GatedPattern:
    """A reply screen's pattern for the reply normalized with its case kept (IGNORECASE), with its word
    gate for replies that are ASCII in that form."""
    return gates.add(compile_pattern(pattern), folded_text=False)


# Texts on which an understanding pattern must not match zero characters: one that can would fire on
# every turn (or mark every position a negation cue), which is never what its author meant.
_EMPTY_MATCH_PROBES = ("", "x", "x y, z. ")


def _valid_pattern(pattern: str) -> str:
    compile_pattern(pattern)
    return pattern


def _valid_understanding_pattern(pattern: str) -> str:
    # Compiled as it will run, so `CompiledPatterns` later finds it in re's cache.
    compiled = compile_understanding(pattern)
    for probe in _EMPTY_MATCH_PROBES:
        if any(match.end() == match.start() for match in compiled.finditer(probe)):
            raise ValueError("pattern can match empty text, so it would fire on every turn")
    return pattern


PatternText = Annotated[NonEmptyText, AfterValidator(_valid_pattern)]
"""A regular expression that compiles (reply screens, aliases, required patterns)."""

UnderstandingPatternText = Annotated[NonEmptyText, AfterValidator(_valid_understanding_pattern)]
"""An understanding pattern: compiles, and can never match empty text."""


@dataclass(frozen=True)
class CompiledDeskWords:
    """The desk profile's screen patterns, compiled once. All but `program_name` (which needs the
    reply's capitals) run on the case-folded reply, compiled as understanding patterns are (without
    IGNORECASE when written in lower case, about twice as fast) and each with its word gate, which
    skips the scan when the pack's one RE2 pass over the reply finds the pattern cannot match there."""

    status_claim: GatedPattern
    personal_question: GatedPattern
    program_name: GatedPattern
    date_word: GatedPattern
    third_person: GatedPattern
    boilerplate: GatedPattern
    contact_promise: GatedPattern
    time: GatedPattern
    channels: Mapping[str, re.Pattern[str]]


@dataclass(frozen=True)
class CompiledPatterns:
    """Every regular expression of a pack, compiled once."""

    injection: tuple[tuple[ScreenRule, re.Pattern[str]], ...]
    staff_only: tuple[tuple[ScreenRule, re.Pattern[str]], ...]
    benign: Mapping[str, re.Pattern[str]]
    intents: tuple[tuple[IntentRule, re.Pattern[str] | None], ...]
    slot_rules: tuple[tuple[SlotRule, re.Pattern[str]], ...]
    question: re.Pattern[str]
    frame_statement: re.Pattern[str] | None
    topics: tuple[tuple[Topic, re.Pattern[str]], ...]
    negation_cue: re.Pattern[str]
    negation_after_cue: re.Pattern[str]
    scope_break: re.Pattern[str]
    correction_marker: re.Pattern[str]
    program_aliases: Mapping[str, re.Pattern[str]]
    any_program_alias: re.Pattern[str] | None
    required: Mapping[Action, tuple[re.Pattern[str], ...]]
    personal_detail: GatedPattern
    promise: GatedPattern
    placeholder: re.Pattern[str]
    desk: CompiledDeskWords | None
    gates: GateIndex

    def __post_init__(self) -> None:
        self.gates.build()  # every gate is added: compile them once, here, rather than on the first reply

    @classmethod
    def from_spec(cls, spec: DomainSpec) -> CompiledPatterns:
        rules = spec.understanding
        understanding = compile_understanding
        gates = GateIndex()
        return cls(
            injection=tuple((rule, understanding(rule.pattern)) for rule in rules.injection_rules),
            staff_only=tuple((rule, understanding(rule.pattern)) for rule in rules.staff_only_rules),
            benign={exception.name: understanding(exception.pattern) for exception in rules.benign_exceptions},
            intents=tuple((rule, understanding(rule.pattern) if rule.pattern else None) for rule in rules.intents),
            slot_rules=tuple((rule, understanding(rule.pattern)) for rule in rules.slot_rules),
            question=understanding(rules.questions.pattern),
            frame_statement=understanding(rules.statements.frame_pattern) if rules.statements else None,
            topics=tuple((topic, understanding(topic.pattern)) for topic in spec.topics if topic.pattern),
            negation_cue=understanding(rules.negation.cue_pattern),
            negation_after_cue=understanding(rules.negation.after_cue_pattern),
            scope_break=understanding(rules.negation.scope_break_pattern),
            correction_marker=understanding(rules.corrections.marker_pattern),
            program_aliases={program.id: compile_pattern(program.reply_alias_pattern) for program in spec.programs},
            any_program_alias=_any_of([program.reply_alias_pattern for program in spec.programs]),
            required={
                action: tuple(compile_pattern(pattern) for pattern in action_spec.required_patterns)
                for action, action_spec in spec.actions.items()
            },
            personal_detail=gated_reply_pattern(spec.screens.personal_detail_pattern, gates),
            promise=gated_reply_pattern(spec.screens.promise_pattern, gates),
            placeholder=compile_pattern(spec.screens.placeholder_pattern),
            desk=_desk_words(spec, gates),
            gates=gates,
        )


def _any_of(patterns: list[str]) -> re.Pattern[str] | None:
    """One IGNORECASE pattern matching where any of `patterns` does (one scan instead of one per
    pattern), or None where they cannot be joined (a pattern with global flags such as (?x))."""
    try:
        return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)
    except re.error:
        return None


def _desk_words(spec: DomainSpec, gates: GateIndex) -> CompiledDeskWords | None:
    words = spec.screens.desk
    if words is None:
        return None

    def folded(pattern: str) -> GatedPattern:  # for case-folded text
        return gates.add(compile_understanding(pattern), folded_text=True)

    return CompiledDeskWords(
        status_claim=folded(words.status_claim_pattern),
        personal_question=folded(words.personal_question_pattern),
        program_name=gated_reply_pattern(words.program_name_pattern, gates),
        date_word=folded(words.date_word_pattern),
        third_person=folded(words.third_person_pattern),
        boilerplate=folded(words.boilerplate_pattern),
        contact_promise=folded(words.contact_promise_pattern),
        time=folded(words.time_pattern),
        channels={value: compile_understanding(pattern) for value, pattern in words.channel_patterns.items()},
    )
