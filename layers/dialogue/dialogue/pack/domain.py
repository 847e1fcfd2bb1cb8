"""The domain pack as the core reads it: the spec and the handbook checked against each other, with the
lookups the core reads and its patterns compiled once."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, model_validator

from dialogue.actions import FIXED_ACTIONS, Action
from dialogue.pack.compiled import CompiledPatterns
from dialogue.pack.examples import INTENT, TOPIC, VALUE, ExampleSet
from dialogue.pack.formats import PackFormat
from dialogue.pack.lexicon import DeletionIndex, allowed_edits, misspells, value_words, without_vowels_key
from dialogue.pack.schema import (
    UNKNOWN,
    ActionSpec,
    DomainSpec,
    Frame,
    HandbookRow,
    Program,
    Topic,
    UnderstandingProfile,
    located,
)

if TYPE_CHECKING:
    from dialogue.linear import LinearIndex
    from dialogue.pack.spelling import Speller
    from dialogue.similarity import ExampleIndex

_ESCAPE = re.compile(r"\\.")
_PATTERN_WORD = re.compile(r"[a-z]{3,}")
_REFUSAL = re.compile(r"\(\?<?!")


def _without_refusals(pattern: str) -> str:
    """`pattern` (escapes blanked) without its negative lookarounds: "(?!\\s+(?:science|late))" names words the rule
    will not read there, which are no words of the desk's."""
    kept: list[str] = []
    at = 0
    for found in _REFUSAL.finditer(pattern):
        if found.start() < at:
            continue  # inside a refusal already dropped
        kept.append(pattern[at : found.start()])
        depth, index = 0, found.start()
        while index < len(pattern):
            depth += {"(": 1, ")": -1}.get(pattern[index], 0)
            index += 1
            if depth == 0:
                break
        at = index
    kept.append(pattern[at:])
    return " ".join(kept)


class DomainPack(BaseModel):
    """A validated domain pack, with its patterns compiled once."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    spec: DomainSpec
    handbook: tuple[HandbookRow, ...]
    # `examples.toml`, where the desk has one.
    examples: ExampleSet | None = None
    # `examples.weights.json` (a `dialogue.linear.LinearWeights`), where examples.toml says scorer = "linear";
    # typed Any so this module never imports the scorer (the realizer's image ships the pack only).
    example_weights: Any = None
    # The profile this process reads turns with: the pack's, unless the loader was told another.
    profile: UnderstandingProfile | None = None
    # How the loader read domain.toml's format: the one declared, the one read, what it defaulted.
    pack_format: PackFormat | None = None

    @property
    def understanding_profile(self) -> UnderstandingProfile:
        return self.profile or self.spec.understanding.profile

    @cached_property
    def example_index(self) -> ExampleIndex | LinearIndex | None:
        """The examples' index (the scorer examples.toml names), built on first use (a turn, or SnapStart's
        prime); None in the lesson profile or without examples."""
        if self.examples is None or self.understanding_profile is not UnderstandingProfile.DESK:
            return None
        return self.examples.build_index(self.example_weights)

    @cached_property
    def speller(self) -> Speller | None:
        """Reads a turn's misspellings of the desk's words as those words (`dialogue.pack.spelling`); None in the
        lesson profile, which reads the seed's turns as typed."""
        if self.understanding_profile is not UnderstandingProfile.DESK:
            return None
        from dialogue.pack.spelling import Speller, english

        # The pack's shorthand is the desk's too: "korse" is written out as "course", not corrected to a neighbour.
        return Speller(self.desk_words | set(self.spec.understanding.shorthand), english())

    @model_validator(mode="after")
    def _examples_name_the_pack(self) -> DomainPack:
        """Every label in examples.toml names a topic, intent or slot value of domain.toml, and every
        topic written without a pattern has examples."""
        spec, examples = self.spec, self.examples
        given = examples.topics if examples else {}
        for index, topic in enumerate(spec.topics):
            if topic.pattern is None and topic.weak_pattern is None and not given.get(topic.name):
                where = located("topics", index, "pattern")
                raise ValueError(f"{where}: a topic needs a pattern, or examples in examples.toml")
        if examples is None:
            return self
        topics = {topic.name for topic in spec.topics}
        intents = {rule.name for rule in spec.understanding.intents}
        for kind, names, known in ((TOPIC, examples.topics, topics), (INTENT, examples.intents, intents)):
            if unknown := sorted(set(names) - known):
                raise ValueError(f"examples.toml, table {kind}s: names no {kind} of domain.toml: {unknown}")
        for slot, values in examples.values.items():
            if slot not in spec.frame.slot_names:
                raise ValueError(f"examples.toml, table {VALUE}s: {slot!r} is no slot of the frame")
            if unknown := sorted(set(values) - (set(spec.frame.slot(slot).values) - {UNKNOWN})):
                raise ValueError(f"examples.toml, table {VALUE}s.{slot}: {slot} never holds {unknown}")
        return self

    @model_validator(mode="after")
    def _fact_rows_exist(self) -> DomainPack:
        known = {row.passage_id for row in self.handbook}
        if len(known) != len(self.handbook):
            raise ValueError("handbook passage ids must be unique")
        for index, rows in enumerate(self.spec.fact_rows):
            unknown = sorted(set(rows.passage_ids) - known)
            if unknown:
                where = located("fact_rows", index, "passage_ids")
                raise ValueError(f"{where}: names {unknown}, which the handbook lacks")
        for index, topic in enumerate(self.spec.topics):
            for field, passage_id in topic.all_rows():
                if passage_id not in known:
                    where = located("topics", index, field)
                    raise ValueError(f"{where}: names {passage_id}, which the handbook lacks")
        return self

    # Shortcuts the rest of the core reads.
    @property
    def frame(self) -> Frame:
        return self.spec.frame

    @property
    def program_slot(self) -> str:
        return self.spec.domain.program_slot

    @cached_property
    def actions(self) -> tuple[Action, ...]:
        """Every action of this desk: refuse, abstain, hand off, clarify, a request per slot it asks for
        (in the frame's order), confirm, inform."""
        fixed = FIXED_ACTIONS
        requests = tuple(slot.request_action for slot in self.frame.requested_slots if slot.request_action)
        return (*fixed[:4], *requests, *fixed[4:])

    @cached_property
    def model_actions(self) -> tuple[Action, ...]:
        """The actions a model words here: the requests, confirm and inform."""
        return tuple(action for action in self.actions if action.uses_model)

    def action(self, action: Action) -> ActionSpec:
        """`action`'s instruction and texts as this process's understanding profile words them."""
        return self._actions_for_profile[action]

    @cached_property
    def _actions_for_profile(self) -> Mapping[Action, ActionSpec]:
        return {action: spec.for_profile(self.understanding_profile) for action, spec in self.spec.actions.items()}

    def program(self, program_id: str) -> Program | None:
        return next((program for program in self.spec.programs if program.id == program_id), None)

    def value_label(self, slot: str, value: str) -> str:
        """How a slot's value reads to a person: its label, else a program's display name, else itself."""
        spec = self.frame.slot(slot)
        if value not in spec.value_labels and slot == self.program_slot and (program := self.program(value)):
            return program.display_name
        return spec.value_label(value)

    def program_display(self, program_id: str) -> str:
        program = self.program(program_id)
        return program.display_name if program else UNKNOWN

    @cached_property
    def passages(self) -> Mapping[str, HandbookRow]:
        return {row.passage_id: row for row in self.handbook}

    def fact_ids_for(self, action: Action, program_id: str) -> tuple[str, ...]:
        """The rows the pack's fact_rows table gives `action` for a program (confirm's, in the seed)."""
        for rows in self.spec.fact_rows:
            if rows.action == action and rows.program == program_id:
                return rows.passage_ids
        return ()

    def topic(self, name: str | None) -> Topic | None:
        return self.spec.topic(name)

    def raising_topic(self, name: str | None) -> Topic | None:
        """The topic `name` where it raises a slot (`Topic.raises`), else none: a stored `answered_topic` a pack
        change left without one reads as none."""
        topic = self.topic(name)
        return topic if topic is not None and topic.raises is not None else None

    def passage_ids_for(self, action: Action, program_id: str, topic: str | None = None) -> tuple[str, ...]:
        """The handbook rows a reply for `action` may use: an inform reply its topic's rows for the
        program, any other action the fact_rows table's. The prompt and the screens both read these."""
        if action is Action.INFORM:
            found = self.topic(topic)
            return found.rows_for(program_id) if found else ()
        return self.fact_ids_for(action, program_id)

    @cached_property
    def compiled(self) -> CompiledPatterns:
        return CompiledPatterns.from_spec(self.spec)

    @cached_property
    def value_words(self) -> Mapping[str, Mapping[str, str]]:
        """Per slot, the words of its values' own names that name one value only (`dialogue.pack.lexicon`)."""
        return value_words(self.spec)

    @cached_property
    def desk_words(self) -> frozenset[str]:
        """Every word the desk itself uses: its handbook rows, its offerings' names, and its examples of the
        topics it answers, intents and values (not those of topics it does not cover, other desks' turns or
        attacks). Normalized as turns are."""
        from dialogue.normalize import normalize
        from dialogue.similarity import WORD

        texts = [row.text for row in self.handbook]
        texts += [name for program in self.spec.programs for name in (program.display_name, program.id)]
        if self.examples is not None:
            texts += [
                text
                for label, examples in self.examples.labelled().items()
                if label.partition(":")[0] in (TOPIC, INTENT, VALUE) and not self._uncovered(label)
                for text in examples
            ]
        words = {word for text in texts for word in WORD.findall(normalize(text).replace("_", " "))}
        # The words its own rules read: a covered topic's, an intent's, a slot's and the frame's patterns (an
        # escape such as \b or \s is no letter of a word). Stems count: "eligib" of "eligib\w*".
        spec = self.spec.understanding
        patterns = [p for topic in self.spec.topics if topic.covered for p in (topic.pattern, topic.weak_pattern) if p]
        patterns += [rule.pattern for rule in spec.intents if rule.pattern]
        patterns += [rule.pattern for rule in spec.slot_rules]
        patterns += [spec.statements.frame_pattern] if spec.statements else []
        for pattern in patterns:
            words.update(_PATTERN_WORD.findall(_without_refusals(_ESCAPE.sub(" ", pattern.lower()))))
        return frozenset(words)

    @cached_property
    def desk_words_misspelt(self) -> Callable[[str], bool]:
        """Whether a word misspells one of `desk_words` (`lexicon.misspells`, within the edits the desk word allows).
        The desk words are indexed by every string they leave with the letters their edits allow deleted (SymSpell's
        index), and by their letters without vowels: a word within those edits of a desk word shares one of its own
        deletions with it, so a turn's word is compared with a handful of desk words, not all of them."""

        index = DeletionIndex(self.desk_words, allowed_edits)
        most_edits = max(map(allowed_edits, self.desk_words), default=0)
        by_consonants: dict[str, list[str]] = {}
        for word in sorted(self.desk_words):
            by_consonants.setdefault(without_vowels_key(word), []).append(word)

        def misspelt(token: str) -> bool:
            if len(token) < 5:
                return False  # `misspells` reads no shorter token
            candidates = index.near(token, most_edits)
            candidates.update(by_consonants.get(token, ()))
            return any(misspells(token, word, allowed_edits(word)) for word in candidates)

        return misspelt

    def _uncovered(self, label: str) -> bool:
        kind, _, name = label.partition(":")
        topic = self.topic(name) if kind == TOPIC else None
        return topic is not None and not topic.covered

    @cached_property
    def value_words_ruled(self) -> Mapping[str, frozenset[str]]:
        """Per slot, those of its values' words that one of its rules reads when the word stands alone:
        where the rules did not read such a word in a turn, they chose not to ("living room", "credit
        card"), and the word alone does not overrule them."""
        rules = self.compiled.slot_rules
        return {
            slot: frozenset(word for word in words if any(r.slot == slot and p.search(word) for r, p in rules))
            for slot, words in self.value_words.items()
        }
