"""A frame-driven policy: a desk's slots, its request actions, and the order the policy asks in.

Every desk has five actions of its own kind (refuse, abstain_hand_off, hand_off, confirm, inform) and one
request action per slot it asks for, named by the pack (`request_<name>`); the policy asks for the first
unknown one in the frame's order and confirms when none is left.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pack_files import edit_domain
from pydantic import TypeAdapter, ValidationError

from dialogue.actions import FIXED_ACTIONS, HANDED_OFF, Action
from dialogue.pack import PackError, load_pack
from dialogue.policy import next_state, turn_topic
from dialogue.replies import fixed_reply
from dialogue.state import DialogueState
from dialogue.understanding import understand

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"


def test_an_action_is_a_fixed_one_or_a_request_for_a_slot() -> None:
    assert Action("request_interpreter_needed") is Action("request_interpreter_needed")
    assert Action("inform") is Action.INFORM and str(Action.INFORM) == "inform"
    assert Action("request_program") is Action.REQUEST_PROGRAM
    assert Action("request_vaccine").uses_model and Action.CONFIRM.uses_model and not Action.HAND_OFF.uses_model
    assert not Action.CLARIFY.uses_model
    fixed = "refuse abstain_hand_off hand_off clarify confirm inform next_step"
    assert [str(action) for action in FIXED_ACTIONS] == fixed.split()
    assert Action("request_vaccine") not in FIXED_ACTIONS  # a desk's request actions are its own
    for name in ("approve", "request_", "Request_x", "request x", "enrol_me", ""):
        with pytest.raises(ValueError, match="names no action"):
            Action(name)
    adapter = TypeAdapter(Action)
    assert adapter.validate_python("request_vaccine") is Action("request_vaccine")
    assert adapter.dump_json(Action.REFUSE) == b'"refuse"'
    with pytest.raises(ValidationError):
        adapter.validate_python("approve")


def test_the_library_asks_for_each_of_its_slots_in_turn() -> None:
    pack = load_pack(DATA / "harbourview_library")
    assert pack.actions == (
        Action.REFUSE, Action.ABSTAIN_HAND_OFF, Action.HAND_OFF, Action.CLARIFY, Action("request_program"),
        Action("request_visit_part_of_day"), Action("request_contact"), Action.CONFIRM, Action.INFORM, Action.NEXT_STEP,
    )  # fmt: skip
    state = DialogueState.new(pack.frame)
    asked = []
    for text in ("Hello there.", "A library card, please.", "Mornings suit me.", "Texts are fine."):
        state, action = next_state(state, understand(text, pack), pack)
        asked.append(str(action))
    assert asked == ["request_program", "request_visit_part_of_day", "request_contact", "confirm"]
    assert dict(state.slots) == {"service": "library_card", "visit_part_of_day": "morning", "reply_channel": "sms"}


def test_the_bulky_waste_desk_asks_for_each_of_its_three_slots_in_turn() -> None:
    """The third desk, written from the starter (data/eastgate_bulky_waste): three slots, three requests."""
    pack = load_pack(DATA / "eastgate_bulky_waste")
    requests = [str(action) for action in pack.actions if action.is_request]
    assert requests == ["request_program", "request_carry_help", "request_contact"]
    state = DialogueState.new(pack.frame)
    asked = []
    for text in ("I'd like a collection.", "An old sofa.", "Yes, please carry it out.", "Email me."):
        state, action = next_state(state, understand(text, pack), pack)
        asked.append(str(action))
    assert asked == [*requests, "confirm"]
    assert dict(state.slots) == {"item_kind": "furniture", "carry_help": "yes", "reply_channel": "email_reply"}
    assert fixed_reply(Action.CONFIRM, state, pack) == (
        "I noted your request for a bulky furniture collection, with the crew carrying the items out. The waste "
        "team will set the date and the fee. For a reply by email, leave your details in the form below the "
        "chat; until then the team answers here in this chat."
    )


def test_a_slot_given_early_is_not_asked_for() -> None:
    pack = load_pack(DATA / "harbourview_library")
    state, action = next_state(
        DialogueState.new(pack.frame), understand("A meeting room in the evening, please.", pack), pack
    )
    assert (action, state.get("visit_part_of_day")) == (Action("request_contact"), "evening")


def test_a_request_action_must_be_a_request(pack_copy: Path) -> None:
    edit_domain(pack_copy, 'request_action = "request_contact"', 'request_action = "confirm"')
    with pytest.raises(PackError, match=r"frame.slots, entry 3, field request_action: confirm is no request action"):
        load_pack(pack_copy)


def test_one_request_action_per_slot(pack_copy: Path) -> None:
    edit_domain(pack_copy, 'request_action = "request_contact"', 'request_action = "request_program"')
    with pytest.raises(PackError, match="request_program asks for another slot too; one per slot"):
        load_pack(pack_copy)


def test_an_action_no_slot_asks_with_is_refused(pack_copy: Path) -> None:
    pets = '[actions.request_pets]\ninstruction = "x"\nfixed_text = "y"\n\n[actions.confirm]'
    edit_domain(pack_copy, "[actions.confirm]", pets)
    with pytest.raises(PackError, match=r"table actions: \['request_pets'\] ask for no slot"):
        load_pack(pack_copy)


def test_a_slots_request_action_needs_its_texts(pack_copy: Path) -> None:
    edit_domain(pack_copy, 'request_action = "request_contact"', 'request_action = "request_contact_channel"')
    with pytest.raises(PackError, match=r"table actions: lacks \['request_contact_channel'\]"):
        load_pack(pack_copy)


def test_a_misspelt_action_table_is_refused(pack_copy: Path) -> None:
    edit_domain(pack_copy, "[actions.inform]", "[actions.informs]")
    with pytest.raises(PackError, match="names no action"):
        load_pack(pack_copy)


def _talk(pack_dir: Path, texts: list[str], profile: str | None = None) -> list[tuple[str, str | None, str | None]]:
    """Each turn's action, the topic its reply is about, and the question left waiting."""
    pack = load_pack(pack_dir, profile=profile)
    state = DialogueState.new(pack.frame)
    said = []
    for text in texts:
        understood, before = understand(text, pack), state
        state, action = next_state(state, understood, pack)
        said.append((str(action), turn_topic(understood, action, before), state.waiting_topic))
    return said


@pytest.mark.parametrize(
    ("desk", "texts", "expected"),
    [
        (
            "riverton",
            ["When does it meet?", "The forklift course.", "Email me."],
            [("request_program", None, "schedule"), ("inform", "schedule", None), ("confirm", None, None)],
        ),
        (
            "harbourview_library",
            ["How do I cancel?", "It's a meeting room booking.", "Evenings."],
            [("request_program", None, "cancellation"), ("inform", "cancellation", None),
             ("request_contact", None, None)],
        ),
        (
            "eastgate_bulky_waste",
            ["How much does it cost?", "It's an old fridge freezer.", "I'll put it at the kerb myself."],
            [("request_program", None, "fees"), ("inform", "fees", None), ("request_contact", None, None)],
        ),
    ],
)  # fmt: skip
def test_an_early_question_is_answered_once_its_slot_is_filled(
    desk: str, texts: list[str], expected: list[tuple[str, str | None, str | None]]
) -> None:
    assert _talk(DATA / desk, texts) == expected


def test_the_wait_ends_with_another_question_and_survives_a_turn_that_gives_another_slot() -> None:
    said = _talk(DATA / "riverton", ["When does it meet?", "I need childcare.", "Forklift."])
    assert said == [
        ("request_program", None, "schedule"),
        ("request_program", None, "schedule"),
        ("inform", "schedule", None),
    ]
    said = _talk(DATA / "riverton", ["When does it meet?", "Can I talk to a person?", "Forklift."])
    assert [action for action, _, _ in said] == ["request_program", "hand_off", "request_contact"]


def test_the_lesson_profile_keeps_no_question_waiting() -> None:
    said = _talk(DATA / "riverton", ["When does it meet?", "The forklift course."], profile="lesson")
    assert said == [("request_program", None, None), ("request_contact", None, None)]


def test_a_waiting_question_is_kept_as_its_topics_name() -> None:
    pack = load_pack(DATA / "riverton")
    state, _ = next_state(DialogueState.new(pack.frame), understand("When does it meet?", pack), pack)
    assert state.model_dump() == {
        "slots": {"program": "unknown", "childcare_needed": "unknown", "contact_channel": "unknown"},
        "waiting_topic": "schedule",
        "asked": "request_program",
        "answered_topic": None,
    }


@pytest.mark.parametrize("desk", ["riverton", "harbourview_library"])
def test_a_correction_it_cannot_read_is_clarified_never_confirmed(desk: str) -> None:
    pack = load_pack(DATA / desk)
    first = {
        "riverton": "I want the Data Support Certificate, email me.",
        "harbourview_library": "A library card, by post.",
    }
    state, _ = next_state(DialogueState.new(pack.frame), understand(first[desk], pack), pack)
    known = dict(state.slots)
    for text in ("Sorry, I meant the other one.", "Actually, scratch that.", "No wait, I meant the thing from before."):
        after, action = next_state(state, understand(text, pack), pack)
        assert (action, dict(after.slots)) == (Action.CLARIFY, known), text
        assert not action.uses_model and action not in HANDED_OFF
        assert pack.action(action).fixed_text.startswith("I did not catch what you want to change.")
    # A correction that names a value is read, and nothing is clarified before any slot holds one.
    assert next_state(state, understand("Actually, make that by text.", pack), pack)[1] is not Action.CLARIFY
    fresh = DialogueState.new(pack.frame)
    assert next_state(fresh, understand("Sorry, I meant the other one.", pack), pack)[1] is not Action.CLARIFY
