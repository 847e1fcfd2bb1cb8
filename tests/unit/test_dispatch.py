"""The outbox's logic: what a pending turn sends, in what order, and when its deadline falls due.

The queues here are the in-memory adapter (tests/memory_adapters.py, no AWS): tests/integration runs the same
path on moto.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from dialogue.actions import Action, HumanReview, ReplyScreen, ReplySource, TurnStatus
from dialogue.aws.turns import PENDING_TURN_INSERTS, is_pending_turn_insert
from dialogue.dispatch import MAX_SQS_DELAY_SECONDS, deadline_delay_seconds, dispatch_pending_turn
from dialogue.pack import DomainPack
from dialogue.realize import RealizeJob, ReplyDeadline
from dialogue.records import TurnRecord
from tests.memory_adapters import MemoryDispatchQueues

CREATED = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
DEADLINE = timedelta(seconds=60)


def pending_turn(pack: DomainPack, action: Action = Action.CONFIRM, **changes: object) -> TurnRecord:
    slots = {"program": "forklift", "childcare_needed": "unknown", "contact_channel": "email"}
    values: dict[str, object] = {
        "conversation_id": uuid4(),
        "turn_id": 3,
        "intent": "enrollment",
        "injection_screen": False,
        "privileged_request": False,
        "slots": slots,
        "action": action,
        "reply_source": ReplySource.MODEL,
        "status": TurnStatus.PENDING,
        "reply_screen": ReplyScreen.NOT_APPLICABLE,
        "human_review": HumanReview.PENDING,
        "created_at": CREATED,
        **changes,
    }
    return TurnRecord.model_validate(values)


def test_the_deadline_goes_first_then_the_job_built_from_the_stored_turn(pack: DomainPack) -> None:
    turn = pending_turn(pack)
    queues = MemoryDispatchQueues()
    dispatch_pending_turn(turn, queues=queues, pack=pack, now=CREATED + timedelta(seconds=2), reply_deadline=DEADLINE)
    (kind1, deadline, delay), (kind2, job, _) = queues.sent
    assert (kind1, kind2) == ("deadline", "job")
    assert isinstance(deadline, ReplyDeadline)
    assert (deadline.conversation_id, deadline.turn_id, deadline.action) == (turn.conversation_id, 3, Action.CONFIRM)
    assert deadline.slots == turn.slots
    assert deadline.due_at == CREATED + DEADLINE
    assert delay == 58
    assert isinstance(job, RealizeJob)
    # The job is the stored turn's: its ids, action, slots and creation time, not the dispatch's.
    assert job.job_id == f"{turn.conversation_id}/3"
    assert (job.conversation_id, job.turn_id, job.action, job.slots) == (
        turn.conversation_id,
        3,
        Action.CONFIRM,
        turn.slots,
    )
    assert job.created_at == CREATED
    system, user = job.messages
    assert (system.role, user.role) == ("system", "user")
    # The prompt is built from the state and the action: the slot values' labels are in it.
    assert "forklift" in user.content.lower() and "email" in user.content.lower()
    # A redelivery an hour later sends the same job, word for word.
    again = MemoryDispatchQueues()
    dispatch_pending_turn(turn, queues=again, pack=pack, now=CREATED + timedelta(hours=1), reply_deadline=DEADLINE)
    assert again.sent[1][1] == job


@pytest.mark.parametrize(
    ("elapsed_s", "deadline_s", "delay"),
    [
        (0, 60, 60),
        (0.2, 60, 60),
        (59.9, 60, 1),
        (60, 60, 0),
        (3600, 60, 0),
        (0, 900, 900),
        (0, 5000, MAX_SQS_DELAY_SECONDS),
    ],
)
def test_the_deadline_delay_rounds_up_and_fits_sqs(elapsed_s: float, deadline_s: int, delay: int) -> None:
    due = CREATED + timedelta(seconds=deadline_s)
    assert deadline_delay_seconds(due, CREATED + timedelta(seconds=elapsed_s)) == delay


def test_only_a_pending_generated_turn_is_dispatched(pack: DomainPack) -> None:
    queues = MemoryDispatchQueues()
    final = pending_turn(pack, status=TurnStatus.FINAL, finalized_at=CREATED)
    with pytest.raises(ValueError):
        dispatch_pending_turn(final, queues=queues, pack=pack, now=CREATED, reply_deadline=DEADLINE)
    fixed = pending_turn(pack, action=Action.HAND_OFF, reply_source=ReplySource.FIXED)
    with pytest.raises(ValueError):
        dispatch_pending_turn(fixed, queues=queues, pack=pack, now=CREATED, reply_deadline=DEADLINE)
    assert queues.sent == []


def stream_record(event: str, sort_key: str, status: str | None) -> dict[str, object]:
    image = {"pk": {"S": "CONV#x"}, "sk": {"S": sort_key}}
    if status:
        image["status"] = {"S": status}
    return {"eventName": event, "dynamodb": {"Keys": {"pk": image["pk"], "sk": image["sk"]}, "NewImage": image}}


@pytest.mark.parametrize(
    ("record", "passes"),
    [
        (stream_record("INSERT", "TURN#000001", "pending"), True),
        (stream_record("INSERT", "TURN#000001", "final"), False),
        (stream_record("MODIFY", "TURN#000001", "pending"), False),
        (stream_record("INSERT", "TURN#000001#REPLY", None), False),
        (stream_record("INSERT", "STATE", None), False),
        (stream_record("INSERT", "REQUEST#abc", None), False),
        (stream_record("REMOVE", "TURN#000001", None), False),
    ],
)
def test_the_code_check_and_the_filter_pattern_agree(record: dict[str, object], passes: bool) -> None:
    import json

    from moto.events.models import EventPattern

    assert is_pending_turn_insert(record) is passes
    assert EventPattern.load(json.dumps(PENDING_TURN_INSERTS)).matches_event(record) is passes


def test_a_turn_that_found_the_realizer_cold_gets_a_second_deadline_in_seconds_marked_cold(pack: DomainPack) -> None:
    """Issue 42: a cold realizer (starting, or switched off) cannot word a reply inside the deadline, so
    after the batch the turn is sent a second deadline, marked cold, due seconds after it; its own deadline
    (and its job) went out as always, and whichever deadline arrives first finalizes the turn."""
    from dialogue.dispatch import send_cold_deadline

    turn = pending_turn(pack)
    queues = MemoryDispatchQueues()
    dispatch_pending_turn(turn, queues=queues, pack=pack, now=CREATED + timedelta(seconds=1), reply_deadline=DEADLINE)
    send_cold_deadline(
        turn,
        queues=queues,
        now=CREATED + timedelta(seconds=1),
        reply_deadline=DEADLINE,
        cold_fallback=timedelta(seconds=2),
    )
    (kind1, own, own_delay), (kind2, _, _), (kind3, cold, cold_delay) = queues.sent
    assert (kind1, kind2, kind3) == ("deadline", "job", "deadline")
    assert isinstance(own, ReplyDeadline) and isinstance(cold, ReplyDeadline)
    assert own.realizer_cold is False and own_delay == 59
    assert cold.realizer_cold is True
    assert cold.due_at == CREATED + timedelta(seconds=2) and cold_delay == 1
    assert (cold.conversation_id, cold.turn_id, cold.action, cold.slots) == (
        own.conversation_id,
        3,
        own.action,
        own.slots,
    )
    # Never later than the turn's own deadline.
    late = MemoryDispatchQueues()
    send_cold_deadline(
        turn, queues=late, now=CREATED, reply_deadline=timedelta(seconds=1), cold_fallback=timedelta(seconds=2)
    )
    assert late.sent[0][1].due_at == CREATED + timedelta(seconds=1)  # type: ignore[union-attr]
    # A deadline sent before this release (no field) reads as not cold.
    old = own.model_dump(mode="json")
    del old["realizer_cold"]
    assert ReplyDeadline.model_validate(old) == own


def test_a_job_names_the_desks_reply_queue_only_on_a_shared_realizer(
    pack: DomainPack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On its own realizer a desk's job names no reply queue (the realizer answers to the stack's screen
    queue); on another stack's (SHARED_REALIZER) it names the desk's screen queue, as the dispatch
    function passes it from the settings."""
    from dialogue.settings import Settings

    screen = "https://sqs.eu-west-2.amazonaws.com/123456789012/desk-ScreenQueue-abc"
    turn = pending_turn(pack)
    own, shared = MemoryDispatchQueues(), MemoryDispatchQueues()
    dispatch_pending_turn(turn, queues=own, pack=pack, now=CREATED, reply_deadline=DEADLINE)
    dispatch_pending_turn(turn, queues=shared, pack=pack, now=CREATED, reply_deadline=DEADLINE, reply_queue_url=screen)
    own_job, shared_job = own.sent[1][1], shared.sent[1][1]
    assert isinstance(own_job, RealizeJob) and isinstance(shared_job, RealizeJob)
    assert own_job.reply_queue_url is None and shared_job.reply_queue_url == screen
    assert shared_job.model_copy(update={"reply_queue_url": None}) == own_job
    # Sent as before without it, so a realizer image older than the field still reads the job.
    assert "reply_queue_url" not in own_job.model_dump_json() and screen in shared_job.model_dump_json()
    with pytest.raises(ValueError, match="reply_queue_url"):
        RealizeJob.model_validate({**own_job.model_dump(), "reply_queue_url": "https://evil.example/q"})
    monkeypatch.setenv("SCREEN_QUEUE_URL", screen)
    assert Settings(table_name="desk").shared_realizer is False
    monkeypatch.setenv("SHARED_REALIZER", "true")
    assert Settings(table_name="desk").shared_realizer is True
