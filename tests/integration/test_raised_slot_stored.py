"""The topic the desk's last answer raised a slot with is kept in the STATE item by its name, for one turn, and a
staff correction of the record clears it: through the turn and staff APIs, on moto."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from desk_calls import new_conversation, say, staff, stored_state
from test_correct_record import forklift_confirmed, review, word_pending

from devstack.stack import LocalStack
from dialogue.human_checks import use_draws


@pytest.fixture(autouse=True)
def every_shown_reply_drawn() -> Iterator[None]:
    with use_draws(lambda: 0.0):
        yield


def test_the_creches_answer_is_kept_by_topic_name_and_the_next_yes_needs_child_care(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    asked = say(stack, conversation_id, "Do you have a creche?")
    assert asked["action"] == "inform"
    assert stored_state(stack, conversation_id)["answered_topic"] == {"S": "child_care"}

    answered = say(stack, conversation_id, "yes please")
    assert answered["action"] == "request_program"
    assert stack.stored_turn(conversation_id, 2)["slots"]["childcare_needed"] == "yes"
    assert "answered_topic" not in stored_state(stack, conversation_id)
    assert "yes please" not in str(stack.table_items())


def test_a_staff_correction_clears_it_so_the_next_yes_answers_the_read_back(stack: LocalStack) -> None:
    conversation_id, confirm = forklift_confirmed(stack)
    say(stack, conversation_id, "is there a creche for kids?")
    word_pending(stack, "There is a free creche on Tuesday and Thursday evenings.")
    assert stored_state(stack, conversation_id)["answered_topic"] == {"S": "child_care"}

    path = review(conversation_id, confirm)
    staff(stack, "POST", f"{path}/claim")
    staff(stack, "POST", f"{path}/slots", {"slot": "program", "value": "data_support"})
    assert "answered_topic" not in stored_state(stack, conversation_id)

    turn = say(stack, conversation_id, "yes please")
    assert turn["action"] == "next_step"
    state = stored_state(stack, conversation_id)["slots"]["M"]
    assert (state["program"], state["childcare_needed"]) == ({"S": "data_support"}, {"S": "unknown"})
