"""The dispatch Lambda: the table's stream → a deadline on the screen queue and a job on the realize queue.

Its event source mapping filters the stream to inserts of pending TURN items (dialogue.dispatch
holds the pattern). Each is sent on with `dispatch_pending_turn`. A record that fails (a queue
unavailable) is reported by its sequence number; Lambda retries from there, splitting the batch on
error, and a record that keeps failing goes to the on-failure queue, where an alarm sees it.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from dialogue import clock
from dialogue.dispatch import dispatch_pending_turn, is_pending_turn_insert
from dialogue.factory import get_dispatch_queues
from dialogue.observability import logger, metrics, tracer
from dialogue.pack import get_pack
from dialogue.settings import get_settings
from dialogue.snapstart import register_snapshot_hooks
from dialogue.store import turn_from_item

processor = BatchProcessor(event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False)


def dispatch_record(record: DynamoDBRecord) -> None:
    raw = record.raw_event
    if not is_pending_turn_insert(raw):
        metrics.add_metric(name="StreamRecordsSkipped", unit=MetricUnit.Count, value=1)
        return
    turn = turn_from_item(raw["dynamodb"]["NewImage"])
    with logger.append_context_keys(conversation_id=str(turn.conversation_id), turn_id=turn.turn_id):
        dispatch_pending_turn(
            turn,
            queues=get_dispatch_queues(),
            pack=get_pack(),
            now=clock.now(),
            reply_deadline=get_settings().reply_deadline,
        )
        logger.info("turn dispatched", action=str(turn.action))
    metrics.add_metric(name="TurnsDispatched", unit=MetricUnit.Count, value=1)


register_snapshot_hooks()  # SnapStart: the pack is loaded before the snapshot (dialogue.snapstart)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    response = process_partial_response(
        event=event, record_handler=dispatch_record, processor=processor, context=context
    )
    failures = len(response.get("batchItemFailures", []))
    if failures:
        metrics.add_metric(name="DispatchRecordsFailed", unit=MetricUnit.Count, value=failures)
    return response
