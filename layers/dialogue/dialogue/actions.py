"""The policy's actions, which of them a model words, and the labels the seed records for each turn."""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

_FIXED_NAMES = ("refuse", "abstain_hand_off", "hand_off", "clarify", "confirm", "inform", "next_step")
_REQUEST = re.compile(r"request_[a-z][a-z0-9_]{0,31}")
ACTION_PATTERN = rf"^(?:{'|'.join(_FIXED_NAMES)}|{_REQUEST.pattern})$"
"""Every action's name: one of the fixed seven (FIXED_ACTIONS), or `request_<name>`, a desk's request for one slot."""


class Action(str):
    """Everything the policy can do: refuse, abstain and hand off, hand off, clarify (a correction it
    could not read: fixed text, never the old value confirmed), confirm, inform, next_step (after the
    confirmation, a turn that changes and asks nothing: fixed text on what happens next, never the
    confirmation again), and one request action
    per slot the desk asks for, which the desk names (`request_program` and
    `request_contact` in the seed's desk). There is no approve action, by design, and no name outside
    ACTION_PATTERN. Each name has one instance, so `is` compares actions as an enum's members would.
    A plain class, not an enum: a desk's request actions are open-ended; the fixed ones are
    FIXED_ACTIONS."""

    __slots__ = ()
    _known: ClassVar[dict[str, Action]] = {}

    REFUSE: ClassVar[Action]
    ABSTAIN_HAND_OFF: ClassVar[Action]
    HAND_OFF: ClassVar[Action]
    CLARIFY: ClassVar[Action]
    REQUEST_PROGRAM: ClassVar[Action]
    REQUEST_CONTACT: ClassVar[Action]
    CONFIRM: ClassVar[Action]
    INFORM: ClassVar[Action]
    NEXT_STEP: ClassVar[Action]

    def __new__(cls, value: object) -> Action:
        if isinstance(value, Action):
            return value
        known = cls._known.get(value) if isinstance(value, str) else None
        if known is not None:
            return known
        if not isinstance(value, str) or not (value in _FIXED_NAMES or _REQUEST.fullmatch(value)):
            raise ValueError(
                "names no action: refuse, abstain_hand_off, hand_off, clarify, confirm, inform, next_step"
                " or request_<slot>"
            )
        made = super().__new__(cls, value)
        cls._known[str(made)] = made
        return made

    def __repr__(self) -> str:
        return f"Action({str.__str__(self)!r})"

    def __str__(self) -> str:
        return str.__str__(self)

    @property
    def value(self) -> str:
        return str.__str__(self)

    @property
    def is_request(self) -> bool:
        """A request for one slot's value, worded by a model."""
        return self.startswith("request_")

    @property
    def uses_model(self) -> bool:
        """Request, confirm and inform are worded by a model; the rest are fixed text."""
        return self.is_request or self in (Action.CONFIRM, Action.INFORM)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls._validate, serialization=core_schema.plain_serializer_function_ser_schema(str)
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string", "pattern": ACTION_PATTERN}

    @classmethod
    def _validate(cls, value: object) -> Action:
        if not isinstance(value, str):
            raise ValueError("an action is a string")  # pydantic wants ValueError
        return cls(value)


Action.REFUSE = Action("refuse")
Action.ABSTAIN_HAND_OFF = Action("abstain_hand_off")
Action.HAND_OFF = Action("hand_off")
Action.CLARIFY = Action("clarify")
Action.CONFIRM = Action("confirm")
Action.INFORM = Action("inform")
Action.NEXT_STEP = Action("next_step")
# The seed's desk names its two request actions so; the core never branches on them.
Action.REQUEST_PROGRAM = Action("request_program")
Action.REQUEST_CONTACT = Action("request_contact")

FIXED_ACTIONS = (
    Action.REFUSE,
    Action.ABSTAIN_HAND_OFF,
    Action.HAND_OFF,
    Action.CLARIFY,
    Action.CONFIRM,
    Action.INFORM,
    Action.NEXT_STEP,
)
"""The actions of every desk; each desk adds a request action per slot it asks for."""


class ReplySource(StrEnum):
    FIXED = "fixed"
    MODEL = "model"


class TurnStatus(StrEnum):
    PENDING = "pending"
    FINAL = "final"


class ReplyScreen(StrEnum):
    """The seed's labels for the automatic screen of a turn's reply."""

    HELD = "held for human review"
    NOT_FLAGGED = "not flagged by screen"
    NOT_APPLICABLE = "not applicable"


class HumanReview(StrEnum):
    """A generated reply's human check: pending until a staff decision, or not drawn (a shown reply the
    desk's draw left unchecked: dialogue.human_checks); fixed text needs none."""

    PENDING = "pending"
    NOT_DRAWN = "not drawn"
    NOT_APPLICABLE = "not applicable"
    APPROVED = "approved"
    REJECTED = "rejected"
    CORRECTED = "corrected"


STAFF_REJECTED = frozenset({HumanReview.REJECTED, HumanReview.CORRECTED})
"""The staff decisions that say a reply should not have been shown as it was."""

HANDED_OFF = frozenset({Action.REFUSE, Action.ABSTAIN_HAND_OFF, Action.HAND_OFF})
"""The actions that leave the turn to a person: the conversation's first opens an item of the staff's
hand-off queue, and a later one joins it while it is open (dialogue.handoffs)."""


class Queue(StrEnum):
    """The staff desk's work queues, each a partition of the table's sparse queue index."""

    REVIEW = "review"  # every held reply, and each shown one drawn for a check, once screened
    HANDOFF = "handoff"  # a conversation's open item, which its hand_off, abstain_hand_off and refuse turns join


class HandoffStatus(StrEnum):
    OPEN = "open"
    CLOSED = "closed"
    # A turn left to a person while the conversation already had an open item: it joined that item
    # (`joined_to`) and is in no queue itself.
    JOINED = "joined"


class ScreenProfile(StrEnum):
    """Which content screens run: the lesson's, or the desk's (the lesson's and more)."""

    LESSON = "lesson"
    DESK = "desk"

    @property
    def screens(self) -> tuple[Screen, ...]:
        return LESSON_SCREENS if self is ScreenProfile.LESSON else DESK_SCREENS


class Screen(StrEnum):
    """Every check that can stop a generated reply, defined once: its name, what staff call it (`label`,
    the one table the console reads, through `/staff/desk`) and the profile that adds it (`profile`): the
    lesson's six content screens, run by both profiles; the desk profile's eight more; then the
    generation checks and the deadline, which every reply gets (no profile). A TURN item keeps the names
    of those that fired."""

    label: str
    profile: ScreenProfile | None

    # The defaults only let `Screen(name)` (a look-up by name, as for any enum) type-check.
    def __new__(cls, value: str, label: str = "", profile: ScreenProfile | None = None) -> Screen:
        member = str.__new__(cls, value)
        member._value_ = value
        member.label = label
        member.profile = profile
        return member

    NUMERALS = "numerals", "Numbers not in the handbook rows", ScreenProfile.LESSON
    PROGRAM_NAMES = "program_names", "Another of the desk's offerings named", ScreenProfile.LESSON
    ACTION_SLOTS = "action_slots", "What the action must say is missing", ScreenProfile.LESSON
    PERSONAL_DETAILS = "personal_details", "Personal details asked for", ScreenProfile.LESSON
    PROMISE_WORDS = "promise_words", "Promise words", ScreenProfile.LESSON
    PLACEHOLDERS = "placeholders", "Placeholders left in", ScreenProfile.LESSON
    STATUS_CLAIMS = "status_claims", "A status only staff can give", ScreenProfile.DESK
    PERSONAL_QUESTIONS = "personal_questions", "Personal questions asked", ScreenProfile.DESK
    UNKNOWN_PROGRAMS = "unknown_programs", "An offering the desk does not have", ScreenProfile.DESK
    DATE_WORDS = "date_words", "Days or dates not in the handbook rows", ScreenProfile.DESK
    THIRD_PERSON = "third_person", "Speaks about the resident, not to them", ScreenProfile.DESK
    REQUEST_ASKS = "request_asks", "A request that asks nothing", ScreenProfile.DESK
    BOILERPLATE = "boilerplate", "Wording that does not belong at a desk", ScreenProfile.DESK
    CONTACT_PROMISES = "contact_promises", "Promises contact at a time or by another channel", ScreenProfile.DESK
    OVER_BUDGET = "over_budget", "Over the prompt budget", None
    FAILED = "failed", "The model failed", None
    TOKEN_CAP = "token_cap", "Hit the token cap", None
    NO_EOS = "no_eos", "Never ended", None
    DEADLINE = "deadline", "Past the reply deadline", None


LESSON_SCREENS = tuple(screen for screen in Screen if screen.profile is ScreenProfile.LESSON)
"""The seed's screens: the lesson profile runs exactly these."""

DESK_SCREENS = (*LESSON_SCREENS, *(screen for screen in Screen if screen.profile is ScreenProfile.DESK))
"""The desk profile: the lesson's screens and eight more, each from the pack's words."""

CONTENT_SCREENS = DESK_SCREENS
"""Every screen on a reply's wording, in either profile."""


def in_screen_order(names: Iterable[str]) -> tuple[Screen, ...]:
    """Screens named in any order (a stored set), in the order Screen lists them."""
    given = {Screen(name) for name in names}
    return tuple(screen for screen in Screen if screen in given)
