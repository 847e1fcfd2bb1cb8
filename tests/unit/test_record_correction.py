"""Correcting the record as pure logic (dialogue.desk): which slots and values a correction takes, the state it
leaves and the fixed-text turn that records it."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

import pytest

from dialogue.actions import Action, HumanReview, ReplySource, TurnStatus
from dialogue.conversation import new_conversation, view_turn
from dialogue.desk import (
    STAFF_CORRECTION,
    SlotCorrection,
    StaffMember,
    checked_correction,
    corrected_record,
    correction_reply,
    record_action,
)
from dialogue.errors import UnknownSlotValue
from dialogue.pack import DomainPack
from dialogue.replies import fixed_reply
from dialogue.state import DialogueState

NOW = datetime(2025, 3, 4, 10, 0, tzinfo=UTC)
ANA = StaffMember(subject="ana-subject")


@pytest.mark.parametrize(
    ("slot", "value"), [("program", "astronaut"), ("no_such_slot", "forklift"), ("program", "email"), ("", "")]
)
def test_a_slot_or_value_the_frame_does_not_have_is_refused_without_naming_it(
    pack: DomainPack, slot: str, value: str
) -> None:
    with pytest.raises(UnknownSlotValue) as refused:
        checked_correction(SlotCorrection.model_construct(slot=slot, value=value), pack)
    assert (slot or "?") not in str(refused.value) and (value or "?") not in str(refused.value)


def test_each_slot_takes_each_of_its_own_values(pack: DomainPack) -> None:
    for spec in pack.frame.slots:
        for value in spec.values:
            assert checked_correction(SlotCorrection(slot=spec.name, value=value), pack) == (spec.name, value)


def test_the_correction_is_a_final_fixed_turn_of_staff_that_confirms_the_corrected_record(pack: DomainPack) -> None:
    before = new_conversation(uuid4(), pack, NOW)
    before = before.model_copy(
        update={
            "state": DialogueState(
                slots={"program": "forklift", "childcare_needed": "unknown", "contact_channel": "email"},
                asked="confirm",
            ),
            "version": 4,
            "turn_count": 2,
        }
    )
    state, turn = corrected_record(before, "program", "data_support", pack, ANA, NOW)
    assert state.slots["program"] == "data_support" and state.asked == "confirm"
    assert (turn.turn_id, turn.intent, turn.corrected_by) == (3, STAFF_CORRECTION, "ana-subject")
    assert (turn.action, turn.reply_source, turn.status) == (Action.CONFIRM, ReplySource.FIXED, TurnStatus.FINAL)
    assert turn.human_review is HumanReview.NOT_APPLICABLE and turn.queue is None
    assert turn.slots == state.slots and turn.finalized_at == NOW
    reply = correction_reply(turn, pack)
    assert reply == fixed_reply(Action.CONFIRM, state, pack)
    assert "Data Support Certificate" in reply and "unknown" not in reply


def test_a_record_with_a_choice_still_unknown_is_asked_for_it_not_confirmed(pack: DomainPack) -> None:
    state = DialogueState.new(pack.frame).with_updates({"program": "forklift"})
    assert record_action(state, pack) == Action("request_contact")
    assert record_action(state.with_updates({"contact_channel": "phone"}), pack) is Action.CONFIRM
    before = new_conversation(uuid4(), pack, NOW)
    state, turn = corrected_record(before, "contact_channel", "phone", pack, ANA, NOW)
    assert turn.action == Action("request_program") and state.asked == "request_program"


def test_a_stored_value_todays_pack_no_longer_allows_reads_as_unknown(pack: DomainPack) -> None:
    before = new_conversation(uuid4(), pack, NOW)
    stale = {"program": "welding", "childcare_needed": "yes", "contact_channel": "email"}
    before = before.model_copy(update={"state": DialogueState(slots=stale, waiting_topic="gone_topic")})
    state, turn = corrected_record(before, "childcare_needed", "no", pack, ANA, NOW)
    assert state.slots == {"program": "unknown", "childcare_needed": "no", "contact_channel": "email"}
    assert state.waiting_topic is None and turn.action == Action("request_program")


def test_the_turn_reads_back_as_its_reply_wherever_a_fixed_turn_is_shown(pack: DomainPack) -> None:
    """The resident's view of the turn (dialogue.conversation) rebuilds the same text from its slots."""
    before = new_conversation(uuid4(), pack, NOW)
    _, turn = corrected_record(before, "program", "forklift", pack, ANA, NOW)

    class OneTurn:
        def load_conversation(self, conversation_id: object) -> object:
            return before

        def get_turn(self, conversation_id: object, turn_id: int) -> object:
            return turn

    view = view_turn(OneTurn(), pack, before.conversation_id, turn.turn_id)  # type: ignore[arg-type]
    assert view.reply == correction_reply(turn, pack)
