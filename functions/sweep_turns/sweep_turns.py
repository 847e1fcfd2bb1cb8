"""The sweeper Lambda, run by EventBridge Scheduler every few minutes: no turn stays pending.

Every turn still pending SWEEP_GRACE_SECONDS after its reply deadline gets the fixed fallback, as its
deadline message would have stored it (dialogue.sweep): `StuckTurnsFinalized` counts them, and an
alarm fires on any, since each means a dispatch, a deadline message or the screen function failed.
Those that had outlived the pack got the desk's generic fallback (`StaleTurnsFinalized`, alarmed with
the screen function's). A turn the sweep failed on is logged by its ids and the error's type and
counted (`TurnsNotSwept`, alarmed); the sweep goes on without it, and the next run tries it again.
After a complete sweep the dispatch failure queue is cleared (`DispatchFailuresCleared`): every turn its
batches named is final by then.

Then the audit's WORM copy is repaired (dialogue.aws.audit.AuditCopyRepair): each staff audit link whose
copy the staff function did not confirm within a minute gets it written, once its own hash and its
`prev_hash` check out (`AuditCopiesRepaired`). A link that fails its chain, whose copy differs, or that is
gone from the table is never copied, and, like a marker the repair failed on, is logged by its ids and
counted (`AuditCopiesNotRepaired`, alarmed) on every run until someone looks. Nothing here reads or
writes user text.
"""

from __future__ import annotations

from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from dialogue import clock
from dialogue.aws.factory import get_audit_repair, get_store
from dialogue.aws.observability import logger, metrics, tracer
from dialogue.aws.sqs import clear_dispatch_failures
from dialogue.pack import get_pack
from dialogue.settings import get_settings
from dialogue.snapstart import register_snapshot_hooks
from dialogue.sweep import sweep_overdue_turns

register_snapshot_hooks()  # SnapStart: the pack is loaded before the snapshot (dialogue.snapstart)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = get_settings()
    result = sweep_overdue_turns(
        get_store(),
        get_pack(),
        now=clock.now(),
        reply_deadline=settings.reply_deadline,
        grace=settings.sweep_grace,
    )
    cleared = 0
    if result.complete and settings.dispatch_failure_queue_url:
        cleared = clear_dispatch_failures(boto3.client("sqs"), settings.dispatch_failure_queue_url)
    for failure in result.failures:
        logger.error(
            "overdue turn not finalized",
            conversation_id=str(failure.conversation_id),
            turn_id=failure.turn_id,
            error=failure.error,
        )
    metrics.add_metric(name="StuckTurnsFinalized", unit=MetricUnit.Count, value=result.finalized)
    metrics.add_metric(name="StaleTurnsFinalized", unit=MetricUnit.Count, value=result.stale)
    metrics.add_metric(name="TurnsNotSwept", unit=MetricUnit.Count, value=result.failed)
    if result.finalized:
        metrics.add_metric(name="FallbacksShown", unit=MetricUnit.Count, value=result.finalized)
    if result.unreadable_values:
        metrics.add_metric(name="StoredValuesUnreadable", unit=MetricUnit.Count, value=result.unreadable_values)
    metrics.add_metric(name="DispatchFailuresCleared", unit=MetricUnit.Count, value=cleared)
    repaired, not_repaired = _repair_audit_copies()
    summary = {
        **result.model_dump(exclude={"failures"}),
        "dispatch_failures_cleared": cleared,
        "audit_copies_repaired": repaired,
        "audit_copies_not_repaired": not_repaired,
    }
    if result.failed:
        logger.warning("sweep left overdue turns pending", **summary)
    elif result.finalized or cleared:
        logger.warning("stuck turns finalized with the fallback", **summary)
    else:
        logger.info("sweep found nothing stuck", **summary)
    return summary


def _repair_audit_copies() -> tuple[int, int]:
    """The audit's pending copies repaired: (written, not written), each not written logged by its ids.
    A failure to read the markers at all is one not repaired: the turn sweep's summary still returns."""
    repair = get_audit_repair()
    if repair is None:
        return 0, 0
    try:
        result = repair.run(clock.now())
    except Exception as error:  # the markers could not be read: counted and alarmed, tried next run
        logger.error("audit copies not repaired", error=type(error).__name__)
        metrics.add_metric(name="AuditCopiesNotRepaired", unit=MetricUnit.Count, value=1)
        return 0, 1
    for item in result.not_repaired:
        logger.error(
            "audit copy not repaired",
            conversation_id=item.conversation_id,
            turn_id=item.turn_id,
            seq=item.seq,
            why=item.why,
        )
    not_repaired = result.refused + result.failed
    metrics.add_metric(name="AuditCopiesRepaired", unit=MetricUnit.Count, value=result.repaired)
    metrics.add_metric(name="AuditCopiesNotRepaired", unit=MetricUnit.Count, value=not_repaired)
    if result.repaired or result.already_copied or result.retired:
        logger.warning(
            "audit copies repaired",
            repaired=result.repaired,
            already_copied=result.already_copied,
            retired=result.retired,
        )
    return result.repaired, not_repaired
