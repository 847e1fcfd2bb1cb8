"""The dispatch Lambda: the table's stream → a deadline on the screen queue and a job on the realize queue.

Its event source mapping filters the stream to inserts of pending TURN items (dialogue.dispatch
holds the pattern). Each is sent on with `dispatch_pending_turn`. A record that fails (a queue
unavailable) is reported by its sequence number; Lambda retries from there, splitting the batch on
error, and a record that keeps failing goes to the on-failure queue, where an alarm sees it. A turn
whose job this pack cannot build (stored before a pack change) is sent its deadline alone and not
failed, since no retry would build it (`JobsWithheld`, logged with the reason, never the text).

After the batch, if it sent a job whose turn is still inside its reply deadline, the realizer is woken
from zero tasks (dialogue.aws.ecs) unless it is switched off: once per batch, never failing the batch
(RealizerWoken, RealizerWakeFailed and RealizerOff count the outcomes). Where it was cold (no task
running yet, or off), each such turn is sent a second deadline, marked cold, due COLD_FALLBACK_SECONDS
after the turn (dialogue.dispatch.send_cold_deadline): the resident gets the fallback in seconds with the
desk's line that a person will check it (ColdTurns counts them), not after a wait for a reply that
cannot come in time. A wake that failed, no time left, or a cold deadline not sent leaves the turns
their own deadline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from dialogue import clock
from dialogue.aws.factory import get_dispatch_queues, get_realizer_waker
from dialogue.aws.observability import logger, metrics, tracer
from dialogue.aws.table import turn_from_item
from dialogue.aws.turns import is_pending_turn_insert
from dialogue.dispatch import dispatch_pending_turn, send_cold_deadline, worth_waking_for
from dialogue.pack import get_pack
from dialogue.ports import WakeOutcome
from dialogue.records import TurnRecord
from dialogue.settings import get_settings
from dialogue.snapstart import register_snapshot_hooks

processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)

COLD_DEADLINE_NEEDS_MS = 1_000
"""Time the invocation must have left to send one cold turn's deadline (an SQS send)."""

WAKE_NEEDS_MS = 8_000
"""Time the invocation must have left to try a wake: two ECS calls of at most 3 s each and, at zero
tasks, Application Auto Scaling's read of the off switch, at most 2 s, are bounded by their clients
(dialogue.aws.factory), and a wake is never worth a timed-out batch."""


@dataclass
class BatchJobs:
    """What one invocation's records sent: the turns whose jobs may still be worded."""

    fresh: list[TurnRecord] = field(default_factory=list)


def dispatch_record(record: DynamoDBRecord, jobs: BatchJobs | None = None) -> None:
    raw = record.raw_event
    if not is_pending_turn_insert(raw):
        metrics.add_metric(name="StreamRecordsSkipped", unit=MetricUnit.Count, value=1)
        return
    turn = turn_from_item(raw["dynamodb"]["NewImage"])
    now = clock.now()
    settings = get_settings()
    reply_deadline = settings.reply_deadline
    with logger.append_context_keys(conversation_id=str(turn.conversation_id), turn_id=turn.turn_id):
        withheld = dispatch_pending_turn(
            turn,
            queues=get_dispatch_queues(),
            pack=get_pack(),
            now=now,
            reply_deadline=reply_deadline,
            # On another stack's realizer (SHARED_REALIZER), the job names this desk's screen queue.
            reply_queue_url=settings.screen_queue_url if settings.shared_realizer else None,
        )
        if withheld is None:
            logger.info("turn dispatched", action=str(turn.action))
        else:
            logger.warning("turn dispatched without its job", action=str(turn.action), reason=withheld)
    metrics.add_metric(name="TurnsDispatched", unit=MetricUnit.Count, value=1)
    if withheld is not None:
        metrics.add_metric(name="JobsWithheld", unit=MetricUnit.Count, value=1)
    elif jobs is not None and worth_waking_for(turn, now=now, reply_deadline=reply_deadline):
        jobs.fresh.append(turn)


def wake_realizer(context: LambdaContext) -> WakeOutcome | None:
    """Wake the realizer if it rests at zero tasks; None where there is no realizer or no time left."""
    waker = get_realizer_waker()
    if waker is None:
        return None
    if context.get_remaining_time_in_millis() < WAKE_NEEDS_MS:
        logger.warning("no time left to wake the realizer")
        return None
    outcome = waker.wake()
    if outcome is WakeOutcome.WOKEN:
        metrics.add_metric(name="RealizerWoken", unit=MetricUnit.Count, value=1)
    elif outcome is WakeOutcome.FAILED:
        metrics.add_metric(name="RealizerWakeFailed", unit=MetricUnit.Count, value=1)
    elif outcome is WakeOutcome.OFF:
        metrics.add_metric(name="RealizerOff", unit=MetricUnit.Count, value=1)
    return outcome


def send_cold_deadlines(turns: list[TurnRecord], context: LambdaContext) -> int:
    """The fallback in seconds for each turn that found the realizer cold; never fails the batch (a turn
    whose cold deadline is not sent keeps its own). Returns how many were sent."""
    settings = get_settings()
    sent = 0
    for turn in turns:
        if context.get_remaining_time_in_millis() < COLD_DEADLINE_NEEDS_MS:
            logger.warning("no time left for the cold turns' deadlines", left=len(turns) - sent)
            break
        try:
            send_cold_deadline(
                turn,
                queues=get_dispatch_queues(),
                now=clock.now(),
                reply_deadline=settings.reply_deadline,
                cold_fallback=timedelta(seconds=settings.cold_fallback_seconds),
            )
        except Exception as error:  # the turn keeps its own deadline
            logger.warning(
                "cold deadline not sent",
                conversation_id=str(turn.conversation_id),
                turn_id=turn.turn_id,
                error=type(error).__name__,
            )
            continue
        sent += 1
    if sent:
        metrics.add_metric(name="ColdTurns", unit=MetricUnit.Count, value=sent)
    return sent


register_snapshot_hooks()  # SnapStart: the pack is loaded before the snapshot (dialogue.snapstart)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    jobs = BatchJobs()
    response = process_partial_response(
        event=event, record_handler=partial(dispatch_record, jobs=jobs), processor=processor, context=context
    )
    failures = len(response.get("batchItemFailures", []))
    if failures:
        metrics.add_metric(name="DispatchRecordsFailed", unit=MetricUnit.Count, value=failures)
    if jobs.fresh:
        outcome = wake_realizer(context)
        waker = get_realizer_waker()
        if outcome not in (None, WakeOutcome.FAILED) and waker is not None and waker.cold:
            send_cold_deadlines(jobs.fresh, context)
    return response
