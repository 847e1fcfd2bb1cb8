"""`make teardown`: the stack lookup against botocore's Stubber, every step and the whole command on moto.

moto's CloudFormation builds the GPU group, the cluster and service and the bucket from a template, but
not an Application Auto Scaling target, so the steps are also run on resources made directly.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ops import teardown
from ops.teardown import Clients, Console, Pace, ScalableTarget, StackResources, TeardownError
from tests.fake_aws import mocked_aws

REGION = "us-east-1"
STACK = "enrollment-desk"
FAST = Pace(poll_s=0, service_wait_s=5, group_wait_s=5, stack_poll_s=1, stack_polls=3)
CLUSTER_BUSY = "The Cluster cannot be deleted while Container Instances are active"
SUSPENDED = {"DynamicScalingOutSuspended": True, "ScheduledScalingSuspended": True}

# The template's resources that teardown touches, as moto's CloudFormation can build them.
STACK_TEMPLATE = {
    "Resources": {
        "GpuLaunchConfiguration": {
            "Type": "AWS::AutoScaling::LaunchConfiguration",
            "Properties": {"ImageId": "ami-12c6146b", "InstanceType": "g5.xlarge"},
        },
        "GpuAutoScalingGroup": {
            "Type": "AWS::AutoScaling::AutoScalingGroup",
            "Properties": {
                "MinSize": "0",
                "MaxSize": "2",
                "DesiredCapacity": "2",
                "LaunchConfigurationName": {"Ref": "GpuLaunchConfiguration"},
                "AvailabilityZones": [f"{REGION}a"],
                "NewInstancesProtectedFromScaleIn": True,
            },
        },
        "RealizerCluster": {"Type": "AWS::ECS::Cluster", "Properties": {}},
        "RealizerTaskDefinition": {
            "Type": "AWS::ECS::TaskDefinition",
            "Properties": {
                "Family": "realizer",
                "ContainerDefinitions": [{"Name": "realizer", "Image": "realizer", "Memory": 512}],
            },
        },
        "RealizerService": {
            "Type": "AWS::ECS::Service",
            "Properties": {
                "Cluster": {"Ref": "RealizerCluster"},
                "TaskDefinition": {"Ref": "RealizerTaskDefinition"},
                "DesiredCount": 1,
            },
        },
        "PagesBucket": {"Type": "AWS::S3::Bucket", "Properties": {"VersioningConfiguration": {"Status": "Enabled"}}},
    }
}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clients]:
    with mocked_aws(monkeypatch, REGION):
        yield Clients.for_region(REGION)


def physical_ids(clients: Clients) -> dict[str, str]:
    listed = clients.cloudformation.list_stack_resources(StackName=STACK)["StackResourceSummaries"]
    return {entry["LogicalResourceId"]: entry["PhysicalResourceId"] for entry in listed}


def fill_bucket(s3: Any, bucket: str) -> None:
    """Two versions of one page and a deleted one (a version and a delete marker)."""
    s3.put_object(Bucket=bucket, Key="chat", Body=b"<html>1</html>")
    s3.put_object(Bucket=bucket, Key="chat", Body=b"<html>2</html>")
    s3.put_object(Bucket=bucket, Key="old.js", Body=b"1")
    s3.delete_object(Bucket=bucket, Key="old.js")


def versions_left(s3: Any, bucket: str) -> int:
    listed = s3.list_object_versions(Bucket=bucket)
    return len(listed.get("Versions", [])) + len(listed.get("DeleteMarkers", []))


@pytest.fixture
def deployed(aws: Clients) -> dict[str, str]:
    """The stack built by moto's CloudFormation: two protected GPU instances, one wanted task, a full bucket."""
    aws.cloudformation.create_stack(StackName=STACK, TemplateBody=json.dumps(STACK_TEMPLATE))
    ids = physical_ids(aws)
    # moto's CloudFormation leaves the bucket's VersioningConfiguration out; the template's bucket is versioned.
    aws.s3.put_bucket_versioning(Bucket=ids["PagesBucket"], VersioningConfiguration={"Status": "Enabled"})
    fill_bucket(aws.s3, ids["PagesBucket"])
    return ids


def group(clients: Clients, name: str) -> dict[str, Any]:
    (found,) = clients.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])["AutoScalingGroups"]
    return dict(found)


def desired_tasks(clients: Clients, cluster: str, service: str) -> int:
    (found,) = clients.ecs.describe_services(cluster=cluster, services=[service])["services"]
    return int(found["desiredCount"])


def stack_status(clients: Clients) -> str:
    listed = clients.cloudformation.list_stacks()["StackSummaries"]
    (summary,) = [entry for entry in listed if entry["StackName"] == STACK]
    return str(summary["StackStatus"])


# --- the lookup, with botocore's Stubber ---------------------------------------------------------------


def summary(logical: str, physical: str, status: str = "CREATE_COMPLETE") -> dict[str, Any]:
    return {
        "LogicalResourceId": logical,
        "PhysicalResourceId": physical,
        "ResourceType": "AWS::CloudFormation::WaitConditionHandle",  # the lookup goes by logical id only
        "LastUpdatedTimestamp": "2026-01-01T00:00:00Z",
        "ResourceStatus": status,
    }


def stubbed_cloudformation() -> tuple[Any, Stubber]:
    client = boto3.client(
        "cloudformation", region_name=REGION, aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    return client, Stubber(client)


def test_the_lookup_reads_every_physical_id_across_pages() -> None:
    # Given a stack whose resources come in two pages (the deployed stack has over 100), one already deleted
    client, stub = stubbed_cloudformation()
    target = "service/desk-cluster/desk-realizer|ecs:service:DesiredCount|ecs"
    service = "arn:aws:ecs:us-east-1:123456789012:service/desk-cluster/desk-realizer"
    first = [summary("GpuAutoScalingGroup", "desk-gpu"), summary("TurnApiFunction", "desk-turn-api")]
    second = [
        summary("RealizerCluster", "desk-cluster"),
        summary("RealizerService", service),
        summary("RealizerScalableTarget", target),
        summary("PagesBucket", "desk-pages", status="DELETE_COMPLETE"),
    ]
    asked = {"StackName": STACK}
    stub.add_response("list_stack_resources", {"StackResourceSummaries": first, "NextToken": "more"}, asked)
    stub.add_response("list_stack_resources", {"StackResourceSummaries": second}, {**asked, "NextToken": "more"})
    # When teardown looks the stack up
    with stub:
        found = teardown.find_resources(client, STACK)
    # Then it has every id it acts on, and none of a resource already deleted
    stub.assert_no_pending_responses()
    assert found == StackResources(
        gpu_group="desk-gpu",
        cluster="desk-cluster",
        service=service,
        scalable_target=ScalableTarget(
            namespace="ecs", resource_id="service/desk-cluster/desk-realizer", dimension="ecs:service:DesiredCount"
        ),
        pages_bucket=None,
    )


def test_a_stack_without_the_realizer_has_only_its_bucket() -> None:
    client, stub = stubbed_cloudformation()
    stub.add_response(
        "list_stack_resources",
        {"StackResourceSummaries": [summary("PagesBucket", "desk-pages"), summary("ConversationTable", "desk-table")]},
        {"StackName": STACK},
    )
    with stub:
        found = teardown.find_resources(client, STACK)
    assert found == StackResources(pages_bucket="desk-pages", retained=(("ConversationTable", "desk-table"),))
    assert "  no GPU Auto Scaling group" in teardown.plan(STACK, REGION, found)


def test_the_plan_names_what_stays_the_write_once_audit_bucket_with_its_retention() -> None:
    # Given a stack with the three resources its template retains
    client, stub = stubbed_cloudformation()
    retained = [
        summary("ConversationTable", "desk-table"),
        summary("StaffUserPool", "us-east-1_AbCdEf123"),
        summary("AuditBucket", "desk-auditbucket-1a2b3c"),
        summary("RealizerCluster", "desk-cluster"),
    ]
    stub.add_response("list_stack_resources", {"StackResourceSummaries": retained}, {"StackName": STACK})
    with stub:
        found = teardown.find_resources(client, STACK)
    # Then the plan, asked about before anything changes, says what outlives the stack and for how long
    assert teardown.plan(STACK, REGION, found)[-5:] == [
        f"  then the stack {STACK} is deleted; what stays (docs/DEPLOY.md, 8. Tearing it down):",
        "    the table desk-table: retained with the conversations",
        "    the staff user pool us-east-1_AbCdEf123: retained with the staff accounts",
        "    the audit bucket desk-auditbucket-1a2b3c: retained and write-once, each copy under Object Lock for "
        "AuditRetentionDays after it was written, so no one can empty or delete it sooner",
        "    the log group /aws/ecs/containerinsights/desk-cluster/performance: made by ECS, not the stack",
    ]


def test_a_missing_stack_fails_the_lookup_with_one_sentence() -> None:
    client, stub = stubbed_cloudformation()
    stub.add_client_error(
        "list_stack_resources",
        service_error_code="ValidationError",
        service_message="Stack with id nope does not exist",
        expected_params={"StackName": "nope"},
    )
    with stub, pytest.raises(TeardownError) as failure:
        teardown.find_resources(client, "nope")
    assert str(failure.value) == (
        "looking up the resources of the stack nope failed (ValidationError: Stack with id nope does not exist)"
    )


def test_a_stack_that_fails_to_delete_gives_its_events_reasons() -> None:
    # Given a stack whose deletion fails on the cluster
    client, stub = stubbed_cloudformation()
    stub.add_response("delete_stack", {}, {"StackName": STACK})
    failed = {"StackName": STACK, "CreationTime": "2026-01-01T00:00:00Z", "StackStatus": "DELETE_FAILED"}
    stub.add_response("describe_stacks", {"Stacks": [failed]}, {"StackName": STACK})

    def event(logical: str, kind: str, status: str, reason: str = "") -> dict[str, Any]:
        return {
            "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/enrollment-desk/1",
            "EventId": f"{logical}-{status}",
            "StackName": STACK,
            "LogicalResourceId": logical,
            "ResourceType": kind,
            "Timestamp": "2026-01-01T00:00:00Z",
            "ResourceStatus": status,
            "ResourceStatusReason": reason,
        }

    events = [
        event(STACK, "AWS::CloudFormation::Stack", "DELETE_FAILED", "The following resource(s) failed to delete"),
        event("RealizerCluster", "AWS::ECS::Cluster", "DELETE_FAILED", f"{CLUSTER_BUSY}."),
        event("PagesBucket", "AWS::S3::Bucket", "DELETE_COMPLETE"),
        event(STACK, "AWS::CloudFormation::Stack", "DELETE_IN_PROGRESS", "User Initiated"),
        event("GpuAutoScalingGroup", "AWS::AutoScaling::AutoScalingGroup", "DELETE_FAILED", "an earlier attempt"),
    ]
    stub.add_response("describe_stack_events", {"StackEvents": events}, {"StackName": STACK})
    out = io.StringIO()
    # When teardown deletes it
    with stub, pytest.raises(TeardownError) as failure:
        teardown.delete_stack(client, STACK, FAST, Console(out=out, sleep=lambda _: None))
    # Then the sentence names the step and this attempt's reasons, not an earlier attempt's
    assert str(failure.value) == f"deleting the stack {STACK} failed (RealizerCluster: {CLUSTER_BUSY})"


# --- the steps on moto ----------------------------------------------------------------------------------


def test_every_step_on_moto_from_protected_instances_to_a_deleted_stack(aws: Clients) -> None:
    # Given two protected GPU instances, a service that wants a task, a scalable target with a schedule,
    # a versioned bucket with pages, and a stack to delete
    aws.autoscaling.create_launch_configuration(
        LaunchConfigurationName="gpu", ImageId="ami-12c6146b", InstanceType="g5.xlarge"
    )
    aws.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="desk-gpu",
        LaunchConfigurationName="gpu",
        MinSize=0,
        MaxSize=2,
        DesiredCapacity=2,
        AvailabilityZones=[f"{REGION}a"],
        NewInstancesProtectedFromScaleIn=True,
    )
    instances = [instance["InstanceId"] for instance in group(aws, "desk-gpu")["Instances"]]
    assert len(instances) == 2
    assert all(instance["ProtectedFromScaleIn"] for instance in group(aws, "desk-gpu")["Instances"])
    aws.ecs.create_cluster(clusterName="desk-cluster")
    aws.ecs.register_task_definition(
        family="realizer", containerDefinitions=[{"name": "realizer", "image": "realizer", "memory": 512}]
    )
    service = aws.ecs.create_service(
        cluster="desk-cluster", serviceName="desk-realizer", taskDefinition="realizer", desiredCount=1
    )["service"]["serviceArn"]
    target = ScalableTarget(
        namespace="ecs", resource_id="service/desk-cluster/desk-realizer", dimension="ecs:service:DesiredCount"
    )
    aws.scaling.register_scalable_target(
        ServiceNamespace=target.namespace,
        ResourceId=target.resource_id,
        ScalableDimension=target.dimension,
        MinCapacity=1,
        MaxCapacity=2,
    )
    aws.s3.create_bucket(Bucket="desk-pages")
    aws.s3.put_bucket_versioning(Bucket="desk-pages", VersioningConfiguration={"Status": "Enabled"})
    fill_bucket(aws.s3, "desk-pages")
    assert versions_left(aws.s3, "desk-pages") == 4
    aws.cloudformation.create_stack(
        StackName=STACK, TemplateBody=json.dumps({"Resources": {"Alarms": {"Type": "AWS::SNS::Topic"}}})
    )
    resources = StackResources(
        gpu_group="desk-gpu",
        cluster="desk-cluster",
        service=service,
        scalable_target=target,
        pages_bucket="desk-pages",
    )
    out = io.StringIO()
    # When teardown runs every step
    teardown.teardown(STACK, resources, aws, FAST, Console(out=out, sleep=lambda _: None))
    # Then nothing can start a task, the group is empty, its instances are gone, the bucket is empty,
    # and the stack is deleted
    (held,) = aws.scaling.describe_scalable_targets(ServiceNamespace="ecs", ResourceIds=[target.resource_id])[
        "ScalableTargets"
    ]
    assert (held["MinCapacity"], held["MaxCapacity"]) == (0, 0)
    assert {key: held["SuspendedState"][key] for key in SUSPENDED} == SUSPENDED
    assert desired_tasks(aws, "desk-cluster", service) == 0
    emptied = group(aws, "desk-gpu")
    assert (emptied["MinSize"], emptied["MaxSize"], emptied["DesiredCapacity"], emptied["Instances"]) == (0, 0, 0, [])
    reservations = aws_ec2(aws).describe_instances(InstanceIds=instances)["Reservations"]
    assert {instance["State"]["Name"] for entry in reservations for instance in entry["Instances"]} == {"terminated"}
    assert versions_left(aws.s3, "desk-pages") == 0
    assert stack_status(aws) == "DELETE_COMPLETE"
    assert out.getvalue().splitlines() == [
        "teardown: the realizer's scalable target: min and max 0, scale-out and schedules suspended",
        "teardown: the realizer service desk-realizer: desired count 0",
        "teardown: no realizer task runs (0 s)",
        "teardown: scale-in protection removed from 2 of 2 GPU instances",
        "teardown: the GPU Auto Scaling group desk-gpu: min, max and desired capacity 0",
        "teardown: the GPU Auto Scaling group has no instance (0 s)",
        "teardown: the pages bucket desk-pages is empty (4 object versions and delete markers deleted)",
        f"teardown: deleting the stack {STACK}: CloudFormation's waiter, up to 0 minutes",
        f"teardown: the stack {STACK} is deleted",
    ]


def aws_ec2(clients: Clients) -> Any:
    return boto3.client("ec2", region_name=clients.region)


def test_the_wait_for_the_group_is_bounded_and_says_so(aws: Clients) -> None:
    # Given a group whose instances never leave (as when something protects them again and again)
    aws.autoscaling.create_launch_configuration(
        LaunchConfigurationName="gpu", ImageId="ami-12c6146b", InstanceType="g5.xlarge"
    )
    aws.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="desk-gpu",
        LaunchConfigurationName="gpu",
        MinSize=1,
        MaxSize=1,
        AvailabilityZones=[f"{REGION}a"],
    )
    ticks = iter(range(0, 1000, 3))
    out = io.StringIO()
    console = Console(out=out, sleep=lambda _: None, clock=lambda: float(next(ticks)))
    stuck = Pace(poll_s=0, group_wait_s=5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aws.autoscaling, "update_auto_scaling_group", lambda **_: None)
        # When teardown waits for it to empty
        with pytest.raises(TeardownError) as failure:
            teardown.empty_gpu_group(aws.autoscaling, "desk-gpu", stuck, console)
    # Then it gives up after the bound with one sentence, having said how many instances were left
    assert str(failure.value) == (
        "the GPU Auto Scaling group desk-gpu still had 1 instances after 5 s: look at its activity history"
    )
    assert "teardown: 3 s: 1 GPU instances left (InService)" in out.getvalue().splitlines()


# --- the command on a moto stack ------------------------------------------------------------------------


def test_the_command_with_yes_tears_down_a_moto_stack(
    deployed: dict[str, str], aws: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    instances = [instance["InstanceId"] for instance in group(aws, deployed["GpuAutoScalingGroup"])["Instances"]]
    # When `python -m ops.teardown --stack NAME --yes` runs
    status = teardown.main(["--stack", STACK, "--region", REGION, "--yes"], pace=FAST)
    # Then it planned from the stack's resources, stopped the service, emptied the group and the bucket
    # and deleted the stack (moto's CloudFormation deletes the group and the service with it)
    shown = capsys.readouterr()
    assert status == 0, shown.err
    assert shown.err == ""
    assert shown.out.splitlines()[:8] == [
        f"teardown: the stack {STACK} in {REGION}:",
        "teardown:   no realizer scalable target",  # moto's CloudFormation cannot build one
        f"teardown:   realizer service {deployed['RealizerService'].rsplit('/', 1)[-1]}: 0 tasks",
        f"teardown:   GPU Auto Scaling group {deployed['GpuAutoScalingGroup']}: protection off, 0 instances",
        f"teardown:   pages bucket {deployed['PagesBucket']}: every object version deleted",
        f"teardown:   then the stack {STACK} is deleted; what stays (docs/DEPLOY.md, 8. Tearing it down):",
        f"teardown:     the log group /aws/ecs/containerinsights/{deployed['RealizerCluster']}/performance: made by "
        "ECS, not the stack",
        f"teardown: the realizer service {deployed['RealizerService'].rsplit('/', 1)[-1]}: desired count 0",
    ]
    assert "teardown: scale-in protection removed from 2 of 2 GPU instances" in shown.out
    assert "teardown: the GPU Auto Scaling group has no instance (0 s)" in shown.out
    reservations = aws_ec2(aws).describe_instances(InstanceIds=instances)["Reservations"]
    assert {instance["State"]["Name"] for entry in reservations for instance in entry["Instances"]} == {"terminated"}
    bucket = deployed["PagesBucket"]
    assert f"teardown: the pages bucket {bucket} is empty (4 object versions and delete markers deleted)" in shown.out
    assert bucket not in {entry["Name"] for entry in aws.s3.list_buckets()["Buckets"]}  # deleted with the stack
    assert stack_status(aws) == "DELETE_COMPLETE"
    assert shown.out.splitlines()[-1] == f"teardown: the stack {STACK} is deleted"


def refuse(_: str) -> str:
    return "no"


def no_terminal(_: str) -> str:
    raise EOFError


@pytest.mark.parametrize("ask", [refuse, lambda _: "", no_terminal], ids=["no", "enter", "no-terminal"])
def test_without_yes_an_answer_other_than_yes_changes_nothing(
    deployed: dict[str, str], aws: Clients, capsys: pytest.CaptureFixture[str], ask: Any
) -> None:
    # When the command asks and the answer is not yes
    status = teardown.main(["--stack", STACK, "--region", REGION], ask=ask, pace=FAST)
    # Then it stops with one sentence, and every resource is as it was
    shown = capsys.readouterr()
    assert status == 1
    assert shown.err.splitlines() == ["teardown: not confirmed; nothing was changed."]
    gpu = group(aws, deployed["GpuAutoScalingGroup"])
    assert gpu["DesiredCapacity"] == 2 and gpu["MaxSize"] == 2
    assert [instance["ProtectedFromScaleIn"] for instance in gpu["Instances"]] == [True, True]
    assert desired_tasks(aws, deployed["RealizerCluster"], deployed["RealizerService"]) == 1
    assert versions_left(aws.s3, deployed["PagesBucket"]) == 4
    assert stack_status(aws) == "CREATE_COMPLETE"


def test_an_aws_error_stops_the_command_with_one_sentence_naming_the_step(
    deployed: dict[str, str], aws: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a stack whose bucket someone deleted by hand (CloudFormation still lists it)
    bucket = deployed["PagesBucket"]
    for entry in aws.s3.list_object_versions(Bucket=bucket).get("Versions", []):
        aws.s3.delete_object(Bucket=bucket, Key=entry["Key"], VersionId=entry["VersionId"])
    for entry in aws.s3.list_object_versions(Bucket=bucket).get("DeleteMarkers", []):
        aws.s3.delete_object(Bucket=bucket, Key=entry["Key"], VersionId=entry["VersionId"])
    aws.s3.delete_bucket(Bucket=bucket)
    # When the command runs
    status = teardown.main(["--stack", STACK, "--region", REGION, "--yes"], pace=FAST)
    # Then it stops at that step with one sentence, before deleting the stack
    shown = capsys.readouterr()
    assert status == 1
    assert shown.err.splitlines() == [
        f"teardown: emptying the pages bucket {bucket} failed (NoSuchBucket: The specified bucket does not exist)."
    ]
    assert stack_status(aws) == "CREATE_COMPLETE"


def test_a_missing_stack_stops_the_command_with_one_sentence(aws: Clients, capsys: pytest.CaptureFixture[str]) -> None:
    status = teardown.main(["--stack", "nope", "--region", REGION, "--yes"], pace=FAST)
    shown = capsys.readouterr()
    assert status == 1
    assert shown.out == ""
    assert len(shown.err.splitlines()) == 1
    assert shown.err.startswith("teardown: looking up the resources of the stack nope failed (ValidationError: ")
