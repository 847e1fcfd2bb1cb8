"""The dispatch Lambda: the table's stream → a deadline on the screen queue and a job on the realize queue.

Its event source mapping filters the stream to inserts of pending TURN items (dialogue.dispatch
holds the pattern). Each is sent on with `dispatch_pending_turn`. A record that fails (a queue
unavailable) is reported by its sequence number; Lambda retries from there, splitting the batch on
error, and a record that keeps failing goes to the on-failure queue, where an alarm sees it. A turn
whose job this pack cannot build (stored before a pack change) is sent its deadline alone and not
failed, since no retry would build it (`JobsWithheld`, logged with the reason, never the text).

After the batch, if it sent a job whose turn is still inside its reply deadline, the realizer is woken
from zero tasks (dialogue.aws.ecs): once per batch, never failing the batch (RealizerWoken and
RealizerWakeFailed count the outcomes).
"""

from __future__ import annotations

from dataclasses import dataclass
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
from dialogue.dispatch import dispatch_pending_turn, worth_waking_for
from dialogue.pack import get_pack
from dialogue.ports import WakeOutcome
from dialogue.settings import get_settings
from dialogue.snapstart import register_snapshot_hooks

processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)

WAKE_NEEDS_MS = 4_000
"""Time the invocation must have left to try a wake: two ECS calls of at most 3 s each are bounded by
the client (dialogue.aws.factory), and a wake is never worth a timed-out batch."""


@dataclass
class BatchJobs:
    """What one invocation's records sent: the jobs whose turns may still be worded."""

    fresh: int = 0


def dispatch_record(record: DynamoDBRecord, jobs: BatchJobs | None = None) -> None:
    raw = record.raw_event
    if not is_pending_turn_insert(raw):
        metrics.add_metric(name="StreamRecordsSkipped", unit=MetricUnit.Count, value=1)
        return
    turn = turn_from_item(raw["dynamodb"]["NewImage"])
    now = clock.now()
    reply_deadline = get_settings().reply_deadline
    with logger.append_context_keys(conversation_id=str(turn.conversation_id), turn_id=turn.turn_id):
        withheld = dispatch_pending_turn(
            turn,
            queues=get_dispatch_queues(),
            pack=get_pack(),
            now=now,
            reply_deadline=reply_deadline,
        )
        if withheld is None:
            logger.info("turn dispatched", action=str(turn.action))
        else:
            logger.warning("turn dispatched without its job", action=str(turn.action), reason=withheld)
    metrics.add_metric(name="TurnsDispatched", unit=MetricUnit.Count, value=1)
    if withheld is not None:
        metrics.add_metric(name="JobsWithheld", unit=MetricUnit.Count, value=1)
    elif jobs is not None and worth_waking_for(turn, now=now, reply_deadline=reply_deadline):
        jobs.fresh += 1


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
    return outcome


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
        wake_realizer(context)
    return response
