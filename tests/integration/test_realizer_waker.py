"""The realizer woken from zero tasks by the dispatch function (dialogue/aws/ecs.py), on moto's ECS.

moto keeps an ECS service's desired count as UpdateService sets it (it starts no task), which is all the
waker reads and writes. The last tests run a turn through the local stack with an ECS service beside it:
the dispatch function wakes the service for a fresh job, once, and not for a job past its deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from devstack.stack import LocalStack
from dialogue.aws.ecs import EcsServiceWaker
from dialogue.aws.factory import get_realizer_waker, reset_caches
from dialogue.ports import WakeOutcome
from dialogue.replies import COLD_REPLY_LINE
from tests.fake_aws import mocked_aws

REGION = "us-east-1"
CLUSTER = "desk-realizer"
SERVICE = "realizer"
T0 = datetime(2026, 12, 1, 7, 30, tzinfo=UTC)


@pytest.fixture
def ecs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto's ECS with the realizer's cluster and its service at zero tasks, as the template creates it."""
    with mocked_aws(monkeypatch, REGION):
        client = boto3.client("ecs", region_name=REGION)
        create_service(client)
        yield client


def create_service(client: Any, desired: int = 0) -> None:
    client.create_cluster(clusterName=CLUSTER)
    client.register_task_definition(
        family="realizer", containerDefinitions=[{"name": "realizer", "image": "realizer", "memory": 512}]
    )
    client.create_service(cluster=CLUSTER, serviceName=SERVICE, taskDefinition="realizer", desiredCount=desired)


def desired_count(client: Any) -> int:
    (service,) = client.describe_services(cluster=CLUSTER, services=[SERVICE])["services"]
    return int(service["desiredCount"])


@dataclass
class CountingClient:
    """Passes the waker's calls to a real (moto) client and counts them."""

    client: Any
    calls: list[str] = field(default_factory=list)

    def describe_services(self, **kwargs: Any) -> Any:
        self.calls.append("describe")
        return self.client.describe_services(**kwargs)

    def update_service(self, **kwargs: Any) -> Any:
        self.calls.append("update")
        return self.client.update_service(**kwargs)


@dataclass
class Clock:
    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now


def test_a_service_at_zero_tasks_is_woken_to_one(ecs: Any) -> None:
    counting = CountingClient(ecs)
    waker = EcsServiceWaker(counting, cluster=CLUSTER, service=SERVICE)
    assert waker.wake() is WakeOutcome.WOKEN
    assert desired_count(ecs) == 1
    assert counting.calls == ["describe", "update"]


def test_a_service_that_already_wants_tasks_is_left_alone(ecs: Any) -> None:
    ecs.update_service(cluster=CLUSTER, service=SERVICE, desiredCount=2)
    counting = CountingClient(ecs)
    assert EcsServiceWaker(counting, cluster=CLUSTER, service=SERVICE).wake() is WakeOutcome.WANTED
    assert desired_count(ecs) == 2  # never lowered to 1
    assert counting.calls == ["describe"]


def test_the_answer_is_remembered_for_a_minute_so_a_busy_minute_asks_ecs_once(ecs: Any) -> None:
    counting = CountingClient(ecs)
    clock = Clock()
    waker = EcsServiceWaker(counting, cluster=CLUSTER, service=SERVICE, clock=clock)
    assert waker.wake() is WakeOutcome.WOKEN
    for seconds in (1, 20, 59):
        clock.now = T0 + timedelta(seconds=seconds)
        assert waker.wake() is WakeOutcome.WANTED
    assert counting.calls == ["describe", "update"]
    # A minute on, ECS is asked again: the idle alarm may have returned the service to 0 since.
    ecs.update_service(cluster=CLUSTER, service=SERVICE, desiredCount=0)
    clock.now = T0 + timedelta(seconds=61)
    assert waker.wake() is WakeOutcome.WOKEN
    assert counting.calls == ["describe", "update", "describe", "update"]
    assert desired_count(ecs) == 1


@dataclass
class RefusingClient:
    """An ECS client that refuses every call, as ECS does without the permission."""

    calls: int = 0

    def describe_services(self, **_: Any) -> Any:
        self.calls += 1
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "DescribeServices")

    def update_service(self, **_: Any) -> Any:  # pragma: no cover - never reached
        raise AssertionError("update without a describe")


def test_a_failed_wake_is_reported_never_raised_and_tried_again_next_time(caplog: pytest.LogCaptureFixture) -> None:
    refusing = RefusingClient()
    waker = EcsServiceWaker(refusing, cluster=CLUSTER, service=SERVICE)
    caplog.set_level(logging.WARNING)
    assert waker.wake() is WakeOutcome.FAILED
    assert waker.wake() is WakeOutcome.FAILED  # a failure is not remembered as "wanted"
    assert refusing.calls == 2
    failures = [record for record in caplog.records if record.getMessage() == "realizer wake failed"]
    assert failures and all(getattr(record, "error", None) == "AccessDeniedException" for record in failures)


def test_a_missing_or_draining_service_is_a_failed_wake(ecs: Any) -> None:
    assert EcsServiceWaker(ecs, cluster=CLUSTER, service="no-such-service").wake() is WakeOutcome.FAILED
    ecs.delete_service(cluster=CLUSTER, service=SERVICE, force=True)
    assert EcsServiceWaker(ecs, cluster=CLUSTER, service=SERVICE).wake() is WakeOutcome.FAILED


def test_there_is_a_waker_only_where_the_stack_names_the_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "conversations")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.delenv("REALIZER_CLUSTER", raising=False)
    monkeypatch.delenv("REALIZER_SERVICE", raising=False)
    reset_caches()
    try:
        assert get_realizer_waker() is None  # devstack, or a stack with no realizer yet
        monkeypatch.setenv("REALIZER_CLUSTER", CLUSTER)
        reset_caches()
        assert get_realizer_waker() is None  # both or nothing
        monkeypatch.setenv("REALIZER_SERVICE", SERVICE)
        reset_caches()
        assert isinstance(get_realizer_waker(), EcsServiceWaker)
    finally:
        monkeypatch.delenv("REALIZER_CLUSTER")
        monkeypatch.delenv("REALIZER_SERVICE")
        reset_caches()


# --- the dispatch function wakes the realizer ----------------------------------------------------------


@pytest.fixture
def stack_with_a_realizer(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LocalStack, Any]]:
    """The local stack, with the realizer's ECS service (at zero tasks) in the same moto account, named in
    the dispatch function's environment as the template names it."""
    client = boto3.client("ecs", region_name=REGION)
    create_service(client)
    monkeypatch.setenv("REALIZER_CLUSTER", CLUSTER)
    monkeypatch.setenv("REALIZER_SERVICE", SERVICE)
    reset_caches()
    try:
        yield stack, client
    finally:
        monkeypatch.delenv("REALIZER_CLUSTER")
        monkeypatch.delenv("REALIZER_SERVICE")
        reset_caches()


def post_generated_turn(stack: LocalStack) -> None:
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    response = stack.call_api(
        "POST", f"/conversations/{conversation_id}/turns", {"text": "I want the Data Support Certificate."}
    )
    assert response.status == 202


def test_a_fresh_job_wakes_the_realizer_once_and_the_dispatch_does_not_wait_on_it(
    stack_with_a_realizer: tuple[LocalStack, Any],
) -> None:
    stack, client = stack_with_a_realizer
    post_generated_turn(stack)
    assert stack.run_dispatch() == 1
    assert desired_count(client) == 1
    assert stack.metric_total("RealizerWoken") == 1
    # The next turn a few seconds later: the answer is remembered, nothing more is set.
    stack.advance(5)
    post_generated_turn(stack)
    assert stack.run_dispatch() == 1
    assert stack.metric_total("RealizerWoken") == 1
    assert stack.metric_total("TurnsDispatched") == 2
    assert stack.metric_total("RealizerWakeFailed") == 0


def test_a_job_past_its_deadline_wakes_nothing(stack_with_a_realizer: tuple[LocalStack, Any]) -> None:
    """A record delivered after its turn's reply deadline (a retried batch, a re-read stream) still sends
    its messages, but its job will be dropped unrun, so no GPU is started for it."""
    stack, client = stack_with_a_realizer
    post_generated_turn(stack)
    stack.advance(3600)
    assert stack.run_dispatch() == 1
    assert stack.metric_total("TurnsDispatched") == 1
    assert desired_count(client) == 0
    assert stack.metric_total("RealizerWoken") == 0


def test_a_wake_that_fails_never_fails_the_dispatch(
    stack_with_a_realizer: tuple[LocalStack, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    stack, client = stack_with_a_realizer
    monkeypatch.setenv("REALIZER_SERVICE", "no-such-service")
    reset_caches()
    post_generated_turn(stack)
    assert stack.run_dispatch() == 1
    assert stack.metric_total("TurnsDispatched") == 1
    assert stack.metric_total("RealizerWakeFailed") == 1
    assert stack.metric_total("DispatchRecordsFailed") == 0
    messages = stack.sqs.receive_message(QueueUrl=stack.realize_queue.url, MaxNumberOfMessages=10)["Messages"]
    assert len(messages) == 1  # the job went out all the same
    assert desired_count(client) == 0


# --- the off switch and a cold realizer (issue 42) -------------------------------------------------------


def register_target(maximum: int, minimum: int = 0) -> Any:
    """The service's scalable target, as RealizerScalableTarget registers it, on moto's Application Auto
    Scaling."""
    scaling = boto3.client("application-autoscaling", region_name=REGION)
    scaling.register_scalable_target(
        ServiceNamespace="ecs",
        ResourceId=f"service/{CLUSTER}/{SERVICE}",
        ScalableDimension="ecs:service:DesiredCount",
        MinCapacity=minimum,
        MaxCapacity=maximum,
    )
    return scaling


def test_the_wake_call_respects_the_scalable_targets_maximum(ecs: Any) -> None:
    """UpdateService ignores Application Auto Scaling's bounds, so the waker reads the maximum itself: at 0
    (the off switch) it wakes nothing, and the turn is told it is cold."""
    scaling = register_target(maximum=0)
    counting = CountingClient(ecs)
    waker = EcsServiceWaker(counting, cluster=CLUSTER, service=SERVICE, scaling=scaling)
    assert waker.wake() is WakeOutcome.OFF
    assert waker.cold
    assert desired_count(ecs) == 0
    assert counting.calls == ["describe"]
    # Remembered for a minute, as "wanted" is: a busy minute asks once.
    assert waker.wake() is WakeOutcome.OFF
    assert counting.calls == ["describe"]


def test_under_a_maximum_of_one_or_more_the_wake_call_wakes_and_the_realizer_is_cold(ecs: Any) -> None:
    scaling = register_target(maximum=2)
    waker = EcsServiceWaker(ecs, cluster=CLUSTER, service=SERVICE, scaling=scaling)
    assert waker.wake() is WakeOutcome.WOKEN
    assert waker.cold  # no task runs yet: a cold start is minutes away
    assert desired_count(ecs) == 1


@dataclass
class RunningClient:
    """An ECS client whose service wants one task and runs it (moto starts none)."""

    running: int = 1

    def describe_services(self, **_: Any) -> Any:
        return {"services": [{"status": "ACTIVE", "desiredCount": 1, "runningCount": self.running}]}

    def update_service(self, **_: Any) -> Any:  # pragma: no cover - never reached
        raise AssertionError("a service that wants a task is left alone")


def test_a_running_task_is_warm_and_a_wanted_one_not_yet_running_is_cold() -> None:
    warm = EcsServiceWaker(RunningClient(1), cluster=CLUSTER, service=SERVICE)
    assert warm.wake() is WakeOutcome.WANTED and not warm.cold
    starting = EcsServiceWaker(RunningClient(0), cluster=CLUSTER, service=SERVICE)
    assert starting.wake() is WakeOutcome.WANTED and starting.cold


def test_the_switch_sets_the_maximum_to_zero_and_back_to_the_stacks_range(ecs: Any) -> None:
    from dialogue.aws.ecs import RealizerSwitch, scalable_maximum

    scaling = register_target(maximum=2)
    ecs.update_service(cluster=CLUSTER, service=SERVICE, desiredCount=1)
    switch = RealizerSwitch(ecs, scaling, cluster=CLUSTER, service=SERVICE, min_tasks=0, max_tasks=2)
    switch.off()
    assert scalable_maximum(scaling, CLUSTER, SERVICE) == 0
    assert desired_count(ecs) == 0
    assert EcsServiceWaker(ecs, cluster=CLUSTER, service=SERVICE, scaling=scaling).wake() is WakeOutcome.OFF
    switch.on()
    assert scalable_maximum(scaling, CLUSTER, SERVICE) == 2
    assert EcsServiceWaker(ecs, cluster=CLUSTER, service=SERVICE, scaling=scaling).wake() is WakeOutcome.WOKEN


def test_the_switch_function_turns_off_on_an_alarm_and_on_only_when_asked(
    ecs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import realizer_switch

    from devstack.events import FakeLambdaContext
    from dialogue.aws.ecs import scalable_maximum

    scaling = register_target(maximum=2)
    monkeypatch.setenv("TABLE_NAME", "conversations")
    monkeypatch.setenv("REALIZER_CLUSTER", CLUSTER)
    monkeypatch.setenv("REALIZER_SERVICE", SERVICE)
    reset_caches()
    realizer_switch.get_switch.cache_clear()
    context = FakeLambdaContext(function_name="realizer_switch")
    alarm = {"source": "aws.cloudwatch", "alarmData": {"alarmName": "GpuHoursAlarm", "state": {"value": "ALARM"}}}
    try:
        assert realizer_switch.lambda_handler(alarm, context) == {"switch": "off"}
        assert scalable_maximum(scaling, CLUSTER, SERVICE) == 0
        back_to_ok = {**alarm, "alarmData": {"alarmName": "GpuHoursAlarm", "state": {"value": "OK"}}}
        assert realizer_switch.lambda_handler(back_to_ok, context) == {"switch": "unchanged"}
        assert scalable_maximum(scaling, CLUSTER, SERVICE) == 0  # an alarm's OK turns nothing on
        assert realizer_switch.lambda_handler({"switch": "on"}, context) == {"switch": "on"}
        assert scalable_maximum(scaling, CLUSTER, SERVICE) == 2
    finally:
        realizer_switch.get_switch.cache_clear()
        reset_caches()


def replies_shown(stack: LocalStack) -> list[str]:
    """The replies the table keeps (REPLY items), as the resident's page shows them."""
    return [str(item["reply"]["S"]) for item in stack.table_items() if "reply" in item]


def test_a_turn_that_finds_the_realizer_cold_gets_its_fallback_in_seconds_held_for_a_persons_check(
    stack_with_a_realizer: tuple[LocalStack, Any],
) -> None:
    from dialogue.pack import get_pack
    from dialogue.replies import cold_reply_line

    stack, client = stack_with_a_realizer
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    response = stack.call_api(
        "POST", f"/conversations/{conversation_id}/turns", {"text": "I want the Data Support Certificate."}
    )
    assert response.status == 202
    assert stack.run_dispatch() == 1
    assert desired_count(client) == 1  # woken all the same
    assert stack.metric_total("ColdTurns") == 1
    stack.advance(3)  # seconds, not the 60 s deadline
    assert stack.run_screen_function() == 1
    turn = stack.stored_turn(conversation_id, 1)
    assert turn["status"] == "final" and turn["fallback_used"] is True
    assert turn["human_review"] == "pending"  # held for a person's check: the review queue
    assert stack.pending_turns() == []
    (reply,) = replies_shown(stack)
    assert reply.endswith(" " + cold_reply_line(get_pack()))


def test_a_turn_while_switched_off_wakes_nothing_and_gets_the_line(
    stack_with_a_realizer: tuple[LocalStack, Any],
) -> None:
    stack, client = stack_with_a_realizer
    register_target(maximum=0)
    reset_caches()
    post_generated_turn(stack)
    assert stack.run_dispatch() == 1
    assert desired_count(client) == 0
    assert stack.metric_total("RealizerOff") == 1
    assert stack.metric_total("RealizerWoken") == 0
    assert stack.metric_total("ColdTurns") == 1
    stack.advance(3)
    assert stack.run_screen_function() == 1
    assert stack.pending_turns() == []
    (reply,) = replies_shown(stack)
    assert reply.endswith(COLD_REPLY_LINE)  # the seed's pack gives no line of its own: the default


def test_a_turn_that_finds_the_realizer_warm_keeps_its_full_deadline(
    stack_with_a_realizer: tuple[LocalStack, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task running: the turn is left its reply deadline for the model's words, as before."""
    import dispatch_turn

    stack, _ = stack_with_a_realizer
    warm = EcsServiceWaker(RunningClient(1), cluster=CLUSTER, service=SERVICE)
    monkeypatch.setattr(dispatch_turn, "get_realizer_waker", lambda: warm)
    post_generated_turn(stack)
    assert stack.run_dispatch() == 1
    assert stack.metric_total("ColdTurns") == 0
    stack.advance(3)
    assert stack.run_screen_function() == 0  # the deadline is still 57 s away
    assert len(stack.pending_turns()) == 1


def test_the_switch_function_without_a_realizer_switches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first deploy has no realizer service (no image yet): an alarm's call is logged and answered."""
    import realizer_switch

    from devstack.events import FakeLambdaContext

    monkeypatch.setenv("TABLE_NAME", "conversations")
    monkeypatch.delenv("REALIZER_CLUSTER", raising=False)
    monkeypatch.delenv("REALIZER_SERVICE", raising=False)
    reset_caches()
    try:
        event = {"alarmData": {"alarmName": "GpuHoursAlarm", "state": {"value": "ALARM"}}}
        context = FakeLambdaContext(function_name="realizer_switch")
        assert realizer_switch.lambda_handler(event, context) == {"switch": "no realizer"}
        assert realizer_switch.requested({"switch": "sideways"}) is None
    finally:
        reset_caches()
