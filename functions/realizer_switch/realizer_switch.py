"""The realizer's off switch, a Lambda function: invoked by an alarm (off) or by an operator (on or off).

A CloudWatch alarm whose action is this function (GpuHoursAlarm: GPU instances in service through too many
hours in a row; RealizerNotServingAlarm: a task wanted for too long and no worker polling the realize
queue) invokes it on each state change; on ALARM it switches the realizer off (dialogue.aws.ecs.
RealizerSwitch.off): the service's scalable target's maximum and minimum at 0, its desired count at 0.
The dispatch function's wake call and every scaling policy then leave it at 0 until the desk-opens
schedule (where desk hours are set) or an operator turns it on again:

    aws lambda invoke --function-name <RealizerSwitchFunction> --payload '{"switch": "on"}' out.json

An alarm's return to OK turns nothing on: what was wrong is a person's to look at first.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from dialogue.aws.ecs import RealizerSwitch
from dialogue.aws.observability import logger, metrics, tracer
from dialogue.settings import get_settings
from dialogue.snapstart import register_snapshot_hooks

register_snapshot_hooks()  # SnapStart: as every function (dialogue.snapstart); the alarms invoke $LATEST


@lru_cache(maxsize=1)
def get_switch() -> RealizerSwitch:
    settings = get_settings()
    return RealizerSwitch(
        boto3.client("ecs"),
        boto3.client("application-autoscaling"),
        cluster=settings.realizer_cluster,
        service=settings.realizer_service,
        min_tasks=settings.realizer_min_tasks,
        max_tasks=settings.realizer_max_tasks,
    )


def requested(event: dict[str, Any]) -> str | None:
    """What the event asks for: "off" (an alarm gone to ALARM, or an operator), "on" (an operator only), or
    None (an alarm's other state changes, anything else)."""
    alarm = event.get("alarmData")
    if isinstance(alarm, dict):
        state = (alarm.get("state") or {}).get("value")
        return "off" if state == "ALARM" else None
    switch = event.get("switch")
    return switch if switch in ("on", "off") else None


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    wanted = requested(event)
    alarm = (event.get("alarmData") or {}).get("alarmName") if isinstance(event.get("alarmData"), dict) else None
    settings = get_settings()
    if wanted is not None and not (settings.realizer_cluster and settings.realizer_service):
        logger.info("no realizer to switch (the first deploy, no image yet)", alarm=alarm)
        return {"switch": "no realizer"}
    if wanted == "off":
        get_switch().off()
        metrics.add_metric(name="RealizerSwitchedOff", unit=MetricUnit.Count, value=1)
        logger.warning("realizer switched off", alarm=alarm)
    elif wanted == "on":
        get_switch().on()
        logger.info("realizer switched on by an operator")
    else:
        logger.info("nothing to switch", alarm=alarm)
    return {"switch": wanted or "unchanged"}
