"""Nothing waits forever: each way a turn used to stay pending ends in the fallback within the bound.

The bound is the reply deadline plus the sweeper's grace plus its schedule's interval: a turn still
pending then is finalized by the sweeper (dialogue.sweep), whatever failed. Time moves through the
stack's clock (`run_for`), not through sleeps.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from devstack.faults import Fault
from devstack.stack import STREAM_MAX_RECORD_AGE, SWEEP_INTERVAL, LocalStack
from dialogue.actions import Action, HumanReview, ReplyScreen, ReplySource, TurnStatus
from dialogue.aws.factory import get_store
from dialogue.aws.table import PENDING_TURN
from dialogue.conversation import new_conversation
from dialogue.pack import get_pack
from dialogue.records import TurnRecord
from dialogue.settings import get_settings


def bound() -> timedelta:
    settings = get_settings()
    return settings.reply_deadline + settings.sweep_grace + timedelta(seconds=SWEEP_INTERVAL)


def pending_turn(stack: LocalStack) -> tuple[str, datetime]:
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    answer = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "Forklift, by email."})
    assert (answer.status, answer.body["status"]) == (202, "pending")
    return conversation_id, stack.clock.now()


def final_by(stack: LocalStack, conversation_id: str, started: datetime) -> dict[str, Any]:
    """Run the stack until the turn is final (at most twice the bound); the turn, and when it ended."""
    turn = stack.stored_turn(conversation_id, 1)
    limit = started + 2 * bound()
    while turn["status"] == "pending" and stack.clock.now() < limit:
        stack.run_for(30, realizer=False)
        turn = stack.stored_turn(conversation_id, 1)
    return turn


def emitted(stack: LocalStack, name: str) -> int:
    return int(stack.metric_total(name))


def assert_fallback_within_bound(stack: LocalStack, conversation_id: str, started: datetime) -> None:
    turn = final_by(stack, conversation_id, started)
    assert turn["status"] == "final", "the turn is still pending past twice the bound"
    assert datetime.fromisoformat(turn["finalized_at"]) <= started + bound()
    assert turn["fallback_used"] and "deadline" in turn["screens_fired"]
    reply = stack.call_api("GET", f"/conversations/{conversation_id}/turns/1").body["reply"]
    assert reply == stack.call_api("GET", f"/conversations/{conversation_id}/messages").body["messages"][0]["text"]
    assert PENDING_TURN not in next(
        item for item in stack.table_items() if item["sk"]["S"] == "TURN#000001" and conversation_id in item["pk"]["S"]
    ), "a final turn left the pending-turn index"


def test_a_dispatch_failing_past_the_streams_hour_ends_in_the_fallback_and_its_failure_is_cleared(
    stack: LocalStack,
) -> None:
    # Every send fails for the whole hour the stream mapping retries: no deadline, no job is ever sent.
    stack.faults.inject("sqs.SendMessage", Fault.UNAVAILABLE, times=10_000)
    conversation_id, started = pending_turn(stack)
    assert_fallback_within_bound(stack, conversation_id, started)
    assert emitted(stack, "StuckTurnsFinalized") == 1
    # The mapping gives up after its hour and describes the batch on the failure queue, which the next
    # sweep clears: the turn it names is final.
    stack.run_for(STREAM_MAX_RECORD_AGE + SWEEP_INTERVAL, step=300, realizer=False)
    assert stack.stream.given_up == 1
    attributes = stack.sqs.get_queue_attributes(QueueUrl=stack.dispatch_failures.url, AttributeNames=["All"])
    assert attributes["Attributes"]["ApproximateNumberOfMessages"] == "0"
    assert emitted(stack, "DispatchFailuresCleared") == 1
    assert emitted(stack, "StuckTurnsFinalized") == 1, "a turn is finalized once"


def test_a_deadline_message_that_reaches_its_dlq_ends_in_the_fallback(stack: LocalStack) -> None:
    # The realizer is down, and the screen function's write fails every time the deadline arrives.
    conversation_id, started = pending_turn(stack)
    stack.faults.inject("dynamodb.TransactWriteItems", Fault.INTERNAL_ERROR, times=5)
    stack.run_for(get_settings().reply_deadline.total_seconds() + 6 * 31, step=31, realizer=False)
    attributes = stack.sqs.get_queue_attributes(QueueUrl=stack.screen_dlq.url, AttributeNames=["All"])
    assert attributes["Attributes"]["ApproximateNumberOfMessages"] == "1", "the deadline rests in the DLQ"
    assert_fallback_within_bound(stack, conversation_id, started)
    assert emitted(stack, "StuckTurnsFinalized") == 1


def test_a_turn_stored_before_a_pack_change_ends_in_the_fallback(stack: LocalStack) -> None:
    """A pending turn names a program today's pack does not have (it was withdrawn after the turn), and
    no deadline message exists for it: the sweeper reads the value as unknown, counts it, and ends it."""
    pack, store = get_pack(), get_store()
    now = stack.clock.now()
    conversation_id = UUID(stack.call_api("POST", "/conversations").body["conversation_id"])
    before = store.load_conversation(conversation_id)
    assert before is not None
    slots = {"program": "welding", "childcare_needed": "unknown", "contact_channel": "email"}
    turn = TurnRecord(
        conversation_id=conversation_id, turn_id=1, intent="enroll", injection_screen=False,
        privileged_request=False, slots=slots, action=Action.CONFIRM, topic=None,
        reply_source=ReplySource.MODEL, status=TurnStatus.PENDING, reply_screen=ReplyScreen.NOT_APPLICABLE,
        human_review=HumanReview.PENDING, created_at=now,
    )  # fmt: skip
    store.commit_turn(before, new_conversation(conversation_id, pack, now).state, turn)
    assert "welding" not in pack.frame.slot("program").values
    stack.faults.inject("sqs.SendMessage", Fault.UNAVAILABLE, times=10_000)  # and its dispatch never lands
    assert_fallback_within_bound(stack, str(conversation_id), now)
    reply = stack.call_api("GET", f"/conversations/{conversation_id}/turns/1").body["reply"]
    assert "{" not in reply and "welding" not in reply
    assert emitted(stack, "StoredValuesUnreadable") >= 1


@pytest.mark.parametrize("overdue", [False, True])
def test_the_sweeper_leaves_a_turn_inside_its_deadline_and_grace_alone(stack: LocalStack, overdue: bool) -> None:
    stack.faults.inject("sqs.SendMessage", Fault.UNAVAILABLE, times=10_000)
    conversation_id, _ = pending_turn(stack)
    settings = get_settings()
    # The stack's clock also runs at the real pace (devstack.stack.QueueClock): inside, the turn is left a
    # margin that a loaded machine's seconds between the turn and the sweep cannot use up.
    wait = settings.reply_deadline + settings.sweep_grace + timedelta(seconds=1 if overdue else -30)
    stack.advance(wait.total_seconds())
    summary = stack.run_sweeper()
    assert summary["finalized"] == int(overdue)
    assert stack.stored_turn(conversation_id, 1)["status"] == ("final" if overdue else "pending")
