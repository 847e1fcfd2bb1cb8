"""The dispatch function, the realizer worker and the screen function on moto: partial failures,
duplicates, fallbacks and the reply deadline."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from pack_files import desk_reply

from devstack.events import FakeLambdaContext, sqs_event
from devstack.stack import LocalStack
from dialogue.human_checks import use_draws
from dialogue.realize import RealizedReply, RealizeJob


def pending_turn(stack: LocalStack, text: str) -> tuple[str, RealizeJob]:
    """Post a turn that needs wording; return its conversation and the job taken off the realize queue."""
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    response = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": text})
    assert response.status == 202
    assert stack.run_dispatch() == 1
    (message,) = stack.sqs.receive_message(QueueUrl=stack.realize_queue.url, MaxNumberOfMessages=10)["Messages"]
    stack.sqs.delete_message(QueueUrl=stack.realize_queue.url, ReceiptHandle=message["ReceiptHandle"])
    return conversation_id, RealizeJob.model_validate_json(message["Body"])


def canned(job: RealizeJob, text: str, **flags: Any) -> str:
    reply = RealizedReply(
        job=job,
        text=text,
        engine="canned",
        ended_by_eos=flags.get("ended_by_eos", True),
        hit_token_cap=flags.get("hit_token_cap", False),
    )
    return reply.model_dump_json()


def turn_detail(stack: LocalStack, conversation_id: str) -> dict[str, Any]:
    """Turn 1 as its resident reads it (status, reply), with the flags the table keeps for the staff."""
    shown = dict(stack.call_api("GET", f"/conversations/{conversation_id}/turns/1").body)
    return {**stack.stored_turn(conversation_id, 1), **shown}


def deliver(stack: LocalStack, bodies: list[str]) -> dict[str, Any]:
    """Send bodies to the screen queue and hand them to the screen Lambda as one batch."""
    for body in bodies:
        stack.sqs.send_message(QueueUrl=stack.screen_queue.url, MessageBody=body)
    messages = stack.sqs.receive_message(
        QueueUrl=stack.screen_queue.url, MaxNumberOfMessages=10, AttributeNames=["All"]
    )["Messages"]
    assert len(messages) == len(bodies)
    import screen_reply

    result = screen_reply.lambda_handler(sqs_event(messages, stack.screen_queue.arn), FakeLambdaContext())
    ids = [message["MessageId"] for message in messages]
    return {"result": result, "ids": ids, "bodies": [message["Body"] for message in messages]}


def test_partial_batch_failure_reports_only_the_bad_record(stack: LocalStack) -> None:
    # Given two pending turns and a malformed message between their replies
    clean_id, clean_job = pending_turn(stack, "I want the Data Support Certificate.")
    tripped_id, tripped_job = pending_turn(stack, "I want the Data Support Certificate.")
    clean = canned(clean_job, "Should staff contact you by phone or by email?")
    tripped = canned(tripped_job, "Staff will contact you via email to discuss your child's needs.")
    # When the screen function gets all three in one batch (and the desk's draw leaves the clean one unchecked)
    with use_draws(lambda: 0.99):
        delivered = deliver(stack, [clean, '{"job": "not a job"}', tripped])
    # Then only the malformed record is reported as failed
    failed = [item["itemIdentifier"] for item in delivered["result"]["batchItemFailures"]]
    bad_index = delivered["bodies"].index('{"job": "not a job"}')
    assert failed == [delivered["ids"][bad_index]]
    # And the clean reply is shown as written while the tripped one falls back and is held
    shown = turn_detail(stack, clean_id)
    assert (shown["status"], shown["reply"], shown["reply_screen"], shown["human_review"]) == (
        "final",
        "Should staff contact you by phone or by email?",
        "not flagged by screen",
        "not drawn",
    )
    held = turn_detail(stack, tripped_id)
    assert held["reply"] == "Should staff contact you by phone or by email?" and held["human_review"] == "pending"
    # (the seed's C1 turn 1 draft: no phone option, no question, and a promise of email: the desk profile's)
    assert (held["reply_screen"], held["screens_fired"], held["fallback_used"]) == (
        "held for human review",
        ["action_slots", "request_asks", "contact_promises"],
        True,
    )


def test_duplicate_delivery_finalizes_once(stack: LocalStack) -> None:
    conversation_id, job = pending_turn(stack, "Forklift, by email please.")
    first = canned(job, "I recorded the Forklift Operator Licence, with contact by email.")
    second = canned(job, "Your seat is guaranteed.")
    deliver(stack, [first])
    result = deliver(stack, [second])["result"]
    assert result["batchItemFailures"] == []
    detail = turn_detail(stack, conversation_id)
    assert detail["reply"] == "I recorded the Forklift Operator Licence, with contact by email."
    assert detail["screens_fired"] == []
    replies = [item for item in stack.table_items() if item["sk"]["S"].endswith("#REPLY")]
    assert len(replies) == 1


def test_token_cap_shows_fallback_but_is_not_flagged(stack: LocalStack) -> None:
    conversation_id, job = pending_turn(stack, "Data Support Certificate by email")
    deliver(stack, [canned(job, "I recorded the Data Support Certificate, email, and", ended_by_eos=False,
                           hit_token_cap=True)])  # fmt: skip
    detail = turn_detail(stack, conversation_id)
    assert detail["reply"] == desk_reply("confirm", program="data_support", contact_channel="email")
    assert detail["reply_screen"] == "not flagged by screen"
    assert set(detail["screens_fired"]) == {"token_cap", "no_eos"}


def test_worker_answers_good_jobs_and_leaves_bad_ones(stack: LocalStack) -> None:
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "When does it meet?"})
    stack.run_dispatch()
    stack.sqs.send_message(QueueUrl=stack.realize_queue.url, MessageBody=json.dumps({"job_id": "x"}))
    answered = stack.realizer.poll_once()
    assert answered == 1
    (reply,) = stack.realized_replies().values()
    assert reply.job.action == "request_program"
    assert reply.engine == "template"
    # The malformed job stays on the queue for a retry (and, past maxReceiveCount, the DLQ).
    attributes = stack.sqs.get_queue_attributes(
        QueueUrl=stack.realize_queue.url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "1"


def test_realize_job_rejects_unknown_fields(stack: LocalStack) -> None:
    _, job = pending_turn(stack, "I want the Data Support Certificate.")
    payload = json.loads(job.model_dump_json())
    payload["user_text"] = "smuggled"
    import pydantic
    import pytest

    with pytest.raises(pydantic.ValidationError) as raised:
        RealizeJob.model_validate(payload)
    assert "smuggled" not in str(raised.value)


DEADLINE_SECONDS = 60
FORKLIFT_BY_PHONE_FALLBACK = desk_reply("confirm", program="forklift", contact_channel="phone")


def stored_turn(stack: LocalStack, conversation_id: str, turn_id: int = 1) -> dict[str, Any]:
    """The TURN item and its REPLY item as the table holds them, read without the API."""
    items = {item["sk"]["S"]: item for item in stack.table_items() if item["pk"]["S"] == f"CONV#{conversation_id}"}
    turn = items[f"TURN#{turn_id:06d}"]
    reply = items.get(f"TURN#{turn_id:06d}#REPLY")
    return {
        "status": turn["status"]["S"],
        "screens_fired": set(turn.get("screens_fired", {"SS": []})["SS"]),
        "fallback_used": turn.get("fallback_used", {"BOOL": False})["BOOL"],
        "reply": reply["reply"]["S"] if reply else None,
    }


def test_deadline_holds_with_the_realizer_stopped_and_no_reader(stack: LocalStack) -> None:
    # Given a generated turn, dispatched, with the realizer stopped and nobody reading the turn
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "Forklift, by phone."})
    assert stack.run_dispatch() == 1
    # Before the deadline the screen function has nothing to do and the turn stays pending
    assert stack.run_screen_function() == 0
    stack.advance(DEADLINE_SECONDS - 5)
    assert stack.run_screen_function() == 0
    assert stored_turn(stack, conversation_id)["status"] == "pending"
    # When the deadline passes, the screen function alone stores the fixed fallback
    stack.advance(5)
    assert stack.run_screen_function() == 1
    assert stored_turn(stack, conversation_id) == {
        "status": "final",
        "screens_fired": {"deadline"},
        "fallback_used": True,
        "reply": FORKLIFT_BY_PHONE_FALLBACK,
    }
    assert stack.pending_turns() == []
    assert any('"DeadlineFallbacks"' in line for line in stack.log_lines)
    # And the API shows it as such
    detail = turn_detail(stack, conversation_id)
    assert (detail["status"], detail["reply"], detail["screens_fired"]) == (
        "final",
        FORKLIFT_BY_PHONE_FALLBACK,
        ["deadline"],
    )
    assert (detail["reply_screen"], detail["human_review"]) == ("not applicable", "not applicable")


def test_a_late_realization_does_not_overwrite_the_deadline_fallback(stack: LocalStack) -> None:
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "Forklift, by phone."})
    stack.run_dispatch()
    stack.advance(DEADLINE_SECONDS)
    assert stack.run_screen_function() == 1  # the deadline, before the realizer ran
    # When the realizer answers late
    stack.drain()
    assert stack.realized_replies(), "the realizer did answer"
    detail = turn_detail(stack, conversation_id)
    assert (detail["reply"], detail["screens_fired"]) == (FORKLIFT_BY_PHONE_FALLBACK, ["deadline"])
    assert any('"DuplicateRepliesIgnored"' in line for line in stack.log_lines)


def test_a_deadline_after_the_reply_changes_nothing(stack: LocalStack) -> None:
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "Forklift, by phone."})
    stack.drain()
    before = stored_turn(stack, conversation_id)
    assert before["status"] == "final"
    stack.advance(DEADLINE_SECONDS)
    assert stack.run_screen_function() == 1
    assert stored_turn(stack, conversation_id) == before
    assert any('"DeadlinesMet"' in line for line in stack.log_lines)


def test_reading_a_turn_never_writes_and_counts_one_stuck_past_its_deadline(stack: LocalStack, monkeypatch) -> None:
    import turn_api

    # Given a generated turn whose deadline message never ran, read ten minutes later
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "Forklift, by phone."})
    later = turn_api._now() + timedelta(minutes=10)
    monkeypatch.setattr(turn_api, "_now", lambda: later)
    before = stack.table_items()
    # Then the read shows it pending, writes nothing, and counts it for the alarm
    detail = turn_detail(stack, conversation_id)
    assert (detail["status"], detail["reply"]) == ("pending", None)
    assert stack.table_items() == before
    assert any('"TurnsPendingPastDeadline"' in line for line in stack.log_lines)


def test_before_the_deadline_a_turn_stays_pending(stack: LocalStack) -> None:
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "Forklift, by phone."})
    detail = turn_detail(stack, conversation_id)
    assert (detail["status"], detail["reply"]) == ("pending", None)


def emitted(stack: LocalStack, name: str) -> list[Any]:
    """The values of one EMF metric the functions logged."""
    values = []
    for line in stack.log_lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "_aws" in record and name in record:
            values.append(record[name])
    return values


def screened(stack: LocalStack, body: str) -> None:
    """A realized reply through the screen queue and the screen function, as in AWS."""
    stack.sqs.send_message(QueueUrl=stack.screen_queue.url, MessageBody=body)
    assert stack.run_screen_function() == 1


def test_the_screen_function_counts_held_replies_and_their_time_for_the_alarms(stack: LocalStack) -> None:
    # A clean reply: screened and timed, not held
    conversation_id, job = pending_turn(stack, "Data Support Certificate by email")
    screened(stack, canned(job, "I recorded the Data Support Certificate, with contact by email."))
    assert turn_detail(stack, conversation_id)["reply_screen"] == "not flagged by screen"
    assert emitted(stack, "RepliesHeld") == []
    (seconds,) = emitted(stack, "ReplySeconds")
    assert 0 <= (seconds[0] if isinstance(seconds, list) else seconds) < 60
    # A reply a screen holds: counted once, for the held-rate alarm
    conversation_id, job = pending_turn(stack, "Forklift, by phone.")
    screened(stack, canned(job, "Your seat is guaranteed for the Forklift Operator Licence, by phone."))
    assert turn_detail(stack, conversation_id)["reply_screen"] == "held for human review"
    assert len(emitted(stack, "RepliesHeld")) == 1
    assert len(emitted(stack, "ReplySeconds")) == 2
