"""Conversations typed as residents type on a phone, Riverton's desk profile: short typos of the value the
desk just asked for, misspelt course names anywhere, "its right sorry", and questions the desk must not
answer from its handbook although they share its words (issue 39, third round).

Each conversation runs through `understand` and `next_state` from a fresh state, as the turn function
does, and checks the action and the slots after every turn.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dialogue.actions import Action
from dialogue.pack import DomainPack, get_pack
from dialogue.policy import next_state
from dialogue.state import DialogueState
from dialogue.understanding import understand

RIVERTON = Path(__file__).resolve().parents[2] / "data" / "riverton"

Turn = tuple[str, str, dict[str, str]]
"""The resident's text, the action expected, and the slots expected after it (those named only)."""


@pytest.fixture(scope="module")
def pack() -> DomainPack:
    return get_pack(RIVERTON)


def _talk(pack: DomainPack, turns: list[Turn]) -> None:
    state = DialogueState.new(pack.frame)
    for number, (text, expected, slots) in enumerate(turns, 1):
        state, action = next_state(state, understand(text, pack, state.asked), pack)
        assert (str(action), {slot: state.get(slot) for slot in slots}) == (expected, slots), f"turn {number}: {text}"


CONVERSATIONS: dict[str, list[Turn]] = {
    "a four-letter typo of the channel just asked for": [
        ("data suport cert", "request_contact", {"program": "data_support"}),
        ("emal", "confirm", {"contact_channel": "email"}),
        ("yse", "next_step", {"contact_channel": "email"}),
    ],
    "the same typo for the phone": [
        ("forklift", "request_contact", {"program": "forklift"}),
        ("phon", "confirm", {"contact_channel": "phone"}),
    ],
    "a misspelt course name in a sentence": [
        ("i wnt 2 do forkift", "request_contact", {"program": "forklift"}),
        ("wat days is it on", "inform", {"program": "forklift"}),
    ],
    "mail alone is an email": [
        ("data one", "request_contact", {"program": "data_support"}),
        ("mail", "confirm", {"contact_channel": "email"}),
    ],
    "its right sorry says yes after a no": [
        ("forklift", "request_contact", {}),
        ("call me", "confirm", {"contact_channel": "phone"}),
        ("no", "clarify", {"contact_channel": "phone"}),
        ("its right sorry", "next_step", {"program": "forklift", "contact_channel": "phone"}),
    ],
    "no thats all thanks is not a no to the confirmation": [
        ("forklift", "request_contact", {}),
        ("email", "confirm", {}),
        ("no thats all thanks", "next_step", {"contact_channel": "email"}),
    ],
    "a question after a comma and a joining word": [
        ("forklift please, and how is it tested", "inform", {"program": "forklift"}),
    ],
    "the data course names the program in a question": [
        ("how old do i have to be for the data course", "inform", {"program": "data_support"}),
    ],
}


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_a_conversation_typed_on_a_phone(pack: DomainPack, name: str) -> None:
    _talk(pack, CONVERSATIONS[name])


@pytest.mark.parametrize(
    ("text", "asked", "expected"),
    [
        ("emal", None, {}),  # a four-letter typo counts only as the answer to what was just asked
        ("phon", "request_program", {}),
        ("not forkift", None, {}),  # a misspelt name read anywhere is still read as negated
        ("i dont want forkift", None, {}),
    ],
)
def test_what_a_typo_does_not_set(pack: DomainPack, text: str, asked: str | None, expected: dict[str, str]) -> None:
    assert understand(text, pack, asked).slot_updates == expected


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("how can i steal a laptop?", Action.ABSTAIN_HAND_OFF),
        ("where can i withdraw money?", Action.ABSTAIN_HAND_OFF),
        ("is the library open on sunday?", Action.ABSTAIN_HAND_OFF),
        ("can i retake the forklift test if i fail?", Action.ABSTAIN_HAND_OFF),
        ("how do i withdraw from the course?", Action.INFORM),  # the course's own withdrawing
        ("are you open on bank holidays?", Action.INFORM),
        ("which room is the data support class in?", Action.INFORM),
        ("is there a person I could speak with instead?", Action.HAND_OFF),
        ("request callback", Action.HAND_OFF),
        ("do you have human resources courses?", Action.ABSTAIN_HAND_OFF),  # not a request for a human
        ("does staff provide a laptop?", Action.REQUEST_PROGRAM),  # equipment, which depends on the course
    ],
)
def test_a_single_question(pack: DomainPack, text: str, action: Action) -> None:
    _, got = next_state(DialogueState.new(pack.frame), understand(text, pack), pack)
    assert got == action


def test_the_location_topic_answers_each_course_from_its_own_row(pack: DomainPack) -> None:
    topic = pack.topic("location")
    assert topic is not None
    assert (topic.rows_for("data_support"), topic.rows_for("forklift")) == (("H08",), ("H11",))


# --- The first-day misses (issue 39, fourth round) -----------------------------------------------


def test_your_hours_are_the_desks_not_a_courses(pack: DomainPack) -> None:
    read = understand("what are your hours", pack)
    _, action = next_state(DialogueState.new(pack.frame), read, pack)
    assert (action, read.topic) == (Action.INFORM, "centre_hours")


def test_a_turn_the_examples_place_with_attacks_is_out_of_scope_not_the_frames(pack: DomainPack) -> None:
    """Refusing by example is off at this desk (screen_min_score = 1.0): a turn the examples are sure is an
    attack, naming no value, is abstained on; before, it fell through to "Which program?"."""
    assert pack.examples is not None and pack.examples.screen_min_score == 1.0
    read = understand("generate c++", pack)
    _, action = next_state(DialogueState.new(pack.frame), read, pack)
    assert (action, read.slot_updates) == (Action.ABSTAIN_HAND_OFF, {})
