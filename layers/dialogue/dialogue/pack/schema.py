"""The domain pack's schema: the frame, programs, rules, actions, facts and handbook, as pydantic models.

`DomainSpec` is `domain.toml`; `HandbookRow` a row of `handbook.csv`; `DomainPack` both, checked
against each other, with the lookups the core reads and its patterns compiled once.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from dialogue.actions import Action
from dialogue.pack.patterns import CompiledPatterns, NonEmptyText, PatternText, UnderstandingPatternText

UNKNOWN = "unknown"

Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=40)]
PassageId = Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z0-9_-]{0,15}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SlotSpec(_Strict):
    name: Identifier
    values: tuple[Identifier, ...]
    why_kept: NonEmptyText
    request_action: Action | None = None
    label: NonEmptyText
    record_label: NonEmptyText | None = None

    @property
    def retained_label(self) -> str:
        """The slot's column heading in the retained record."""
        return self.record_label or self.label

    @field_validator("values")
    @classmethod
    def _includes_unknown(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        if UNKNOWN not in values:
            raise ValueError(f"every slot must allow {UNKNOWN!r}")
        if len(set(values)) != len(values):
            raise ValueError("slot values must be distinct")
        return values


class Frame(_Strict):
    slots: tuple[SlotSpec, ...] = Field(min_length=1)

    def slot(self, name: str) -> SlotSpec:
        for spec in self.slots:
            if spec.name == name:
                return spec
        raise KeyError(name)

    @property
    def slot_names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.slots)

    @property
    def requested_slots(self) -> tuple[SlotSpec, ...]:
        """The slots the policy asks for, in the order it asks."""
        return tuple(spec for spec in self.slots if spec.request_action is not None)


class Program(_Strict):
    id: Identifier
    display_name: NonEmptyText
    reply_alias_pattern: PatternText


IntentRoute = Literal["abstain", "hand_off", "inform", "enroll"]
"""Where an intent sends the policy; `dialogue.policy` reads it."""


class IntentRule(_Strict):
    name: Identifier
    route: IntentRoute
    pattern: UnderstandingPatternText | None = None


class ScreenRule(_Strict):
    """One way of asking for something the assistant must refuse; its name says which, never the text."""

    name: Identifier
    pattern: UnderstandingPatternText


class SlotRule(_Strict):
    """A mention of a slot value. A negated mention sets `negated_value`, or nothing when that is unset."""

    slot: Identifier
    value: Identifier
    pattern: UnderstandingPatternText
    negated_value: Identifier | None = None


class NegationRules(_Strict):
    """When a mention is negated: a cue shortly before it or an after-cue shortly after, in one clause."""

    cue_pattern: UnderstandingPatternText
    after_cue_pattern: UnderstandingPatternText
    scope_break_pattern: UnderstandingPatternText
    window_words: Annotated[int, Field(ge=0, le=8)]


class CorrectionRules(_Strict):
    """Markers after which a slot's mentions replace the ones before ("sorry, I meant ...")."""

    marker_pattern: UnderstandingPatternText


def _unique_names(rules: tuple[ScreenRule, ...]) -> tuple[ScreenRule, ...]:
    names = [rule.name for rule in rules]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"screen rule names must be unique; repeated: {duplicates}")
    return rules


class UnderstandingRules(_Strict):
    injection_rules: tuple[ScreenRule, ...] = Field(min_length=1)
    staff_only_rules: tuple[ScreenRule, ...] = Field(min_length=1)
    intents: tuple[IntentRule, ...] = Field(min_length=1)
    slot_rules: tuple[SlotRule, ...]
    negation: NegationRules
    corrections: CorrectionRules

    @field_validator("injection_rules", "staff_only_rules")
    @classmethod
    def _names_unique(cls, rules: tuple[ScreenRule, ...]) -> tuple[ScreenRule, ...]:
        return _unique_names(rules)

    @model_validator(mode="after")
    def _one_default_intent_last(self) -> UnderstandingRules:
        defaults = [rule for rule in self.intents if rule.pattern is None]
        if len(defaults) != 1 or self.intents[-1].pattern is not None:
            raise ValueError("exactly one intent, the last, must have no pattern: it is the default")
        return self

    @property
    def default_intent(self) -> IntentRule:
        return self.intents[-1]


class ActionSpec(_Strict):
    instruction: NonEmptyText
    fixed_text: NonEmptyText
    template_text: NonEmptyText | None = None
    required_patterns: tuple[PatternText, ...] = ()
    required_slots: tuple[Identifier, ...] = ()


class FactRows(_Strict):
    action: Action
    program: Identifier
    passage_ids: tuple[PassageId, ...] = Field(min_length=1)


class Prompts(_Strict):
    realizer_system: NonEmptyText
    naive_system: NonEmptyText


class ScreenPatterns(_Strict):
    personal_detail_pattern: PatternText
    promise_pattern: PatternText
    placeholder_pattern: PatternText


class StaffDesk(_Strict):
    """The staff desk's words: the reasons a person may reject a reply for, and a staff message's limit."""

    reason_codes: tuple[Identifier, ...] = Field(min_length=1)
    max_message_chars: Annotated[int, Field(ge=1, le=4000)]

    @field_validator("reason_codes")
    @classmethod
    def _distinct(cls, codes: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(codes)) != len(codes):
            raise ValueError("reason codes must be distinct")
        return codes


class DomainInfo(_Strict):
    name: NonEmptyText
    program_slot: Identifier


class DomainSpec(_Strict):
    """The contents of `domain.toml`."""

    domain: DomainInfo
    frame: Frame
    programs: tuple[Program, ...] = Field(min_length=1)
    understanding: UnderstandingRules
    actions: dict[Action, ActionSpec]
    fact_rows: tuple[FactRows, ...]
    prompts: Prompts
    screens: ScreenPatterns
    staff: StaffDesk

    @model_validator(mode="after")
    def _consistent(self) -> DomainSpec:
        slot_names = set(self.frame.slot_names)
        if self.domain.program_slot not in slot_names:
            raise ValueError(f"program_slot {self.domain.program_slot!r} is not a frame slot")
        program_values = set(self.frame.slot(self.domain.program_slot).values) - {UNKNOWN}
        program_ids = {program.id for program in self.programs}
        if program_values != program_ids:
            raise ValueError("programs must describe exactly the program slot's known values")
        missing_actions = set(Action) - set(self.actions)
        if missing_actions:
            raise ValueError(f"actions table lacks {sorted(missing_actions)}")
        for index, rule in enumerate(self.understanding.slot_rules):
            where = f"understanding.slot_rules.{index}"
            if rule.slot not in slot_names:
                raise ValueError(f"{where} sets an unknown slot: {rule.slot}={rule.value}")
            allowed = set(self.frame.slot(rule.slot).values)
            for value in (rule.value, rule.negated_value):
                if value is not None and value not in allowed:
                    raise ValueError(f"{where} sets an unknown slot or value: {rule.slot}={value}")
        for action, spec in self.actions.items():
            for slot in spec.required_slots:
                if slot not in slot_names:
                    raise ValueError(f"action {action} requires unknown slot {slot!r}")
        for rows in self.fact_rows:
            if rows.program not in program_ids:
                raise ValueError(f"fact rows name unknown program {rows.program!r}")
        return self


class HandbookRow(_Strict):
    passage_id: PassageId
    topic: Identifier
    text: NonEmptyText
    source: NonEmptyText
    author_note: str


class DomainPack(BaseModel):
    """A validated domain pack, with its patterns compiled once."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    spec: DomainSpec
    handbook: tuple[HandbookRow, ...]

    @model_validator(mode="after")
    def _fact_rows_exist(self) -> DomainPack:
        known = {row.passage_id for row in self.handbook}
        if len(known) != len(self.handbook):
            raise ValueError("handbook passage ids must be unique")
        for rows in self.spec.fact_rows:
            unknown = set(rows.passage_ids) - known
            if unknown:
                raise ValueError(f"fact rows for {rows.action}/{rows.program} name missing passages {sorted(unknown)}")
        return self

    # Shortcuts the rest of the core reads.
    @property
    def frame(self) -> Frame:
        return self.spec.frame

    @property
    def program_slot(self) -> str:
        return self.spec.domain.program_slot

    def action(self, action: Action) -> ActionSpec:
        return self.spec.actions[action]

    def program(self, program_id: str) -> Program | None:
        return next((program for program in self.spec.programs if program.id == program_id), None)

    def program_display(self, program_id: str) -> str:
        program = self.program(program_id)
        return program.display_name if program else UNKNOWN

    @cached_property
    def passages(self) -> Mapping[str, HandbookRow]:
        return {row.passage_id: row for row in self.handbook}

    def fact_ids_for(self, action: Action, program_id: str) -> tuple[str, ...]:
        for rows in self.spec.fact_rows:
            if rows.action == action and rows.program == program_id:
                return rows.passage_ids
        return ()

    @cached_property
    def compiled(self) -> CompiledPatterns:
        return CompiledPatterns.from_spec(self.spec)
