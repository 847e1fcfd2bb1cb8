"""A pack's regular expressions, all compiled once (`CompiledPatterns.from_spec`), as the core reads them.

How each kind of pattern is checked and compiled is dialogue.pack.patterns'.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from dialogue.actions import Action
from dialogue.pack.patterns import compile_pattern, compile_understanding
from dialogue.pack.schema import DomainSpec, IntentRule, ScreenRule, SlotRule, Topic


@dataclass(frozen=True)
class CompiledDeskWords:
    """The desk profile's screen patterns, compiled once. All but `program_name` (which needs the
    reply's capitals) run on the case-folded reply, compiled as understanding patterns are (without
    IGNORECASE when written in lower case, about twice as fast)."""

    status_claim: re.Pattern[str]
    personal_question: re.Pattern[str]
    program_name: re.Pattern[str]
    date_word: re.Pattern[str]
    third_person: re.Pattern[str]
    boilerplate: re.Pattern[str]
    contact_promise: re.Pattern[str]
    time: re.Pattern[str]
    channels: Mapping[str, re.Pattern[str]]


@dataclass(frozen=True)
class CompiledAnswers:
    """The short answers' patterns (`[understanding.answers]`), compiled once."""

    yes: re.Pattern[str]
    no: re.Pattern[str]
    unsure: re.Pattern[str]
    restart: re.Pattern[str]
    itself: re.Pattern[str]
    other_offering: re.Pattern[str] | None = None
    by_place: tuple[re.Pattern[str], ...] = ()
    raised_yes: re.Pattern[str] | None = None  # none: `yes` answers a raised slot too
    pronoun: re.Pattern[str] | None = None


@dataclass(frozen=True)
class CompiledPatterns:
    """Every regular expression of a pack, compiled once."""

    injection: tuple[tuple[ScreenRule, re.Pattern[str]], ...]
    staff_only: tuple[tuple[ScreenRule, re.Pattern[str]], ...]
    benign: Mapping[str, re.Pattern[str]]
    hides_topics: frozenset[str]  # the benign exceptions whose matches hide a topic's words from a hand-off question
    intents: tuple[tuple[IntentRule, re.Pattern[str] | None], ...]
    slot_rules: tuple[tuple[SlotRule, re.Pattern[str]], ...]
    question: re.Pattern[str]
    fact_question: re.Pattern[str] | None
    frame_statement: re.Pattern[str] | None
    unrun_offering: re.Pattern[str] | None
    enrol_question: re.Pattern[str] | None
    greeting: re.Pattern[str] | None
    topics: tuple[tuple[Topic, re.Pattern[str]], ...]
    weak_topics: tuple[tuple[Topic, re.Pattern[str]], ...]  # read only where no topic's pattern matches
    negation_cue: re.Pattern[str]
    negation_after_cue: re.Pattern[str]
    scope_break: re.Pattern[str]
    double_negation: re.Pattern[str] | None
    correction_marker: re.Pattern[str]
    answers: CompiledAnswers | None
    contact_typed: re.Pattern[str] | None  # a number or an address typed into the chat ([contact])
    program_aliases: Mapping[str, re.Pattern[str]]
    any_program_alias: re.Pattern[str] | None
    required: Mapping[Action, tuple[re.Pattern[str], ...]]
    personal_detail: re.Pattern[str]
    promise: re.Pattern[str]
    placeholder: re.Pattern[str]
    desk: CompiledDeskWords | None
    shorthand: re.Pattern[str] | None = None
    written_out: Mapping[str, str] = field(default_factory=dict)

    def expand(self, text: str) -> str:
        """The normalized `text` with the pack's shorthand written out ("r u open" reads "are you open")."""
        if self.shorthand is None:
            return text
        return self.shorthand.sub(lambda found: self.written_out[found.group()], text)

    @classmethod
    def from_spec(cls, spec: DomainSpec) -> CompiledPatterns:
        rules = spec.understanding
        understanding = compile_understanding
        statements = rules.statements

        def optional(text: str | None) -> re.Pattern[str] | None:
            return understanding(text) if text else None

        return cls(
            injection=tuple((rule, understanding(rule.pattern)) for rule in rules.injection_rules),
            staff_only=tuple((rule, understanding(rule.pattern)) for rule in rules.staff_only_rules),
            benign={exception.name: understanding(exception.pattern) for exception in rules.benign_exceptions},
            hides_topics=frozenset(exception.name for exception in rules.benign_exceptions if exception.hides_topics),
            intents=tuple((rule, optional(rule.pattern)) for rule in rules.intents),
            slot_rules=tuple((rule, understanding(rule.pattern)) for rule in rules.slot_rules),
            question=understanding(rules.questions.pattern),
            fact_question=optional(rules.questions.fact_pattern),
            frame_statement=optional(statements.frame_pattern if statements else None),
            enrol_question=optional(statements.enrol_question_pattern if statements else None),
            unrun_offering=optional(statements.unrun_offering_pattern if statements else None),
            greeting=optional(statements.greeting_pattern if statements else None),
            topics=tuple((topic, understanding(topic.pattern)) for topic in spec.topics if topic.pattern),
            weak_topics=tuple((t, understanding(t.weak_pattern)) for t in spec.topics if t.weak_pattern),
            negation_cue=understanding(rules.negation.cue_pattern),
            negation_after_cue=understanding(rules.negation.after_cue_pattern),
            scope_break=understanding(rules.negation.scope_break_pattern),
            double_negation=optional(rules.negation.double_negation_pattern),
            correction_marker=understanding(rules.corrections.marker_pattern),
            answers=CompiledAnswers(
                yes=understanding(rules.answers.yes_pattern),
                no=understanding(rules.answers.no_pattern),
                unsure=understanding(rules.answers.unsure_pattern),
                restart=understanding(rules.answers.restart_pattern),
                itself=understanding(rules.answers.self_pattern),
                other_offering=optional(rules.answers.other_offering_pattern),
                by_place=tuple(understanding(text) for text in rules.answers.offering_by_place_patterns),
                raised_yes=optional(rules.answers.raised_yes_pattern),
                pronoun=optional(rules.answers.pronoun_pattern),
            )
            if rules.answers
            else None,
            contact_typed=understanding(spec.contact.typed_pattern) if spec.contact else None,
            program_aliases={program.id: compile_pattern(program.reply_alias_pattern) for program in spec.programs},
            any_program_alias=_any_of([program.reply_alias_pattern for program in spec.programs]),
            required={
                action: tuple(compile_pattern(pattern) for pattern in action_spec.required_patterns)
                for action, action_spec in spec.actions.items()
            },
            personal_detail=compile_pattern(spec.screens.personal_detail_pattern),
            promise=compile_pattern(spec.screens.promise_pattern),
            placeholder=compile_pattern(spec.screens.placeholder_pattern),
            desk=_desk_words(spec),
            shorthand=_shorthand(rules.shorthand),
            written_out=dict(rules.shorthand),
        )


def _shorthand(table: Mapping[str, str]) -> re.Pattern[str] | None:
    """One pattern for every shorthand word, standing alone (not inside "you'll" or "pls2"), longest first."""
    if not table:
        return None
    words = sorted(table, key=len, reverse=True)
    return re.compile(r"(?<![\w'])(?:" + "|".join(re.escape(word) for word in words) + r")(?![\w'])")


def _any_of(patterns: list[str]) -> re.Pattern[str] | None:
    """One IGNORECASE pattern matching where any of `patterns` does (one scan instead of one per
    pattern), or None where they cannot be joined (a pattern with global flags such as (?x))."""
    try:
        return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)
    except re.error:
        return None


def _desk_words(spec: DomainSpec) -> CompiledDeskWords | None:
    words = spec.screens.desk
    if words is None:
        return None
    folded = compile_understanding  # for case-folded text
    return CompiledDeskWords(
        status_claim=folded(words.status_claim_pattern),
        personal_question=folded(words.personal_question_pattern),
        program_name=compile_pattern(words.program_name_pattern),
        date_word=folded(words.date_word_pattern),
        third_person=folded(words.third_person_pattern),
        boilerplate=folded(words.boilerplate_pattern),
        contact_promise=folded(words.contact_promise_pattern),
        time=folded(words.time_pattern),
        channels={value: compile_understanding(pattern) for value, pattern in words.channel_patterns.items()},
    )
