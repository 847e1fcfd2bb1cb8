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
from pack_files import desk_reply

from devstack.faults import Fault
from devstack.stack import STREAM_MAX_RECORD_AGE, SWEEP_INTERVAL, LocalStack
from dialogue.actions import Action, HumanReview, ReplyScreen, ReplySource, TurnStatus
from dialogue.aws.factory import get_store
from dialogue.aws.table import PENDING_TURN
from dialogue.conversation import new_conversation
from dialogue.pack import get_pack
from dialogue.ports import TurnCommit
from dialogue.records import TurnRecord
from dialogue.replies import GENERIC_FALLBACK
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
    no deadline message exists for it: the sweeper counts the value unreadable and ends the turn with the
    desk's generic fallback (the confirm's own text would read the program as unknown)."""
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
    store.commit_turn(TurnCommit(before, new_conversation(conversation_id, pack, now).state, turn))
    assert "welding" not in pack.frame.slot("program").values
    stack.faults.inject("sqs.SendMessage", Fault.UNAVAILABLE, times=10_000)  # and its dispatch never lands
    assert_fallback_within_bound(stack, str(conversation_id), now)
    reply = stack.call_api("GET", f"/conversations/{conversation_id}/turns/1").body["reply"]
    assert "{" not in reply and "welding" not in reply
    assert reply == GENERIC_FALLBACK
    assert emitted(stack, "StoredValuesUnreadable") >= 1
    assert emitted(stack, "StaleTurnsFinalized") == 1


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


# --- issue 41, item 1: a turn that outlived its pack stops neither the sweeper nor its deadline -------------

SLOTS = {"program": "forklift", "childcare_needed": "unknown", "contact_channel": "email"}
# A request for the contact slot under its earlier name: today's pack has no such action.
RENAMED_REQUEST = Action("request_contact_method")


def store_pending_turn(
    stack: LocalStack, action: Action, slots: dict[str, str], topic: str | None = None, *, at: datetime | None = None
) -> UUID:
    """A new conversation whose first turn is pending as an earlier version of the pack stored it."""
    pack, store = get_pack(), get_store()
    now = at or stack.clock.now()
    conversation_id = UUID(stack.call_api("POST", "/conversations").body["conversation_id"])
    before = store.load_conversation(conversation_id)
    assert before is not None
    turn = TurnRecord(
        conversation_id=conversation_id, turn_id=1, intent="enroll", injection_screen=False,
        privileged_request=False, slots=slots, action=action, topic=topic,
        reply_source=ReplySource.MODEL, status=TurnStatus.PENDING, reply_screen=ReplyScreen.NOT_APPLICABLE,
        human_review=HumanReview.PENDING, created_at=now,
    )  # fmt: skip
    store.commit_turn(TurnCommit(before, new_conversation(conversation_id, pack, now).state, turn))
    return conversation_id


def deadlines_sent(stack: LocalStack, conversation_id: UUID) -> list[str]:
    """The bodies of the ReplyDeadline messages sent for the conversation's turn, in order."""
    return [
        message["body"]
        for message in stack.sent_messages
        if message["queue_url"] == stack.screen_queue.url
        and '"kind":"deadline"' in message["body"]
        and str(conversation_id) in message["body"]
    ]


def test_a_request_for_a_renamed_slot_ahead_of_a_confirm_no_longer_stops_the_sweeper(stack: LocalStack) -> None:
    """The issue's case on the stack: the sweeper read oldest first and died on the request every run
    (KeyError: the pack has no such action), so 0 of the 2 turns were finalized. Both are now."""
    start = stack.clock.now()
    stale = store_pending_turn(stack, RENAMED_REQUEST, {**SLOTS, "contact_channel": "unknown"}, at=start)
    confirm = store_pending_turn(stack, Action.CONFIRM, SLOTS, at=start + timedelta(seconds=1))
    # No dispatch runs, so no deadline was sent: the sweeper is all that ends them.
    stack.advance((bound() + timedelta(seconds=5)).total_seconds())
    summary = stack.run_sweeper()
    assert (summary["finalized"], summary["stale"], summary["failed"], summary["complete"]) == (2, 1, 0, True)
    assert stack.pending_turns() == []
    reply = stack.call_api("GET", f"/conversations/{stale}/turns/1").body["reply"]
    assert reply == GENERIC_FALLBACK
    assert stack.call_api("GET", f"/conversations/{confirm}/turns/1").body["reply"] == desk_reply(
        "confirm", program="forklift", contact_channel="email"
    )
    assert (emitted(stack, "StaleTurnsFinalized"), emitted(stack, "TurnsNotSwept")) == (1, 0)


def test_a_turn_the_sweeper_fails_on_is_logged_by_its_ids_and_the_sweep_goes_on(stack: LocalStack) -> None:
    start = stack.clock.now()
    first = store_pending_turn(stack, Action.CONFIRM, SLOTS, at=start)
    second = store_pending_turn(stack, Action.CONFIRM, SLOTS, at=start + timedelta(seconds=1))
    stack.advance((bound() + timedelta(seconds=5)).total_seconds())
    stack.faults.inject("dynamodb.TransactWriteItems", Fault.INTERNAL_ERROR, times=1)  # the first turn's write
    summary = stack.run_sweeper()
    assert (summary["finalized"], summary["failed"], summary["complete"]) == (1, 1, False)
    assert stack.pending_turns() == [(str(first), 1)]
    assert stack.stored_turn(str(second), 1)["status"] == "final"
    (line,) = [line for line in stack.log_lines if "overdue turn not finalized" in line]
    assert str(first) in line and '"turn_id":1' in line and "StoreUnavailable" in line
    assert emitted(stack, "TurnsNotSwept") == 1
    # The next run finalizes it.
    assert stack.run_sweeper()["finalized"] == 1 and stack.pending_turns() == []


def test_a_stale_turns_deadline_ends_it_with_the_generic_fallback_and_sends_once(stack: LocalStack) -> None:
    """The dispatch sent the deadline, then failed building the job (KeyError), so the stream retried it,
    sending another deadline each time; the screen function then failed each deadline (KeyError) to the
    DLQ. Now the deadline alone is sent, once, and ends the turn with the generic fallback, counted."""
    conversation_id = store_pending_turn(stack, RENAMED_REQUEST, {**SLOTS, "contact_channel": "unknown"})
    started = stack.clock.now()
    stack.run_for(get_settings().reply_deadline.total_seconds() + 31, step=10, realizer=False)
    turn = stack.stored_turn(str(conversation_id), 1)
    assert turn["status"] == "final" and "deadline" in turn["screens_fired"]
    assert datetime.fromisoformat(turn["finalized_at"]) < started + bound() - timedelta(seconds=SWEEP_INTERVAL)
    assert stack.call_api("GET", f"/conversations/{conversation_id}/turns/1").body["reply"] == GENERIC_FALLBACK
    assert len(deadlines_sent(stack, conversation_id)) == 1
    assert stack.stream.failed_batches == 0
    attributes = stack.sqs.get_queue_attributes(QueueUrl=stack.screen_dlq.url, AttributeNames=["All"])
    assert attributes["Attributes"]["ApproximateNumberOfMessages"] == "0"
    assert (emitted(stack, "JobsWithheld"), emitted(stack, "StaleTurnsFinalized")) == (1, 1)
    assert (emitted(stack, "ScreenRecordsFailed"), emitted(stack, "StuckTurnsFinalized")) == (0, 0)


@pytest.mark.parametrize(
    ("action", "slots", "topic"),
    [(RENAMED_REQUEST, {**SLOTS, "contact_channel": "unknown"}, None), (Action.INFORM, SLOTS, "evening_classes")],
    ids=["action gone", "topic gone"],
)
def test_stream_polls_of_a_turn_whose_job_cannot_be_built_send_one_deadline_and_never_fail(
    stack: LocalStack, action: Action, slots: dict[str, str], topic: str | None
) -> None:
    """Building the job can never succeed for this turn under this pack: it used to fail the record after
    its deadline was sent, on each of the stream's retries (and hold the shard for the stream's hour)."""
    conversation_id = store_pending_turn(stack, action, slots, topic)
    for _ in range(5):
        stack.run_dispatch()
        stack.advance(1)
    assert len(deadlines_sent(stack, conversation_id)) == 1
    assert stack.stream.failed_batches == 0
    assert not [m for m in stack.sent_messages if m["queue_url"] == stack.realize_queue.url]
    stack.run_for(get_settings().reply_deadline.total_seconds(), realizer=False)
    assert stack.stored_turn(str(conversation_id), 1)["status"] == "final"


def test_a_redelivered_turn_sends_the_same_deadline_and_only_the_first_ends_it(stack: LocalStack) -> None:
    """SQS standard queues cannot send once (and FIFO queues have no per-message delay): a record delivered
    again (its batch retried for another record) sends its deadline again. The copies are one message,
    and the screen function drops every one after the first as "turn already final"."""
    conversation_id = store_pending_turn(stack, RENAMED_REQUEST, {**SLOTS, "contact_channel": "unknown"})
    for _ in range(3):
        stack.stream.positions.clear()  # the mapping reads the shard from its start again
        stack.stream.poll()
    sent = deadlines_sent(stack, conversation_id)
    assert len(sent) == 3 and len(set(sent)) == 1
    stack.run_for(get_settings().reply_deadline.total_seconds() + 31, realizer=False)
    assert stack.stored_turn(str(conversation_id), 1)["status"] == "final"
    assert (emitted(stack, "DeadlineFallbacks"), emitted(stack, "DeadlinesMet")) == (1, 2)
    assert emitted(stack, "StaleTurnsFinalized") == 1
