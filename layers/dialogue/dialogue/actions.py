"""The policy's actions, which of them a model words, and the labels the seed records for each turn."""

from collections.abc import Iterable
from enum import StrEnum


class Action(StrEnum):
    """Everything the policy can do. There is no approve action, by design."""

    REFUSE = "refuse"
    ABSTAIN_HAND_OFF = "abstain_hand_off"
    HAND_OFF = "hand_off"
    REQUEST_PROGRAM = "request_program"
    REQUEST_CONTACT = "request_contact"
    CONFIRM = "confirm"
    INFORM = "inform"

    @property
    def uses_model(self) -> bool:
        """Request, confirm and inform are worded by a model; the rest are fixed text."""
        return self in MODEL_ACTIONS


MODEL_ACTIONS = frozenset({Action.REQUEST_PROGRAM, Action.REQUEST_CONTACT, Action.CONFIRM, Action.INFORM})


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
    """Every generated reply awaits a person's check (pending until a staff decision); fixed text needs none."""

    PENDING = "pending"
    NOT_APPLICABLE = "not applicable"
    APPROVED = "approved"
    REJECTED = "rejected"
    CORRECTED = "corrected"


STAFF_REJECTED = frozenset({HumanReview.REJECTED, HumanReview.CORRECTED})
"""The staff decisions that say a reply should not have been shown as it was."""

HANDED_OFF = frozenset({Action.REFUSE, Action.ABSTAIN_HAND_OFF, Action.HAND_OFF})
"""The actions that leave the turn to a person: each becomes an item of the staff's hand-off queue."""


class Queue(StrEnum):
    """The staff desk's work queues, each a partition of the table's sparse queue index."""

    REVIEW = "review"  # every generated reply, once screened
    HANDOFF = "handoff"  # every hand_off, abstain_hand_off and refuse turn


class HandoffStatus(StrEnum):
    OPEN = "open"
    CLOSED = "closed"


class Screen(StrEnum):
    """Every check that can stop a generated reply: the lesson's six content screens, the desk
    profile's eight more, then the generation checks and the deadline. A TURN item keeps the names of
    those that fired."""

    NUMERALS = "numerals"
    PROGRAM_NAMES = "program_names"
    ACTION_SLOTS = "action_slots"
    PERSONAL_DETAILS = "personal_details"
    PROMISE_WORDS = "promise_words"
    PLACEHOLDERS = "placeholders"
    STATUS_CLAIMS = "status_claims"
    PERSONAL_QUESTIONS = "personal_questions"
    UNKNOWN_PROGRAMS = "unknown_programs"
    DATE_WORDS = "date_words"
    THIRD_PERSON = "third_person"
    REQUEST_ASKS = "request_asks"
    BOILERPLATE = "boilerplate"
    CONTACT_PROMISES = "contact_promises"
    OVER_BUDGET = "over_budget"
    FAILED = "failed"
    TOKEN_CAP = "token_cap"
    NO_EOS = "no_eos"
    DEADLINE = "deadline"


LESSON_SCREENS = (
    Screen.NUMERALS,
    Screen.PROGRAM_NAMES,
    Screen.ACTION_SLOTS,
    Screen.PERSONAL_DETAILS,
    Screen.PROMISE_WORDS,
    Screen.PLACEHOLDERS,
)
"""The seed's screens: the lesson profile runs exactly these."""

DESK_SCREENS = (
    *LESSON_SCREENS,
    Screen.STATUS_CLAIMS,
    Screen.PERSONAL_QUESTIONS,
    Screen.UNKNOWN_PROGRAMS,
    Screen.DATE_WORDS,
    Screen.THIRD_PERSON,
    Screen.REQUEST_ASKS,
    Screen.BOILERPLATE,
    Screen.CONTACT_PROMISES,
)
"""The desk profile: the lesson's screens and eight more, each from the pack's words."""

CONTENT_SCREENS = DESK_SCREENS
"""Every screen on a reply's wording, in either profile."""


class ScreenProfile(StrEnum):
    """Which content screens run: the lesson's, or the desk's (the lesson's and more)."""

    LESSON = "lesson"
    DESK = "desk"

    @property
    def screens(self) -> tuple[Screen, ...]:
        return LESSON_SCREENS if self is ScreenProfile.LESSON else DESK_SCREENS


def in_screen_order(names: Iterable[str]) -> tuple[Screen, ...]:
    """Screens named in any order (a stored set), in the order Screen lists them."""
    given = {Screen(name) for name in names}
    return tuple(screen for screen in Screen if screen in given)
