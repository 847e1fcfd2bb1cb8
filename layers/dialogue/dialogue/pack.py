"""The domain pack: the frame, programs, patterns, fixed texts and handbook, validated at load.

A pack is a folder holding `domain.toml` and `handbook.csv`; `scripted_turns.csv` rides along for
replays and `understanding_cases.csv` for the understanding tests. Understanding patterns are matched
against `dialogue.normalize.normalize(text)`: NFKC-folded, case-folded, invisible characters gone.
Every file is validated by pydantic, and a malformed pack raises `PackError` naming the file and the
row or entry at fault.
"""

from __future__ import annotations

import csv
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from dialogue.actions import Action

UNKNOWN = "unknown"
PACK_DIR_ENV = "DOMAIN_PACK_DIR"

Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=40)]
PassageId = Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z0-9_-]{0,15}$")]
NonEmptyText = Annotated[str, StringConstraints(min_length=1, strip_whitespace=True)]


class PackError(ValueError):
    """A domain pack file is missing or malformed."""


def _compile(pattern: str, flags: re.RegexFlag = re.IGNORECASE) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as error:
        raise ValueError(f"invalid regular expression: {error}") from None


# Escapes that name a character by its number (\x41, \u0041, \N{...}, octal) or refer back to a group.
_NUMBERED_ESCAPE = re.compile(r"\\(?:[xuUN0-9])")


def _compile_understanding(pattern: str) -> re.Pattern[str]:
    """An understanding pattern, for matching against `normalize(text)`, which is case-folded.

    Written in lower case, with no escape that names a character by number, a pattern matches
    normalized text the same with or without IGNORECASE: the text's only letters that IGNORECASE
    equates with a lower-case ASCII letter are that letter itself (see `dialogue.normalize`). It is
    compiled without it, which lets Python's re skip ahead on literal characters (about twice as
    fast). Any other pattern keeps IGNORECASE.
    """
    if pattern.isascii() and not any(char.isupper() for char in pattern) and not _NUMBERED_ESCAPE.search(pattern):
        return _compile(pattern, re.NOFLAG)
    return _compile(pattern)


# Texts on which an understanding pattern must not match zero characters: one that can would fire on
# every turn (or mark every position a negation cue), which is never what its author meant.
_EMPTY_MATCH_PROBES = ("", "x", "x y, z. ")


def _compile_nonempty(pattern: str) -> re.Pattern[str]:
    # Compiled as it will run, so `CompiledPatterns` later finds it in re's cache.
    compiled = _compile_understanding(pattern)
    for probe in _EMPTY_MATCH_PROBES:
        if any(match.end() == match.start() for match in compiled.finditer(probe)):
            raise ValueError("pattern can match empty text, so it would fire on every turn")
    return compiled


def _valid_pattern(pattern: str) -> str:
    _compile(pattern)
    return pattern


def _valid_understanding_pattern(pattern: str) -> str:
    _compile_nonempty(pattern)
    return pattern


# A regular expression that compiles (reply screens, aliases, required patterns).
PatternText = Annotated[NonEmptyText, AfterValidator(_valid_pattern)]
# An understanding pattern: compiles, and can never match empty text.
UnderstandingPatternText = Annotated[NonEmptyText, AfterValidator(_valid_understanding_pattern)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SlotSpec(_Strict):
    name: Identifier
    values: tuple[Identifier, ...]
    why_kept: NonEmptyText
    request_action: Action | None = None

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


class ScriptedTurn(_Strict):
    """One row of a scripted conversation; the expected_* columns are optional."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    conversation_id: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    turn_id: Annotated[int, Field(ge=1)]
    user_utterance: Annotated[str, StringConstraints(min_length=1)]
    expected_program: str | None = None
    expected_childcare: str | None = None
    expected_contact: str | None = None
    expected_action: Action | None = None

    @field_validator("expected_program", "expected_childcare", "expected_contact", "expected_action", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if value == "" else value


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


class CompiledPatterns(BaseModel):
    """Every regular expression of a pack, compiled once."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    injection: tuple[tuple[ScreenRule, re.Pattern[str]], ...]
    staff_only: tuple[tuple[ScreenRule, re.Pattern[str]], ...]
    intents: tuple[tuple[IntentRule, re.Pattern[str] | None], ...]
    slot_rules: tuple[tuple[SlotRule, re.Pattern[str]], ...]
    negation_cue: re.Pattern[str]
    negation_after_cue: re.Pattern[str]
    scope_break: re.Pattern[str]
    correction_marker: re.Pattern[str]
    program_aliases: Mapping[str, re.Pattern[str]]
    required: Mapping[Action, tuple[re.Pattern[str], ...]]
    personal_detail: re.Pattern[str]
    promise: re.Pattern[str]
    placeholder: re.Pattern[str]

    @classmethod
    def from_spec(cls, spec: DomainSpec) -> CompiledPatterns:
        rules = spec.understanding
        # Understanding patterns run on normalized text; the screens on replies run on raw text.
        understanding = _compile_understanding
        return cls(
            injection=tuple((rule, understanding(rule.pattern)) for rule in rules.injection_rules),
            staff_only=tuple((rule, understanding(rule.pattern)) for rule in rules.staff_only_rules),
            intents=tuple((rule, understanding(rule.pattern) if rule.pattern else None) for rule in rules.intents),
            slot_rules=tuple((rule, understanding(rule.pattern)) for rule in rules.slot_rules),
            negation_cue=understanding(rules.negation.cue_pattern),
            negation_after_cue=understanding(rules.negation.after_cue_pattern),
            scope_break=understanding(rules.negation.scope_break_pattern),
            correction_marker=understanding(rules.corrections.marker_pattern),
            program_aliases={program.id: _compile(program.reply_alias_pattern) for program in spec.programs},
            required={
                action: tuple(_compile(pattern) for pattern in action_spec.required_patterns)
                for action, action_spec in spec.actions.items()
            },
            personal_detail=_compile(spec.screens.personal_detail_pattern),
            promise=_compile(spec.screens.promise_pattern),
            placeholder=_compile(spec.screens.placeholder_pattern),
        )


def _describe(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "top level"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


Row = TypeVar("Row", bound=BaseModel)


def read_csv_rows(path: Path, model: type[Row]) -> list[Row]:
    """Read a CSV file into validated rows; errors name the file and the row's line number."""
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as error:
        raise PackError(f"{path}: cannot be read ({error.strerror})") from None
    with handle:
        reader = csv.DictReader(handle)
        expected = list(model.model_fields)
        required = [name for name, field in model.model_fields.items() if field.is_required()]
        header = reader.fieldnames or []
        missing = [name for name in required if name not in header]
        unknown = [name for name in header if name not in expected]
        if missing or unknown:
            raise PackError(f"{path}: header must hold {expected}; missing {missing}, unexpected {unknown}")
        rows: list[Row] = []
        for record in reader:
            line = reader.line_num
            if None in record or any(value is None for value in record.values()):
                raise PackError(f"{path}, row at line {line}: wrong number of fields (quote text that holds commas)")
            try:
                rows.append(model.model_validate(record))
            except ValidationError as error:
                raise PackError(f"{path}, row at line {line}: {_describe(error)}") from None
        return rows


def load_pack(directory: str | os.PathLike[str]) -> DomainPack:
    """Load and validate the pack in `directory`."""
    root = Path(directory)
    domain_file = root / "domain.toml"
    try:
        raw = tomllib.loads(domain_file.read_text(encoding="utf-8"))
    except OSError as error:
        raise PackError(f"{domain_file}: cannot be read ({error.strerror})") from None
    except tomllib.TOMLDecodeError as error:
        raise PackError(f"{domain_file}: not valid TOML ({error})") from None
    try:
        spec = DomainSpec.model_validate(raw)
    except ValidationError as error:
        raise PackError(f"{domain_file}, entry {_describe(error)}") from None
    handbook_file = root / "handbook.csv"
    handbook = read_csv_rows(handbook_file, HandbookRow)
    try:
        return DomainPack(spec=spec, handbook=tuple(handbook))
    except ValidationError as error:
        raise PackError(f"{handbook_file}: {_describe(error)}") from None


def read_scripted_turns(path: str | os.PathLike[str]) -> list[ScriptedTurn]:
    """Read scripted turns from a CSV file (the pack's, or any other with the same columns)."""
    return read_csv_rows(Path(path), ScriptedTurn)


def default_pack_dir() -> Path:
    """The pack named by DOMAIN_PACK_DIR, else the repository's `data/riverton`."""
    configured = os.environ.get(PACK_DIR_ENV)
    if configured:
        return Path(configured)
    return _repository_pack_dir()


@lru_cache(maxsize=1)
def _repository_pack_dir() -> Path:
    # Resolved once: `get_pack()` runs on every request, and resolving a path is a syscall per part.
    return Path(__file__).resolve().parents[3] / "data" / "riverton"


@lru_cache(maxsize=4)
def _cached_pack(directory: str) -> DomainPack:
    return load_pack(directory)


def get_pack(directory: str | os.PathLike[str] | None = None) -> DomainPack:
    """The pack in `directory` (default: `default_pack_dir()`), loaded once per process."""
    return _cached_pack(str(directory if directory is not None else default_pack_dir()))


def scripted_turns_by_conversation(turns: Sequence[ScriptedTurn]) -> dict[str, list[ScriptedTurn]]:
    """Group scripted turns by conversation, in file order, each sorted by turn id."""
    grouped: dict[str, list[ScriptedTurn]] = {}
    for turn in turns:
        grouped.setdefault(turn.conversation_id, []).append(turn)
    return {key: sorted(rows, key=lambda row: row.turn_id) for key, rows in grouped.items()}
