"""`make teardown STACK=name`: delete a deployed stack without the hang and the failure `sam delete` meets.

    python -m ops.teardown --stack enrollment-desk [--region us-east-1] [--yes]

`sam delete` waits and waits on the GPU Auto Scaling group: its instances are protected from scale-in
(the group's NewInstancesProtectedFromScaleIn, then the capacity provider's managed termination
protection), so nothing can empty it; and CloudFormation refuses to delete the pages bucket while it
holds objects. So, once confirmed (or with --yes), in this order:

1. the realizer's scalable target: min and max 0, its scale-out and schedules suspended, so nothing
   starts a task again;
2. the realizer service: 0 tasks, then a bounded wait until none runs (a running task would keep its
   instance protected);
3. the GPU group: scale-in protection off on every instance, then min, max and desired capacity 0, then
   a bounded wait until it has no instance;
4. the pages bucket: every object version and delete marker deleted;
5. the stack: CloudFormation's delete_stack and its waiter; if it fails, the reasons from its events.

The plan it asks about names what stays after it (docs/DEPLOY.md, "8. Tearing it down"): the retained
table, staff user pool and audit bucket, whose write-once copies no one can delete before
AuditRetentionDays have passed for each, and the Container Insights log group ECS made.

CloudFormation's own delete rather than `sam delete --no-prompts`: boto3 is already in .venv (SAM lives
in .venv-deploy, on Python 3.12), it fails with the reasons read from the stack's events, and it leaves
the region's SAM artifact bucket alone, which other stacks share. Any of the five resources may be
absent (a stack deployed without the realizer has no GPU group); the plan says which. Each step prints
one line; an AWS error stops the run with exit 1 and one sentence naming the step.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from ops.aws import AWS_ERRORS, aws_reason, physical_ids, report_failure, session_clients

# The template's logical ids of what needs emptying or stopping before CloudFormation can delete it.
GPU_GROUP = "GpuAutoScalingGroup"
CLUSTER = "RealizerCluster"
SERVICE = "RealizerService"
SCALABLE_TARGET = "RealizerScalableTarget"
PAGES_BUCKET = "PagesBucket"
# What the template keeps when the stack is deleted (DeletionPolicy RetainExceptOnCreate), and why.
RETAINED = {
    "ConversationTable": "the table {id}: retained with the conversations",
    "StaffUserPool": "the staff user pool {id}: retained with the staff accounts",
    "AuditBucket": (
        "the audit bucket {id}: retained and write-once, each copy under Object Lock for AuditRetentionDays "
        "after it was written, so no one can empty or delete it sooner"
    ),
}

PROTECTION_BATCH = 50  # the most instance ids one SetInstanceProtection call takes
CONFIRM_ANSWERS = frozenset({"y", "yes"})


class TeardownError(Exception):
    """A step that failed, as one sentence (without its full stop) naming the step."""


@dataclass(frozen=True)
class ScalableTarget:
    namespace: str
    resource_id: str
    dimension: str

    @classmethod
    def from_physical_id(cls, physical_id: str) -> ScalableTarget:
        """CloudFormation names a scalable target `ResourceId|ScalableDimension|ServiceNamespace`."""
        parts = physical_id.split("|")
        if len(parts) != 3 or not all(parts):
            raise TeardownError(
                f"the scalable target's id {physical_id!r} is not ResourceId|ScalableDimension|ServiceNamespace"
            )
        resource_id, dimension, namespace = parts
        return cls(namespace=namespace, resource_id=resource_id, dimension=dimension)


@dataclass(frozen=True)
class StackResources:
    """The physical ids teardown acts on; None where the stack has no such resource."""

    gpu_group: str | None = None
    cluster: str | None = None
    service: str | None = None  # the service's ARN, as CloudFormation names it
    scalable_target: ScalableTarget | None = None
    pages_bucket: str | None = None
    retained: tuple[tuple[str, str], ...] = ()  # (logical id, physical id) of what the template retains


@dataclass(frozen=True)
class Clients:
    region: str
    # One boto3 client per service, in the order `for_region` names them.
    cloudformation: Any
    autoscaling: Any
    ecs: Any
    scaling: Any  # Application Auto Scaling
    s3: Any

    @classmethod
    def for_region(cls, region: str | None) -> Clients:
        import boto3

        with step("connecting to AWS"):
            session = boto3.Session(region_name=region)
            clients = session_clients(session, "cloudformation", "autoscaling", "ecs", "application-autoscaling", "s3")
            return cls(str(session.region_name), *clients)


@dataclass(frozen=True)
class Pace:
    """How long the bounded waits last and how often they look."""

    poll_s: float = 15.0
    service_wait_s: float = 300.0  # a task's stop timeout is at most 120 s
    group_wait_s: float = 900.0  # a GPU instance drains and terminates in a few minutes
    stack_poll_s: int = 15
    stack_polls: int = 120  # 30 minutes


@dataclass(frozen=True)
class Console:
    """Where progress goes, and the clock the waits use."""

    out: TextIO
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic

    def say(self, line: str) -> None:
        print(f"teardown: {line}", file=self.out, flush=True)


@contextmanager
def step(name: str) -> Iterator[None]:
    """Turn an AWS error inside into a TeardownError naming the step."""
    try:
        yield
    except AWS_ERRORS as error:
        raise TeardownError(f"{name} failed ({aws_reason(error)})") from None


# --- the stack's resources ---------------------------------------------------------------------------


def find_resources(cloudformation: Any, stack: str) -> StackResources:
    """The physical ids of the stack's GPU group, realizer cluster, service and scalable target, and pages
    bucket, skipping any already deleted (ops.aws.physical_ids)."""
    with step(f"looking up the resources of the stack {stack}"):
        physical = physical_ids(cloudformation, stack)
    target = physical.get(SCALABLE_TARGET)
    return StackResources(
        gpu_group=physical.get(GPU_GROUP),
        cluster=physical.get(CLUSTER),
        service=physical.get(SERVICE),
        scalable_target=ScalableTarget.from_physical_id(target) if target else None,
        pages_bucket=physical.get(PAGES_BUCKET),
        retained=tuple((name, physical[name]) for name in RETAINED if name in physical),
    )


def _short_name(arn: str) -> str:
    return arn.rsplit("/", 1)[-1]


def plan(stack: str, region: str, resources: StackResources) -> list[str]:
    """What teardown will do, one line per resource, for the confirmation."""
    lines = [f"the stack {stack} in {region}:"]
    if resources.scalable_target:
        lines.append(f"  realizer scaling {resources.scalable_target.resource_id}: min and max 0, suspended")
    else:
        lines.append("  no realizer scalable target")
    if resources.service and resources.cluster:
        lines.append(f"  realizer service {_short_name(resources.service)}: 0 tasks")
    else:
        lines.append("  no realizer service")
    if resources.gpu_group:
        lines.append(f"  GPU Auto Scaling group {resources.gpu_group}: protection off, 0 instances")
    else:
        lines.append("  no GPU Auto Scaling group")
    if resources.pages_bucket:
        lines.append(f"  pages bucket {resources.pages_bucket}: every object version deleted")
    else:
        lines.append("  no pages bucket")
    lines.append(f"  then the stack {stack} is deleted; what stays (docs/DEPLOY.md, 8. Tearing it down):")
    lines += [f"    {RETAINED[name].format(id=physical)}" for name, physical in resources.retained]
    if resources.cluster:
        lines.append(
            f"    the log group /aws/ecs/containerinsights/{resources.cluster}/performance: made by ECS, not the stack"
        )
    return lines


# --- the steps -----------------------------------------------------------------------------------------


def hold_scaling_at_zero(scaling: Any, target: ScalableTarget, console: Console) -> None:
    """Min and max 0, with scale-out and scheduled actions suspended: a schedule would set min again."""
    with step("setting the realizer's scalable target to 0"):
        scaling.register_scalable_target(
            ServiceNamespace=target.namespace,
            ResourceId=target.resource_id,
            ScalableDimension=target.dimension,
            MinCapacity=0,
            MaxCapacity=0,
            SuspendedState={"DynamicScalingOutSuspended": True, "ScheduledScalingSuspended": True},
        )
    console.say("the realizer's scalable target: min and max 0, scale-out and schedules suspended")


def stop_service(ecs: Any, cluster: str, service: str, pace: Pace, console: Console) -> None:
    """Desired count 0, then wait until no task of the service runs or starts."""
    with step("setting the realizer service to 0 tasks"):
        ecs.update_service(cluster=cluster, service=service, desiredCount=0)
    console.say(f"the realizer service {_short_name(service)}: desired count 0")
    started = console.clock()
    while True:
        with step("reading the realizer service"):
            described = ecs.describe_services(cluster=cluster, services=[service])["services"]
        tasks = sum(entry.get("runningCount", 0) + entry.get("pendingCount", 0) for entry in described)
        waited = console.clock() - started
        if tasks == 0:
            console.say(f"no realizer task runs ({waited:.0f} s)")
            return
        if waited >= pace.service_wait_s:
            raise TeardownError(
                f"the realizer service still had {tasks} tasks after {pace.service_wait_s:.0f} s: look at its events"
            )
        console.say(f"{waited:.0f} s: {tasks} realizer tasks still stopping")
        console.sleep(pace.poll_s)


def _group_instances(autoscaling: Any, group: str) -> list[dict[str, Any]]:
    groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"]
    return [instance for entry in groups for instance in entry.get("Instances", [])]


def _unprotect(autoscaling: Any, group: str, instances: Sequence[dict[str, Any]]) -> int:
    protected = [instance["InstanceId"] for instance in instances if instance.get("ProtectedFromScaleIn")]
    for start in range(0, len(protected), PROTECTION_BATCH):
        batch = protected[start : start + PROTECTION_BATCH]
        autoscaling.set_instance_protection(AutoScalingGroupName=group, InstanceIds=batch, ProtectedFromScaleIn=False)
    return len(protected)


def empty_gpu_group(autoscaling: Any, group: str, pace: Pace, console: Console) -> None:
    """Protection off, then capacity 0, so the capacity change terminates every instance; then wait.

    Protection goes first: a group at desired capacity 0 with protected instances keeps them, and only
    scales them in later (AWS does; moto never does)."""
    with step(f"removing scale-in protection in the GPU Auto Scaling group {group}"):
        instances = _group_instances(autoscaling, group)
        unprotected = _unprotect(autoscaling, group, instances)
    console.say(f"scale-in protection removed from {unprotected} of {len(instances)} GPU instances")
    with step(f"setting the GPU Auto Scaling group {group} to 0 instances"):
        autoscaling.update_auto_scaling_group(AutoScalingGroupName=group, MinSize=0, MaxSize=0, DesiredCapacity=0)
    console.say(f"the GPU Auto Scaling group {group}: min, max and desired capacity 0")
    started = console.clock()
    while True:
        with step(f"waiting for the GPU Auto Scaling group {group} to empty"):
            instances = _group_instances(autoscaling, group)
            # ECS's managed termination protection may have protected one again while a task still ran.
            _unprotect(autoscaling, group, instances)
        waited = console.clock() - started
        if not instances:
            console.say(f"the GPU Auto Scaling group has no instance ({waited:.0f} s)")
            return
        if waited >= pace.group_wait_s:
            raise TeardownError(
                f"the GPU Auto Scaling group {group} still had {len(instances)} instances after "
                f"{pace.group_wait_s:.0f} s: look at its activity history"
            )
        states = ", ".join(sorted({instance.get("LifecycleState", "?") for instance in instances}))
        console.say(f"{waited:.0f} s: {len(instances)} GPU instances left ({states})")
        console.sleep(pace.poll_s)


def empty_bucket(s3: Any, bucket: str, console: Console) -> None:
    """Every object version and delete marker (a bucket without versioning lists its objects as version
    "null", so this empties either kind)."""
    deleted = 0
    with step(f"emptying the pages bucket {bucket}"):
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            listed = [*page.get("Versions", []), *page.get("DeleteMarkers", [])]
            if not listed:
                continue
            objects = [{"Key": entry["Key"], "VersionId": entry["VersionId"]} for entry in listed]
            answer = s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
            if errors := answer.get("Errors"):
                code, message = errors[0].get("Code", "Error"), str(errors[0].get("Message", "")).rstrip(" .")
                raise TeardownError(
                    f"emptying the pages bucket {bucket} failed ({len(errors)} objects not deleted, the first: "
                    f"{f'{code}: {message}' if message else code})"
                )
            deleted += len(objects)
    console.say(f"the pages bucket {bucket} is empty ({deleted} object versions and delete markers deleted)")


def _delete_failures(cloudformation: Any, stack: str) -> str:
    """The reasons of the resources that failed to delete, from the stack's events since its deletion began."""
    reasons: list[str] = []
    try:
        for page in cloudformation.get_paginator("describe_stack_events").paginate(StackName=stack):
            for event in page["StackEvents"]:
                is_stack = event.get("ResourceType") == "AWS::CloudFormation::Stack"
                if is_stack and event.get("ResourceStatus") == "DELETE_IN_PROGRESS":
                    return "; ".join(reversed(reasons))
                if not is_stack and event.get("ResourceStatus") == "DELETE_FAILED":
                    reason = str(event.get("ResourceStatusReason", "no reason given")).rstrip(" .")
                    reasons.append(f"{event['LogicalResourceId']}: {reason}")
    except AWS_ERRORS:
        pass  # the waiter's own reason is given instead
    return "; ".join(reversed(reasons))


def delete_stack(cloudformation: Any, stack: str, pace: Pace, console: Console) -> None:
    from botocore.exceptions import WaiterError

    with step(f"deleting the stack {stack}"):
        cloudformation.delete_stack(StackName=stack)
    minutes = pace.stack_poll_s * pace.stack_polls / 60
    console.say(f"deleting the stack {stack}: CloudFormation's waiter, up to {minutes:.0f} minutes")
    try:
        cloudformation.get_waiter("stack_delete_complete").wait(
            StackName=stack, WaiterConfig={"Delay": pace.stack_poll_s, "MaxAttempts": pace.stack_polls}
        )
    except WaiterError as error:
        reasons = _delete_failures(cloudformation, stack)
        raise TeardownError(f"deleting the stack {stack} failed ({reasons or aws_reason(error)})") from None
    except AWS_ERRORS as error:
        raise TeardownError(f"deleting the stack {stack} failed ({aws_reason(error)})") from None
    console.say(f"the stack {stack} is deleted")


def teardown(stack: str, resources: StackResources, clients: Clients, pace: Pace, console: Console) -> None:
    """Every step in order; a TeardownError stops at the step that failed."""
    if resources.scalable_target:
        hold_scaling_at_zero(clients.scaling, resources.scalable_target, console)
    if resources.service and resources.cluster:
        stop_service(clients.ecs, resources.cluster, resources.service, pace, console)
    if resources.gpu_group:
        empty_gpu_group(clients.autoscaling, resources.gpu_group, pace, console)
    if resources.pages_bucket:
        empty_bucket(clients.s3, resources.pages_bucket, console)
    delete_stack(clients.cloudformation, stack, pace, console)


def confirmed(stack: str, ask: Callable[[str], str]) -> bool:
    try:
        answer = ask(f"Delete the stack {stack} and everything above? [y/N] ")
    except EOFError:  # no terminal to ask on: only --yes goes ahead
        return False
    return answer.strip().lower() in CONFIRM_ANSWERS


def main(
    argv: list[str] | None = None,
    *,
    ask: Callable[[str], str] = input,
    pace: Pace | None = None,
    out: TextIO | None = None,
) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops.teardown", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stack", required=True, help="the deployed stack's name")
    parser.add_argument("--region", help="its region (default: the AWS CLI's)")
    parser.add_argument("--yes", action="store_true", help="do not ask before changing anything")
    args = parser.parse_args(argv)
    console = Console(out=out or sys.stdout)
    try:
        clients = Clients.for_region(args.region)
        resources = find_resources(clients.cloudformation, args.stack)
        for line in plan(args.stack, clients.region, resources):
            console.say(line)
        if not args.yes and not confirmed(args.stack, ask):
            print("teardown: not confirmed; nothing was changed.", file=sys.stderr)
            return 1
        teardown(args.stack, resources, clients, pace or Pace(), console)
    except TeardownError as error:
        return report_failure("teardown", error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
