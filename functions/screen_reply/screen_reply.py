"""The screen-and-fallback Lambda: the screen queue → TURN flags and the reply shown.

The queue carries two kinds of message. A RealizedReply is screened, and the reply or its fixed
fallback stored (`RepliesScreened`, `FallbacksShown`, `RepliesHeld`, and `ReplySeconds` from the
turn's job to its screened reply). A ReplyDeadline arrives when its turn's reply deadline has passed: a turn still
pending then gets the fixed fallback, counted as `DeadlineFallbacks`; a turn that has outlived the pack
(its action or slot values gone since it was stored) gets the desk's generic fallback, counted as
`StaleTurnsFinalized` too, rather than failing to the DLQ. Either way a turn is finalized
once; a message for a turn that is already final is dropped.

Partial batch failures: a record that cannot be parsed or stored is reported and retried, then goes
to the dead-letter queue; the rest of its batch succeeds.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ConfigDict, Json

from dialogue import clock
from dialogue.actions import ReplyScreen
from dialogue.aws.factory import get_store
from dialogue.aws.observability import logger, metrics, tracer
from dialogue.pack import get_pack
from dialogue.realize import RealizedReply, ReplyDeadline, ScreenMessage
from dialogue.replies import outlives_pack
from dialogue.screens import deadline_outcome, decide
from dialogue.settings import get_settings
from dialogue.snapstart import register_snapshot_hooks
from dialogue.state import DialogueState


class ScreenQueueRecord(SqsRecordModel):
    model_config = ConfigDict(hide_input_in_errors=True)

    body: Json[ScreenMessage]  # type: ignore[assignment]


# A batch that fails whole is reported record by record too, so the function does not error: each
# record is retried alone and a poison one moves to the DLQ after maxReceiveCount.
processor = BatchProcessor(event_type=EventType.SQS, model=ScreenQueueRecord, raise_on_entire_batch_failure=False)


def screen_record(record: ScreenQueueRecord) -> None:
    message = record.body
    if isinstance(message, ReplyDeadline):
        enforce_deadline(message)
    else:
        screen_realized(message)


def screen_realized(realized: RealizedReply) -> None:
    job = realized.job
    with logger.append_context_keys(conversation_id=str(job.conversation_id), turn_id=job.turn_id):
        outcome = decide(realized, get_pack(), get_settings().screen_profile)
        now = clock.now()
        stored = get_store().record_screened_reply(job.conversation_id, job.turn_id, outcome, now)
        logger.info(
            "reply screened",
            action=str(job.action),
            screens_fired=list(outcome.screens_fired),
            fallback_used=outcome.fallback_used,
            duplicate=not stored,
        )
    metrics.add_metric(name="RepliesScreened" if stored else "DuplicateRepliesIgnored", unit=MetricUnit.Count, value=1)
    if stored and outcome.fallback_used:
        metrics.add_metric(name="FallbacksShown", unit=MetricUnit.Count, value=1)
    if stored and outcome.reply_screen is ReplyScreen.HELD:
        metrics.add_metric(name="RepliesHeld", unit=MetricUnit.Count, value=1)
    if stored:  # from the turn's job to its screened reply: the queue's wait and the model's time
        seconds = max(0.0, (now - job.created_at).total_seconds())
        metrics.add_metric(name="ReplySeconds", unit=MetricUnit.Seconds, value=seconds)


def enforce_deadline(deadline: ReplyDeadline) -> None:
    pack = get_pack()
    _, unreadable = DialogueState.read_stored(pack.frame, deadline.slots)
    if unreadable:  # a pack change since the turn: those slots read as unknown (counted, never a failure)
        metrics.add_metric(name="StoredValuesUnreadable", unit=MetricUnit.Count, value=len(unreadable))
    stale = outlives_pack(deadline.action, deadline.slots, pack)
    with logger.append_context_keys(conversation_id=str(deadline.conversation_id), turn_id=deadline.turn_id):
        outcome = deadline_outcome(deadline, pack)
        now = clock.now()
        stored = get_store().record_screened_reply(deadline.conversation_id, deadline.turn_id, outcome, now)
        if stored:
            logger.warning("reply deadline passed: fallback stored", action=str(deadline.action), stale=stale)
        else:
            logger.info("reply deadline passed: turn already final", action=str(deadline.action))
    if stored:
        metrics.add_metric(name="DeadlineFallbacks", unit=MetricUnit.Count, value=1)
        metrics.add_metric(name="FallbacksShown", unit=MetricUnit.Count, value=1)
        if stale:
            metrics.add_metric(name="StaleTurnsFinalized", unit=MetricUnit.Count, value=1)
    else:
        metrics.add_metric(name="DeadlinesMet", unit=MetricUnit.Count, value=1)


register_snapshot_hooks()  # SnapStart: the pack is loaded before the snapshot (dialogue.snapstart)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> PartialItemFailureResponse:
    response = process_partial_response(event=event, record_handler=screen_record, processor=processor, context=context)
    failures = len(response.get("batchItemFailures", []))
    if failures:
        metrics.add_metric(name="ScreenRecordsFailed", unit=MetricUnit.Count, value=failures)
    return response
