"""The slot a topic's answer raises (`[[topics]]` `raises`): after the desk answers about the creche, the
resident's next turn may say whether they need it, as "yes please", "nah" or "i'll need it". The state keeps
the topic for one turn (`DialogueState.answered_topic`, a pack name), never the words."""

from __future__ import annotations

from pathlib import Path

import pytest

from dialogue.pack import DomainPack, get_pack, load_pack
from dialogue.pack.loader import PackError
from dialogue.policy import next_state
from dialogue.state import DialogueState
from dialogue.understanding import understand
from tests.conversation_turns import Turn, talk
from tests.pack_files import edit_domain

RIVERTON = Path(__file__).resolve().parents[2] / "data" / "riverton"
LIBRARY = Path(__file__).resolve().parents[2] / "data" / "harbourview_library"


@pytest.fixture(scope="module")
def pack() -> DomainPack:
    return get_pack(RIVERTON)


CRECHE = ("do you have a creche?", "inform", {"childcare_needed": "unknown"})

CONVERSATIONS: dict[str, list[Turn]] = {
    "yes please after the creche's answer": [CRECHE, ("yes please", "request_program", {"childcare_needed": "yes"})],
    "nah after it": [CRECHE, ("nah", "request_program", {"childcare_needed": "no"})],
    "it is the creche": [
        ("i want to do forklift", "request_contact", {"program": "forklift"}),
        CRECHE,
        ("brill, i'll need it", "request_contact", {"childcare_needed": "yes"}),
        ("text me", "confirm", {"contact_channel": "phone", "childcare_needed": "yes"}),
    ],
    "that is the creche, said with a program": [
        CRECHE,
        (
            "ok well i dont actually need it my partner minds them, sign me up for data support",
            "request_contact",
            {"program": "data_support", "childcare_needed": "no"},
        ),
    ],
    "we won't need that": [CRECHE, ("we won't need that", "request_program", {"childcare_needed": "no"})],
    "ok thanks is no yes": [CRECHE, ("ok thanks", "request_program", {"childcare_needed": "unknown"})],
    "a question about it is asked, not a need": [
        CRECHE,
        ("is it free?", "inform", {"childcare_needed": "unknown"}),
    ],
    "it lasts one turn": [
        CRECHE,
        ("when is the front desk open?", "inform", {}),
        ("yes please", "request_program", {"childcare_needed": "unknown"}),
    ],
    "after the confirmation, a need for it is recorded and not confirmed again": [
        ("data support", "request_contact", {}),
        ("email", "confirm", {}),
        CRECHE,
        ("yes i'd need it", "next_step", {"childcare_needed": "yes"}),
    ],
}


@pytest.mark.parametrize("name", CONVERSATIONS)
def test_the_creches_answer_raises_the_child_care_slot(pack: DomainPack, name: str) -> None:
    talk(pack, CONVERSATIONS[name])


def test_the_state_keeps_the_topic_for_one_turn_by_name(pack: DomainPack) -> None:
    state = talk(pack, [CRECHE])
    assert state.answered_topic == "child_care"
    state, _ = next_state(state, understand("thanks", pack, state.asked, answered_topic=state.answered_topic), pack)
    assert state.answered_topic is None


@pytest.mark.parametrize("text", ["yes please", "yes please i need it", "i'll need it", "nah"])
def test_without_the_creches_answer_the_same_words_set_no_child_care(pack: DomainPack, text: str) -> None:
    state, _ = next_state(DialogueState.new(pack.frame), understand(text, pack), pack)
    assert state.get("childcare_needed") == "unknown" and state.answered_topic is None


def test_another_topics_answer_raises_nothing(pack: DomainPack) -> None:
    state = talk(pack, [("when is the front desk open?", "inform", {})])
    assert state.answered_topic is None


def test_a_desk_without_raised_slots_keeps_none(pack: DomainPack) -> None:
    library = get_pack(LIBRARY)
    assert not any(topic.raises for topic in library.spec.topics)
    state = DialogueState.new(library.frame)
    for text in ("what time do you open?", "yes please"):
        read = understand(text, library, state.asked, answered_topic=state.answered_topic)
        state, _ = next_state(state, read, library)
        assert state.answered_topic is None


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        ('raises = "childcare_needed"', 'raises = "pet_name"', r"entry \d+, field raises: 'pet_name' is no slot"),
        ('raises = "childcare_needed"', 'raises = "contact_channel"', r"raises: contact_channel holds no yes and no"),
        ('raises = "childcare_needed"\n', "", r"raised_as: names the words of a raised slot; set raises too"),
    ],
)
def test_a_raised_slot_the_frame_cannot_hold_is_a_pack_error(pack_copy: Path, old: str, new: str, error: str) -> None:
    edit_domain(pack_copy, old, new)
    with pytest.raises(PackError, match=error):
        load_pack(pack_copy)
