"""A question asked before its slot is known waits in the stored state, by its topic's name, and the turn
that fills the slot answers it: through the turn API, on moto."""

from __future__ import annotations

from desk_calls import stored_state

from devstack.stack import LocalStack


def test_an_early_question_waits_in_the_table_and_is_answered_when_the_program_comes(stack: LocalStack) -> None:
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    asked = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "When does it meet?"})
    assert (asked.status, asked.body["action"]) == (202, "request_program")
    assert stored_state(stack, conversation_id)["waiting_topic"] == {"S": "schedule"}

    answered = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "The forklift course."})
    assert (answered.status, answered.body["action"]) == (202, "inform")
    assert stack.stored_turn(conversation_id, 2)["topic"] == "schedule"
    assert "waiting_topic" not in stored_state(stack, conversation_id)
    assert stack.run_dispatch() == 2
    jobs = stack.sqs.receive_message(QueueUrl=stack.realize_queue.url, MaxNumberOfMessages=10)["Messages"]
    assert any('"topic":"schedule"' in message["Body"] and "H11" in message["Body"] for message in jobs)
