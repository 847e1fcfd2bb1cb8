"""Wake the realizer from zero tasks as soon as a job is sent, not when CloudWatch next sees the queue.

The realizer's ECS service rests at zero tasks. Its wake alarm (template.yaml) starts a task when the
realize queue's metrics show a job waiting, but SQS stops publishing metrics for a queue that has been
inactive for hours, and once the first job after a quiet night arrives they can take up to 15 minutes to
resume: the alarm would start the 10-15 minute cold start that much later. So the dispatch function,
having sent a job whose turn is still inside its reply deadline, asks ECS for the service's desired
count and sets it to 1 when it is 0 (`EcsServiceWaker`). The wake alarm stays, as the backstop.

- One service, named by REALIZER_CLUSTER and REALIZER_SERVICE (the template sets both only when the
  service exists); without them there is no waker (`None`), as in a local stack, which has no ECS.
- "It is wanted" (a desired count of 1 or more, read or just set) is remembered for `remember_for`
  (60 s), so a busy minute costs one DescribeServices, not one per batch.
- A wake that fails (ECS unreachable, throttled, refused, the service gone) is logged and reported as
  `WakeOutcome.FAILED`, never raised: the jobs are already on the queue and the wake alarm still starts
  a task. The caller counts it (the RealizerWakeFailed metric).
- Two dispatch invocations may both see 0 and both set 1: the same value, so no harm. A scale-out by
  Application Auto Scaling between the read and the write could be lowered to 1; the backlog policy
  raises it again on its next evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from dialogue.aws.observability import logger
from dialogue.clock import now as clock_now
from dialogue.ports import WakeOutcome

REMEMBER_WANTED_FOR = timedelta(seconds=60)
"""How long a desired count of 1 or more is taken as still true without asking ECS again."""


class EcsServiceClient(Protocol):
    """The two calls of boto3's ECS client the waker makes."""

    def describe_services(self, *, cluster: str, services: list[str]) -> Mapping[str, Any]: ...

    def update_service(self, *, cluster: str, service: str, desiredCount: int) -> Mapping[str, Any]: ...


class EcsServiceWaker:
    """Sets one ECS service's desired count to 1 when it is 0."""

    def __init__(
        self,
        client: EcsServiceClient,
        *,
        cluster: str,
        service: str,
        remember_for: timedelta = REMEMBER_WANTED_FOR,
        clock: Callable[[], datetime] = clock_now,
    ) -> None:
        if not cluster or not service:
            raise ValueError("the waker needs a cluster and a service")
        self._client = client
        self._cluster = cluster
        self._service = service
        self._remember_for = remember_for
        self._clock = clock
        self._wanted_until: datetime | None = None

    def wake(self) -> WakeOutcome:
        now = self._clock()
        if self._wanted_until is not None and now < self._wanted_until:
            return WakeOutcome.WANTED
        try:
            desired = self._desired_count()
            if desired >= 1:
                outcome = WakeOutcome.WANTED
            else:
                self._client.update_service(cluster=self._cluster, service=self._service, desiredCount=1)
                outcome = WakeOutcome.WOKEN
        except (ClientError, BotoCoreError, LookupError, TypeError, ValueError) as error:
            self._wanted_until = None
            logger.warning("realizer wake failed", error=_error_code(error))
            return WakeOutcome.FAILED
        self._wanted_until = now + self._remember_for
        if outcome is WakeOutcome.WOKEN:
            logger.info("realizer woken from zero tasks")
        return outcome

    def _desired_count(self) -> int:
        described = self._client.describe_services(cluster=self._cluster, services=[self._service])
        services = [s for s in described.get("services", []) if s.get("status") == "ACTIVE"]
        if not services:
            raise LookupError("the realizer service is not active")
        return int(services[0]["desiredCount"])


def _error_code(error: Exception) -> str:
    """A short, text-free name for what went wrong: the AWS error code, or the exception's class."""
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code") or type(error).__name__)
    return type(error).__name__
