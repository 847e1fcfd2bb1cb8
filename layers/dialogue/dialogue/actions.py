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
    """Every generated reply awaits a person's check; fixed text needs none."""

    PENDING = "pending"
    NOT_APPLICABLE = "not applicable"


class Screen(StrEnum):
    """Every check that can stop a generated reply: the six content screens, then the generation checks.

    A TURN item keeps the screens that fired as one number, a bit per screen (`screen_bits`): stored
    items depend on these bits, so a screen keeps its bit for good and a new one takes the next.
    """

    NUMERALS = "numerals"
    PROGRAM_NAMES = "program_names"
    ACTION_SLOTS = "action_slots"
    PERSONAL_DETAILS = "personal_details"
    PROMISE_WORDS = "promise_words"
    PLACEHOLDERS = "placeholders"
    OVER_BUDGET = "over_budget"
    FAILED = "failed"
    TOKEN_CAP = "token_cap"
    NO_EOS = "no_eos"
    DEADLINE = "deadline"

    @property
    def bit(self) -> int:
        return _SCREEN_BITS[self]


_SCREEN_BITS = {
    Screen.NUMERALS: 1 << 0,
    Screen.PROGRAM_NAMES: 1 << 1,
    Screen.ACTION_SLOTS: 1 << 2,
    Screen.PERSONAL_DETAILS: 1 << 3,
    Screen.PROMISE_WORDS: 1 << 4,
    Screen.PLACEHOLDERS: 1 << 5,
    Screen.OVER_BUDGET: 1 << 6,
    Screen.FAILED: 1 << 7,
    Screen.TOKEN_CAP: 1 << 8,
    Screen.NO_EOS: 1 << 9,
    Screen.DEADLINE: 1 << 10,
}

CONTENT_SCREENS = (
    Screen.NUMERALS,
    Screen.PROGRAM_NAMES,
    Screen.ACTION_SLOTS,
    Screen.PERSONAL_DETAILS,
    Screen.PROMISE_WORDS,
    Screen.PLACEHOLDERS,
)


def screen_bits(screens: Iterable[Screen]) -> int:
    """The number a TURN item stores for these screens."""
    bits = 0
    for screen in screens:
        bits |= screen.bit
    return bits


def screens_from_bits(bits: int) -> tuple[Screen, ...]:
    """The screens a stored number names, in Screen order. Bits no screen holds are an error."""
    if bits < 0 or bits & ~screen_bits(Screen):
        raise ValueError("stored screen bits name no known screen")
    return tuple(screen for screen in Screen if bits & screen.bit)
