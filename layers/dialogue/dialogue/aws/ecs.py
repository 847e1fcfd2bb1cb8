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
- The off switch: the service's scalable target's maximum at 0 (`RealizerSwitch.off`, which the GPU-hours
  and not-serving alarms invoke, and the desk-closes schedule). UpdateService itself ignores Application
  Auto Scaling's bounds, so before setting 1 the waker reads the target (given a `scaling` client) and
  wakes nothing while its maximum is 0 (`WakeOutcome.OFF`). The target is read only when the desired
  count is 0, so a warm realizer costs no extra call.
- Cold or not (`cold`): after a wake, whether the realizer had no task running (woken, starting, or off),
  so the dispatch function gives the turn its fallback in seconds instead of a wait for the deadline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from dialogue.aws.observability import logger
from dialogue.clock import now as clock_now
from dialogue.ports import WakeOutcome

REMEMBER_WANTED_FOR = timedelta(seconds=60)
"""How long a desired count of 1 or more is taken as still true without asking ECS again."""

RESPECTS_SCALABLE_TARGET_MAX = True
"""The waker wakes nothing while the scalable target's maximum is 0 (the off switch); devstack's fleet
simulation reads this."""

SCALABLE_DIMENSION = "ecs:service:DesiredCount"


class EcsServiceClient(Protocol):
    """The two calls of boto3's ECS client the waker makes."""

    def describe_services(self, *, cluster: str, services: list[str]) -> Mapping[str, Any]: ...

    def update_service(self, *, cluster: str, service: str, desiredCount: int) -> Mapping[str, Any]: ...


class ScalingClient(Protocol):
    """The calls of boto3's Application Auto Scaling client the waker and the switch make."""

    def describe_scalable_targets(
        self, *, ServiceNamespace: str, ResourceIds: list[str], ScalableDimension: str
    ) -> Mapping[str, Any]: ...

    def register_scalable_target(
        self, *, ServiceNamespace: str, ResourceId: str, ScalableDimension: str, MinCapacity: int, MaxCapacity: int
    ) -> Mapping[str, Any]: ...


def resource_id(cluster: str, service: str) -> str:
    """The scalable target's ResourceId of an ECS service (template.yaml's RealizerScalableTarget)."""
    return f"service/{cluster}/{service}"


def scalable_maximum(scaling: ScalingClient, cluster: str, service: str) -> int | None:
    """The service's scalable target's MaxCapacity, or None where no target is registered."""
    described = scaling.describe_scalable_targets(
        ServiceNamespace="ecs", ResourceIds=[resource_id(cluster, service)], ScalableDimension=SCALABLE_DIMENSION
    )
    targets = described.get("ScalableTargets") or []
    return int(targets[0]["MaxCapacity"]) if targets else None


@dataclass(eq=False)
class EcsServiceWaker:
    """Sets one ECS service's desired count to 1 when it is 0, unless its scalable target's maximum is 0."""

    client: EcsServiceClient
    _: KW_ONLY
    cluster: str
    service: str
    scaling: ScalingClient | None = None
    remember_for: timedelta = REMEMBER_WANTED_FOR
    clock: Callable[[], datetime] = clock_now
    cold: bool = field(default=False, init=False)
    """After `wake`: no task was running (woken, starting, or off); False when unknown (a failed wake)."""
    _wanted_until: datetime | None = field(default=None, init=False, repr=False)
    _remembered: WakeOutcome = field(default=WakeOutcome.WANTED, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.cluster or not self.service:
            raise ValueError("the waker needs a cluster and a service")

    def wake(self) -> WakeOutcome:
        now = self.clock()
        if self._wanted_until is not None and now < self._wanted_until:
            return self._remembered
        try:
            desired, running = self._counts()
            if desired >= 1:
                outcome = WakeOutcome.WANTED
            elif self._switched_off():
                outcome = WakeOutcome.OFF
            else:
                self.client.update_service(cluster=self.cluster, service=self.service, desiredCount=1)
                outcome = WakeOutcome.WOKEN
        except (ClientError, BotoCoreError, LookupError, TypeError, ValueError) as error:
            self._wanted_until = None
            self.cold = False
            logger.warning("realizer wake failed", error=_error_code(error))
            return WakeOutcome.FAILED
        self._wanted_until = now + self.remember_for
        self._remembered = WakeOutcome.OFF if outcome is WakeOutcome.OFF else WakeOutcome.WANTED
        self.cold = outcome is not WakeOutcome.WANTED or running < 1
        if outcome is WakeOutcome.WOKEN:
            logger.info("realizer woken from zero tasks")
        elif outcome is WakeOutcome.OFF:
            logger.info("realizer switched off: not woken")
        return outcome

    def _counts(self) -> tuple[int, int]:
        described = self.client.describe_services(cluster=self.cluster, services=[self.service])
        services = [s for s in described.get("services", []) if s.get("status") == "ACTIVE"]
        if not services:
            raise LookupError("the realizer service is not active")
        return int(services[0]["desiredCount"]), int(services[0].get("runningCount", 0))

    def _switched_off(self) -> bool:
        if self.scaling is None:
            return False
        maximum = scalable_maximum(self.scaling, self.cluster, self.service)
        return maximum is not None and maximum < 1


@dataclass(frozen=True)
class RealizerSwitch:
    """The realizer's off switch: its scalable target's maximum (and minimum) at 0 and its desired count
    at 0; on again, the range the stack gave it (`min_tasks` to `max_tasks`). Invoked by the GPU-hours and
    not-serving alarms (off), and by an operator (on); the desk-opens schedule turns it on as well."""

    ecs: EcsServiceClient
    scaling: ScalingClient
    _: KW_ONLY
    cluster: str
    service: str
    min_tasks: int
    max_tasks: int

    def __post_init__(self) -> None:
        if not self.cluster or not self.service or self.max_tasks < 1 or not 0 <= self.min_tasks <= self.max_tasks:
            raise ValueError("the switch needs a cluster, a service and the stack's task range")

    def off(self) -> None:
        """Maximum 0, then desired 0: the wake call and every scaling policy are held at 0 until `on`."""
        self._register(0, 0)
        self.ecs.update_service(cluster=self.cluster, service=self.service, desiredCount=0)
        logger.warning("realizer switched off")

    def on(self) -> None:
        """The stack's range again (RealizerMinTasks to RealizerMaxTasks); the next turn wakes it."""
        self._register(self.min_tasks, self.max_tasks)
        logger.info("realizer switched on")

    def _register(self, minimum: int, maximum: int) -> None:
        self.scaling.register_scalable_target(
            ServiceNamespace="ecs",
            ResourceId=resource_id(self.cluster, self.service),
            ScalableDimension=SCALABLE_DIMENSION,
            MinCapacity=minimum,
            MaxCapacity=maximum,
        )


def _error_code(error: Exception) -> str:
    """A short, text-free name for what went wrong: the AWS error code, or the exception's class."""
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code") or type(error).__name__)
    return type(error).__name__
