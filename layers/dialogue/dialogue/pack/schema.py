"""The domain pack's schema: the frame, programs, rules, actions, facts and handbook, as pydantic models.

`DomainSpec` is `domain.toml`; `HandbookRow` a row of `handbook.csv` (dialogue.pack.domain's `DomainPack`
holds both, checked against each other).
"""

from __future__ import annotations

import re
import string
from enum import StrEnum
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from dialogue.actions import FIXED_ACTIONS, Action, ScreenProfile
from dialogue.pack.formats import CURRENT_FORMAT, EARLIEST_FORMAT
from dialogue.pack.patterns import NonEmptyText, PatternText, UnderstandingPatternText

if TYPE_CHECKING:
    pass

UNKNOWN = "unknown"

Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=40)]
PassageId = Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z0-9_-]{0,15}$")]
Phrase = Annotated[str, StringConstraints(pattern=r"\S", max_length=200)]


class UnderstandingProfile(StrEnum):
    """How a turn is read: by the rules alone (the lesson's, exact), or by the rules and then the desk's
    example utterances (`examples.toml`)."""

    LESSON = "lesson"
    DESK = "desk"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SlotSpec(_Strict):
    name: Identifier
    values: tuple[Identifier, ...]
    why_kept: NonEmptyText
    request_action: Action | None = None
    label: NonEmptyText
    record_label: NonEmptyText | None = None
    # How a value reads in replies, fallbacks and the console ("the blue one"); a value without one
    # reads as itself, underscores as spaces. A text names it as {<slot>.label}.
    value_labels: dict[Identifier, NonEmptyText] = Field(default_factory=dict)
    # What a confirmation adds for a value (", with an interpreter" for yes, nothing for no), spaces
    # kept as written; a text names it as {<slot>.phrase}, which is empty for a value without one.
    confirm_phrases: dict[Identifier, Phrase] = Field(default_factory=dict)

    @property
    def retained_label(self) -> str:
        """The slot's column heading in the retained record."""
        return self.record_label or self.label

    def value_label(self, value: str) -> str:
        """How `value` reads to a person."""
        return self.value_labels.get(value) or value.replace("_", " ")

    def confirm_phrase(self, value: str) -> str:
        return self.confirm_phrases.get(value, "")

    @model_validator(mode="after")
    def _labels_name_values(self) -> SlotSpec:
        for field in ("value_labels", "confirm_phrases"):
            if unknown := sorted(set(getattr(self, field)) - set(self.values)):
                raise ValueError(f"field {field}: {self.name} never holds {unknown}")
        return self

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

    @cached_property
    def request_actions(self) -> frozenset[Action]:
        """The actions that ask the resident for a slot."""
        return frozenset(spec.request_action for spec in self.slots if spec.request_action is not None)

    def slot_asked_by(self, action: str | None) -> str | None:
        """The slot a request action asks for (None for any other action, or none)."""
        return next((spec.name for spec in self.slots if action is not None and spec.request_action == action), None)


class Program(_Strict):
    id: Identifier
    display_name: NonEmptyText
    reply_alias_pattern: PatternText


IntentRoute = Literal["hand_off", "enroll"]
"""Where an intent sends the policy: to a person, or along the frame. Questions go by topic instead."""


class IntentRule(_Strict):
    """An intent, in priority order; `unless` names benign exceptions whose matches do not count
    ("are you a human?" asks about the assistant, not for a person)."""

    name: Identifier
    route: IntentRoute
    pattern: UnderstandingPatternText | None = None
    unless: tuple[Identifier, ...] = ()


class QuestionRules(_Strict):
    """What makes a turn a question for the handbook, and the intent of one that matches no topic."""

    pattern: UnderstandingPatternText
    unmatched_intent: Identifier
    # A question that opens by asking for a fact ("what's the pass rate for X", "who marks the X course"): where it
    # matches no topic, holds a word the desk never uses and names an offering only, it is the desk's unanswered
    # question, not a request for that offering (desk profile).
    fact_pattern: UnderstandingPatternText | None = None


class StatementRules(_Strict):
    """Which statements belong on the frame's path. A statement that mentions a frame value, matches
    `frame_pattern` ("I want the ... course"), speaks of a covered topic, holds a correction marker,
    or is small talk of at most `small_talk_max_words` words ("ok", "yes please") fills the frame; any
    other statement is about something this desk does not do ("book a flight to Denver") and is
    abstained on, recorded as `unmatched_intent`. Without this table every statement fills the frame.
    A turn that is a greeting or a pleasantry and nothing else (`greeting_pattern`, matched in full: "good morning",
    "hi, hope you're well", "thanks, bye") is small talk however many words it has: the desk profile never abstains
    on it, nor reads a topic or a question in it ("good evening" asks nothing about evening classes)."""

    frame_pattern: UnderstandingPatternText
    small_talk_max_words: Annotated[int, Field(ge=0, le=10)]
    unmatched_intent: Identifier
    greeting_pattern: UnderstandingPatternText | None = None
    # An offering named by a word the desk never uses ("the mech course", "courses for nursing"): the
    # pattern's group `name` holds the word (or `name2`, `name3`... in further branches). A turn naming no
    # offering of the desk's, whose every such word is one the desk never uses, asks about an offering the
    # desk does not run: the desk profile abstains on it.
    unrun_offering_pattern: UnderstandingPatternText | None = None
    # A question that asks to enrol and nothing else ("can i sign up?", "how do i join"): on the frame's path,
    # where every word is one the desk uses (the desk profile asks its first question).
    enrol_question_pattern: UnderstandingPatternText | None = None

    @field_validator("unrun_offering_pattern")
    @classmethod
    def _has_name_group(cls, pattern: str | None) -> str | None:
        if pattern is not None and "name" not in re.compile(pattern).groupindex:
            raise ValueError("pattern has no group named 'name' for the word that names the offering")
        return pattern


class Topic(_Strict):
    """A handbook topic: the questions that ask about it and the rows that answer them.

    A general topic has `rows`; a topic tied to the program slot has `program_rows`, per program
    (a program without an entry is not covered for that topic). A topic the desk knows it cannot
    answer has `covered = false` and no rows: a question on it is abstained on and handed off. A topic
    with no `pattern` is written from examples alone (`examples.toml`): only the desk profile finds it.
    """

    name: Identifier
    pattern: UnderstandingPatternText | None = None
    # Words that place a question on this topic only when no topic's `pattern` matches it: "my son" asks
    # about child care in "can my son come along?", but not in "my son is 16, can he join?" (eligibility).
    weak_pattern: UnderstandingPatternText | None = None
    intent: Identifier | None = None
    covered: bool = True
    # The topic's own fixed reply when a question on it is abstained on and handed off (default: the
    # abstain_hand_off action's): "if you feel very unwell, call emergency services".
    fixed_text: NonEmptyText | None = None
    rows: tuple[PassageId, ...] = ()
    program_rows: dict[Identifier, tuple[PassageId, ...]] = Field(default_factory=dict)
    # A yes/no slot the desk's answer on this topic raises (a slot it never asks for, such as child care): the
    # resident's next turn may answer it ("yes please", "no we're fine") or speak of it as "it" ("i'll need it"),
    # which is read as `raised_as` ("child care") there.
    raises: Identifier | None = None
    raised_as: NonEmptyText | None = None

    @model_validator(mode="after")
    def _rows_fit_coverage(self) -> Topic:
        has_rows = bool(self.rows) or any(self.program_rows.values())
        if self.covered and not has_rows:
            raise ValueError("field rows: a covered topic needs rows or program_rows (or covered = false)")
        if not self.covered and has_rows:
            raise ValueError("field rows: a topic with covered = false has no rows")
        if self.rows and self.program_rows:
            raise ValueError("field rows: a topic has rows or program_rows, not both")
        if any(not ids for ids in self.program_rows.values()):
            raise ValueError("field program_rows: every program listed needs at least one row")
        if self.raised_as is not None and self.raises is None:
            raise ValueError("field raised_as: names the words of a raised slot; set raises too")
        if self.raises is not None and not self.covered:
            raise ValueError("field raises: a topic the desk does not answer raises no slot")
        return self

    @property
    def intent_name(self) -> str:
        """The intent a question on this topic is recorded with."""
        return self.intent or f"{self.name}_question"

    @property
    def program_tied(self) -> bool:
        return bool(self.program_rows)

    def rows_for(self, program: str) -> tuple[str, ...]:
        """The rows that answer this topic for `program` (any program for a general topic)."""
        return self.program_rows.get(program, ()) if self.program_tied else self.rows

    def all_rows(self) -> tuple[tuple[str, str], ...]:
        """Every (field, row id) the topic names, for checking them against the handbook."""
        named = [("rows", passage_id) for passage_id in self.rows]
        for program, ids in self.program_rows.items():
            named += [(f"program_rows.{program}", passage_id) for passage_id in ids]
        return tuple(named)


class ScreenRule(_Strict):
    """One way of asking for something the assistant must refuse; its name says which, never the text.

    `unless` names benign exceptions (`[[understanding.benign_exceptions]]`): a match of the rule
    that lies wholly inside a match of one of them does not count ("please ignore my spelling")."""

    name: Identifier
    pattern: UnderstandingPatternText
    unless: tuple[Identifier, ...] = ()


class BenignException(_Strict):
    """Wording that a screen rule would catch but that asks for nothing a desk must refuse; a rule
    lists the exceptions it yields to, by name."""

    name: Identifier
    pattern: UnderstandingPatternText
    hides_topics: bool = True
    """Where a hand-off intent yields to it, a topic's words inside its match ask nothing of the topic ("am I chatting
    with a computer program?"). False for an exception that is itself a question a topic answers ("will a staff member
    contact me?" asks about the enrolment process)."""


class SlotRule(_Strict):
    """A mention of a slot value. A negated mention sets `negated_value`, or nothing when that is unset.
    A match inside a match of a benign exception the rule names in `unless` is no mention at all
    ("my boyfriend's address" names somebody else's address, not a way to be contacted)."""

    slot: Identifier
    value: Identifier
    pattern: UnderstandingPatternText
    negated_value: Identifier | None = None
    unless: tuple[Identifier, ...] = ()


class NegationRules(_Strict):
    """When a mention is negated: a cue shortly before it or an after-cue shortly after, in one clause.

    Negation is scoped, not cancelling: a second cue in the first one's reach negates the same way ("no,
    I don't need X" is no), unless it matches `double_negation_pattern` ("I can't come without X" needs
    X: "without" in the reach of "can't" cancels it). Without that pattern no cue cancels another."""

    cue_pattern: UnderstandingPatternText
    after_cue_pattern: UnderstandingPatternText
    scope_break_pattern: UnderstandingPatternText
    window_words: Annotated[int, Field(ge=0, le=8)]
    double_negation_pattern: UnderstandingPatternText | None = None


class AnswerRules(_Strict):
    """Short answers to the question the desk asked last (the desk profile reads them).

    A turn of at most `max_words` words that starts with `yes_pattern` or `no_pattern` answers a yes/no
    question: the slot just asked when it holds `yes` and `no`, else the confirmation (a "yes" to it
    changes no slot). One that matches `unsure_pattern` ("either", "not sure") leaves the slot asked and
    the desk asks again. `restart_pattern` anywhere in a turn ("start over") clears the slots.
    `self_pattern` finds the resident speaking of themselves (see the field). A turn
    longer than `long_turn_words` that is about nothing the desk does (a persona prompt, a story) sets
    no slot and is handed to staff."""

    yes_pattern: UnderstandingPatternText
    no_pattern: UnderstandingPatternText
    unsure_pattern: UnderstandingPatternText
    restart_pattern: UnderstandingPatternText
    # The resident speaking of themselves ("me", "my", "I'd"): a statement that names a value and does
    # so is the resident's own choice, even where the nearest examples are other desks' turns.
    self_pattern: UnderstandingPatternText
    # "The other course": where the program slot has two values and holds one, the turn chooses the other.
    other_offering_pattern: UnderstandingPatternText | None = None
    # "The first one", "the 2nd one", answering "which program?": the Nth pattern chooses the Nth program in the
    # order of `[[programs]]`, the order in which the desk's request for the program names them.
    offering_by_place_patterns: tuple[UnderstandingPatternText, ...] = ()
    # After an answer on a topic that raises a slot (`[[topics]]` `raises`): a yes that answers that slot, firmer than
    # `yes_pattern` ("yes please", not "ok thanks"; default: `yes_pattern`), and the words that stand for the topic
    # ("it", "that"), read as the topic's `raised_as`.
    raised_yes_pattern: UnderstandingPatternText | None = None
    pronoun_pattern: UnderstandingPatternText | None = None
    max_words: Annotated[int, Field(ge=1, le=12)] = 6
    long_turn_words: Annotated[int, Field(ge=10, le=400)] = 40


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
    # The profile a run uses unless told otherwise (UNDERSTANDING_PROFILE, --understanding).
    profile: UnderstandingProfile = UnderstandingProfile.LESSON
    injection_rules: tuple[ScreenRule, ...] = Field(min_length=1)
    staff_only_rules: tuple[ScreenRule, ...] = Field(min_length=1)
    benign_exceptions: tuple[BenignException, ...] = ()
    intents: tuple[IntentRule, ...] = Field(min_length=1)
    questions: QuestionRules
    statements: StatementRules | None = None
    slot_rules: tuple[SlotRule, ...]
    negation: NegationRules
    corrections: CorrectionRules
    answers: AnswerRules | None = None
    # Words typed on a phone and what they stand for ("u" = "you", "r" = "are", "pls" = "please"): the desk profile
    # reads a turn with them written out, so every pattern sees "are you open" in "r u open". The screens' floor
    # reads the turn as typed too; the examples' index reads it as typed.
    shorthand: dict[Annotated[str, Field(pattern=r"^[a-z0-9']+$")], NonEmptyText] = Field(default_factory=dict)

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


class ActionTexts(_Strict):
    """An action's words for one understanding profile, where they differ from the action's own: the
    lesson profile keeps the seed's texts, and `[actions.<name>.desk]` gives what residents read at the
    desk ("This scripted lesson stores no contact details." is the lesson's, not a desk's)."""

    instruction: NonEmptyText | None = None
    fixed_text: NonEmptyText | None = None
    template_text: NonEmptyText | None = None


class ActionSpec(_Strict):
    instruction: NonEmptyText
    fixed_text: NonEmptyText
    template_text: NonEmptyText | None = None
    required_patterns: tuple[PatternText, ...] = ()
    required_slots: tuple[Identifier, ...] = ()
    desk: ActionTexts | None = None

    def for_profile(self, profile: UnderstandingProfile) -> ActionSpec:
        """This action as `profile` words it."""
        if profile is not UnderstandingProfile.DESK or self.desk is None:
            return self
        return self.model_copy(update=self.desk.model_dump(exclude_none=True) | {"desk": None})


class FactRows(_Strict):
    action: Action
    program: Identifier
    passage_ids: tuple[PassageId, ...] = Field(min_length=1)


class Prompts(_Strict):
    realizer_system: NonEmptyText
    naive_system: NonEmptyText


class DeskScreenWords(_Strict):
    """The desk profile's words: what each of its screens looks for in a generated reply.

    A match that the rows the reply's prompt held also contain is the handbook's wording and passes
    (date words, third-person words, status words a row uses)."""

    status_claim_pattern: PatternText
    personal_question_pattern: PatternText
    # Candidate names of programs or services ("Welding Certificate"); a candidate that no program's
    # reply alias matches is unknown. Use (?-i:...) for the capital letters.
    program_name_pattern: PatternText
    date_word_pattern: PatternText
    third_person_pattern: PatternText
    boilerplate_pattern: PatternText
    # A promise to contact the resident; its sentence must name no other channel than the chosen one
    # (channel_patterns, per value of contact_slot) and no time (date_word_pattern, time_pattern).
    contact_promise_pattern: PatternText
    time_pattern: PatternText
    # The slot that holds how the resident wants to be contacted, and a pattern per value; a desk that
    # asks for no channel leaves both out, and a promise then only may name no time.
    contact_slot: Identifier | None = None
    channel_patterns: dict[Identifier, PatternText] = Field(default_factory=dict)


class ScreenPatterns(_Strict):
    personal_detail_pattern: PatternText
    promise_pattern: PatternText
    placeholder_pattern: PatternText
    # The profile a run uses unless told otherwise (--screens, SCREEN_PROFILE): the lesson's six
    # screens, or the desk's (the lesson's and eight more, from [screens.desk]).
    profile: ScreenProfile = ScreenProfile.LESSON
    desk: DeskScreenWords | None = None

    @model_validator(mode="after")
    def _desk_words_for_the_desk_profile(self) -> ScreenPatterns:
        if self.profile is ScreenProfile.DESK and self.desk is None:
            raise ValueError("field desk: the desk profile needs its words in [screens.desk]")
        return self


class StaffDesk(_Strict):
    """The staff desk's words: the reasons a person may reject a reply for, a staff message's limit, and the
    share of shown replies drawn for a person's check."""

    reason_codes: tuple[Identifier, ...] = Field(min_length=1)
    max_message_chars: Annotated[int, Field(ge=1, le=4000)]
    # In the desk profile, each reply the resident saw as drafted is drawn for a check with this chance
    # (dialogue.human_checks); a held reply is always checked. Above 0, so the screens' miss rate stays measured.
    shown_check_rate: Annotated[float, Field(gt=0, le=1)] = 0.10

    @field_validator("reason_codes")
    @classmethod
    def _distinct(cls, codes: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(codes)) != len(codes):
            raise ValueError("reason codes must be distinct")
        return codes


Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
WEEKDAYS: tuple[Weekday, ...] = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
ClockTime = Annotated[str, StringConstraints(pattern=r"^(?:[01]\d|2[0-3]):[0-5]\d$")]


class DeskHours(_Strict):
    """When a person answers at the desk, as data (dialogue.hours): the desk's time zone, its opening
    hours by weekday (a day left out is closed), and how its pages write dates and times.

    Outside them, a hand-off, an abstention or a contact left says when a person will answer: the API gives
    the next opening, and the chat words it with `closed_text`, in the desk's `locale` and time zone."""

    time_zone: NonEmptyText  # an IANA name: "Europe/London"
    locale: Annotated[str, StringConstraints(pattern=r"^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$")] = "en-GB"
    open: dict[Weekday, tuple[ClockTime, ClockTime]] = Field(min_length=1)
    # Said in the chat outside the hours; {next_opening} is the next opening's day and time, written by the page.
    closed_text: NonEmptyText

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("names no time zone (an IANA name such as Europe/London)") from None
        return name

    @field_validator("open")
    @classmethod
    def _opens_before_it_closes(cls, days: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
        for day, (opens, closes) in days.items():
            if opens >= closes:
                raise ValueError(f"{day}: the desk must open before it closes")
        return days

    @field_validator("closed_text")
    @classmethod
    def _names_the_opening(cls, text: str) -> str:
        fields = {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}
        if fields != {"next_opening"}:
            raise ValueError("must name {next_opening}, and nothing else in braces")
        return text


class ContactDetail(_Strict):
    """How one channel value takes a detail in the chat's contact form: the field's label, its kind (the
    browser's keyboard and autofill: a number, an address one writes to online, or a postal address) and
    the format a detail must have."""

    label: NonEmptyText
    kind: Literal["number", "address", "street"]
    # The whole detail must match (after spaces at either end are trimmed); say the format in `hint`.
    pattern: PatternText
    hint: NonEmptyText
    max_chars: Annotated[int, Field(ge=3, le=200)] = 80


class ContactForm(_Strict):
    """The chat's contact form, kept apart from the dialogue (DESIGN.md invariant 1): the channel values
    that take a detail and their format, a note for staff, how long they are kept, and the desk's texts.

    What a resident writes in it is sealed with the stack's key in its own item, read only by staff on the
    conversation's hand-off item (each read audited), and deleted when that item closes or at `keep_days`."""

    slot: Identifier
    # The form's heading on the chat page ("Leave a phone number or a note for staff").
    title: NonEmptyText
    details: dict[Identifier, ContactDetail] = Field(min_length=1)
    note_label: NonEmptyText
    note_max_chars: Annotated[int, Field(ge=1, le=1000)] = 500
    keep_days: Annotated[int, Field(ge=1, le=90)] = 30
    # The desk's reply once a detail or note is left (a hand-off to staff); may name {<slot>} values.
    received_text: NonEmptyText
    # The desk's reply to a turn that types a number or an address into the chat: it is not kept there.
    typed_in_chat_text: NonEmptyText
    # Found anywhere in a turn: a phone number or an email address typed into the chat.
    typed_pattern: UnderstandingPatternText


class DomainInfo(_Strict):
    name: NonEmptyText
    program_slot: Identifier
    # One sentence under the desk's name on the resident's chat page.
    intro: NonEmptyText | None = None
    # How and when a person answers what the assistant passes on, said on the chat page.
    person_answers: NonEmptyText | None = None
    # Questions the chat page offers a resident to start with (each fills the message box).
    examples: tuple[Annotated[str, StringConstraints(min_length=1, max_length=120, strip_whitespace=True)], ...] = (
        Field(default=(), max_length=4)
    )
    # The desk's generic fallback: its reply to a turn stored under an earlier version of the pack that this
    # one can no longer word (a request for a slot since renamed, a value since withdrawn: dialogue.replies).
    # Without it, every desk's default (dialogue.replies.GENERIC_FALLBACK).
    fallback_text: NonEmptyText | None = None
    # The line added to the fallback of a turn that found the realizer cold (starting, or switched off
    # outside desk hours): the reply comes at once and a person will check it. Without it, every desk's
    # default (dialogue.replies.COLD_REPLY_LINE).
    cold_reply_line: NonEmptyText | None = None

    @field_validator("fallback_text", "cold_reply_line")
    @classmethod
    def _names_no_slot(cls, text: str | None) -> str | None:
        """Plain text: the turns that get it hold slots the pack cannot read, so it names none."""
        if text is not None and ("{" in text or "}" in text):
            raise ValueError("names no placeholder: the turns that get it hold slots the pack cannot read")
        return text


PLACEHOLDERS = ("program_display", "facts")
"""What a fixed or template text may name besides the frame's slots (`{<slot>}`, the value itself)."""

SLOT_PARTS = ("label", "phrase")
"""What a text may name of a slot's value: `{<slot>.label}` and `{<slot>.phrase}` (see SlotSpec)."""


def _check_placeholders(text: str | None, slot_names: set[str], where: str) -> None:
    """Every `{name}` in a text names a slot (or a slot's label or phrase) or one of PLACEHOLDERS, with
    no format spec; braces are balanced."""
    if text is None:
        return
    try:
        fields = [(field, spec, conversion) for _, field, spec, conversion in string.Formatter().parse(text)
                  if field is not None]  # fmt: skip
    except ValueError:
        raise ValueError(f"{where}: unbalanced braces (write {{{{ and }}}} for a brace itself)") from None
    allowed = sorted(slot_names | set(PLACEHOLDERS))
    for field, spec, conversion in fields:
        base, _, part = field.partition(".")
        if spec or conversion or "[" in field:
            raise ValueError(f"{where}: {{{field}}} may hold only a name, with no format spec")
        if base not in allowed or (part and (base not in slot_names or part not in SLOT_PARTS)):
            raise ValueError(
                f"{where}: {{{field}}} names no slot and no placeholder ({', '.join(allowed)}; "
                f"or <slot>.label, <slot>.phrase)"
            )


def located(table: str, index: int | None = None, field: str | None = None) -> str:
    """Where in a pack file a problem is: `table topics, entry 3, field rows` (entries count from 1)."""
    parts = [f"table {table}"]
    if index is not None:
        parts.append(f"entry {index + 1}")
    if field is not None:
        parts.append(f"field {field}")
    return ", ".join(parts)


class DomainSpec(_Strict):
    """The contents of `domain.toml`."""

    # The pack format it is written in (dialogue.pack.formats, which reads it and fills in an earlier
    # format's defaults before this model reads the file); None: written before formats had numbers.
    format_version: Annotated[int, Field(ge=EARLIEST_FORMAT, le=CURRENT_FORMAT)] | None = None
    domain: DomainInfo
    frame: Frame
    programs: tuple[Program, ...] = Field(min_length=1)
    understanding: UnderstandingRules
    topics: tuple[Topic, ...] = Field(min_length=1)
    actions: dict[Action, ActionSpec]
    fact_rows: tuple[FactRows, ...]
    prompts: Prompts
    screens: ScreenPatterns
    staff: StaffDesk
    contact: ContactForm | None = None
    hours: DeskHours | None = None

    @model_validator(mode="after")
    def _consistent(self) -> DomainSpec:
        slot_names = set(self.frame.slot_names)
        if self.domain.program_slot not in slot_names:
            raise ValueError(f"{located('domain', field='program_slot')}: names no slot of the frame")
        program_values = set(self.frame.slot(self.domain.program_slot).values) - {UNKNOWN}
        program_ids = {program.id for program in self.programs}
        if program_values != program_ids:
            raise ValueError(f"{located('programs', field='id')}: programs must be exactly the program slot's values")
        requests = [slot.request_action for slot in self.frame.slots if slot.request_action is not None]
        for index, asked in enumerate(self.frame.slots):
            if asked.request_action is None:
                continue
            where = located("frame.slots", index, "request_action")
            if not asked.request_action.is_request:
                raise ValueError(f"{where}: {asked.request_action!s} is no request action (request_<name>)")
            if requests.count(asked.request_action) > 1:
                raise ValueError(f"{where}: {asked.request_action!s} asks for another slot too; one per slot")
        missing_actions = {*FIXED_ACTIONS, *requests} - set(self.actions)
        if missing_actions:
            lacking = sorted(str(action) for action in missing_actions)
            keys = " and ".join(name for name, field in ActionSpec.model_fields.items() if field.is_required())
            tables = " and ".join(f"[actions.{name}]" for name in lacking)
            each = ", each" if len(lacking) > 1 else ""
            raise ValueError(f"{located('actions')}: lacks {lacking}; add {tables}{each} with {keys}")
        if unasked := sorted(str(action) for action in set(self.actions) - {*FIXED_ACTIONS, *requests}):
            raise ValueError(f"{located('actions')}: {unasked} ask for no slot (name one in a slot's request_action)")
        answers = self.understanding.answers
        places = len(answers.offering_by_place_patterns) if answers is not None else 0
        if places > len(self.programs):
            where = located("understanding.answers", field="offering_by_place_patterns")
            raise ValueError(f"{where}: {places} places for {len(self.programs)} programs")
        for index, rule in enumerate(self.understanding.slot_rules):
            if rule.slot not in slot_names:
                raise ValueError(f"{located('understanding.slot_rules', index, 'slot')}: {rule.slot!r} is no slot")
            allowed = set(self.frame.slot(rule.slot).values)
            for field, value in (("value", rule.value), ("negated_value", rule.negated_value)):
                if value is not None and value not in allowed:
                    raise ValueError(
                        f"{located('understanding.slot_rules', index, field)}: {rule.slot} never holds {value!r}"
                    )
        self._check_exceptions()
        for action, spec in self.actions.items():
            for slot in spec.required_slots:
                if slot not in slot_names:
                    raise ValueError(f"{located(f'actions.{action}', field='required_slots')}: {slot!r} is no slot")
            for field in ("fixed_text", "template_text"):
                _check_placeholders(getattr(spec, field), slot_names, located(f"actions.{action}", field=field))
                if spec.desk is not None:
                    where = located(f"actions.{action}.desk", field=field)
                    _check_placeholders(getattr(spec.desk, field), slot_names, where)
        for index, topic in enumerate(self.topics):
            _check_placeholders(topic.fixed_text, slot_names, located("topics", index, "fixed_text"))
            if topic.raises is not None:
                if topic.raises not in slot_names:
                    raise ValueError(f"{located('topics', index, 'raises')}: {topic.raises!r} is no slot")
                if not {"yes", "no"} <= set(self.frame.slot(topic.raises).values):
                    raise ValueError(f"{located('topics', index, 'raises')}: {topic.raises} holds no yes and no")
        if self.contact is not None:
            contact = self.contact
            if contact.slot not in slot_names:
                raise ValueError(f"{located('contact', field='slot')}: {contact.slot!r} is no slot")
            if unknown := sorted(set(contact.details) - set(self.frame.slot(contact.slot).values) - {UNKNOWN}):
                raise ValueError(f"{located('contact', field='details')}: {unknown} are no values of {contact.slot}")
            for field in ("received_text", "typed_in_chat_text"):
                _check_placeholders(getattr(contact, field), slot_names, located("contact", field=field))
        for index, rows in enumerate(self.fact_rows):
            if rows.program not in program_ids:
                raise ValueError(f"{located('fact_rows', index, 'program')}: {rows.program!r} is no program")
            if rows.action is Action.INFORM:
                raise ValueError(f"{located('fact_rows', index, 'action')}: inform takes its rows from topics")
        if self.screens.desk is not None:
            desk = self.screens.desk
            if desk.contact_slot is None:
                if desk.channel_patterns:
                    raise ValueError(f"{located('screens.desk', field='channel_patterns')}: needs a contact_slot")
            elif desk.contact_slot not in slot_names:
                raise ValueError(f"{located('screens.desk', field='contact_slot')}: {desk.contact_slot!r} is no slot")
            elif set(desk.channel_patterns) != set(self.frame.slot(desk.contact_slot).values) - {UNKNOWN}:
                raise ValueError(
                    f"{located('screens.desk', field='channel_patterns')}: must name exactly the values of "
                    f"{desk.contact_slot}"
                )
        self._check_topics(program_ids)
        return self

    def _check_exceptions(self) -> None:
        rules = self.understanding
        names = [exception.name for exception in rules.benign_exceptions]
        if len(set(names)) != len(names):
            raise ValueError(f"{located('understanding.benign_exceptions', field='name')}: names must be unique")
        for table in ("injection_rules", "staff_only_rules", "intents", "slot_rules"):
            for index, rule in enumerate(getattr(rules, table)):
                if unknown := sorted(set(rule.unless) - set(names)):
                    where = located(f"understanding.{table}", index, "unless")
                    raise ValueError(f"{where}: names no benign exception: {unknown}")

    def _check_topics(self, program_ids: set[str]) -> None:
        names = [topic.name for topic in self.topics]
        for index, topic in enumerate(self.topics):
            if names.count(topic.name) > 1:
                raise ValueError(f"{located('topics', index, 'name')}: {topic.name!r} is listed twice")
            for program in topic.program_rows:
                if program not in program_ids:
                    raise ValueError(f"{located('topics', index, 'program_rows')}: {program!r} is no program")
        tied = any(topic.program_tied for topic in self.topics)
        if tied and self.frame.slot(self.domain.program_slot).request_action is None:
            raise ValueError(
                f"{located('frame.slots', field='request_action')}: program-tied topics need the program slot "
                "to have a request action"
            )

    def topic(self, name: str | None) -> Topic | None:
        return next((topic for topic in self.topics if topic.name == name), None)


class HandbookRow(_Strict):
    passage_id: PassageId
    topic: Identifier
    text: NonEmptyText
    source: NonEmptyText
    author_note: str
