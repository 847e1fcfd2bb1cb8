"""Two desks in one account and region (issue 42, item 4): the metric namespace and every name the
template sets carry the stack's name, or CloudFormation makes the name up, so two stacks neither collide
on a name nor read or alarm on each other's metrics.

The names are evaluated as CloudFormation would for two stack names: `${AWS::StackName}` is the stack's
name, and a resource's Ref or attribute is a physical id CloudFormation generated from it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest
from cfnlint.decode import decode
from test_template import (
    DESK_NAMESPACE,
    DESK_NAMESPACE_SUB,
    FUNCTIONS,
    ROOT,
    TEMPLATE,
    function_environment,
    function_properties,
    metric_stats,
    realizer_container,
    resources_of_type,
)

# Properties whose key ends in "Name" but that name no resource: a metric, a key attribute, a device...
NOT_NAMES = {"MetricName", "AttributeName", "IndexName", "DisplayName", "DeviceName", "HeaderName", "DomainName"}
# Names unique only inside a parent the stack owns and CloudFormation named (a user pool, a cluster, an
# API): a fixed name there collides with nothing in another stack.
SCOPED_NAMES = {
    ("AWS::Cognito::UserPoolGroup", "GroupName"),
    ("AWS::Cognito::UserPoolClient", "ClientName"),
    ("AWS::ECS::Service", "ServiceName"),
    ("AWS::Serverless::HttpApi", "StageName"),
}
STACKS = ("desk-north", "desk-south")


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    decoded, matches = decode(str(TEMPLATE))
    assert not matches, [str(match) for match in matches]
    return decoded


def evaluate(value: Any, template: dict[str, Any], stack: str) -> str:
    """A name as CloudFormation would make it in a stack of this name, in us-east-1."""
    resources = template["Resources"]
    parameters = template.get("Parameters", {})

    def ref(name: str) -> str:
        if name == "AWS::StackName":
            return stack
        if name == "AWS::Region":
            return "us-east-1"
        if name in ("AWS::AccountId", "AWS::Partition", "AWS::URLSuffix"):
            return {"AWS::AccountId": "123456789012", "AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com"}[name]
        resource = name.split(".", 1)[0]
        if resource in resources:
            # CloudFormation's generated physical ids start with the stack's name.
            return f"{stack}-{resource}-GENERATED"
        assert name in parameters, name
        return str(parameters[name].get("Default", f"<{name}>"))

    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Ref" in value:
        return ref(str(value["Ref"]))
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        return ref(target[0] if isinstance(target, list) else str(target))
    if isinstance(value, dict) and "Fn::Sub" in value:
        text, names = (value["Fn::Sub"], {}) if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"]
        assert not names, value
        return re.sub(r"\$\{([^}!]+)\}", lambda match: ref(match.group(1)), text)
    raise AssertionError(f"cannot evaluate the name {value!r}")


def names_set(template: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    """(logical id, type, property path, value) for each name the template gives a resource: Name or
    any *Name property, on the resource's properties or in a map under them (not in lists: a container's
    environment, a WAF rule, a tag)."""
    found: list[tuple[str, str, str, Any]] = []

    def walk(logical_id: str, kind: str, node: dict[str, Any], path: str) -> None:
        for key, value in node.items():
            if key == "Events" and kind == "AWS::Serverless::Function":
                continue  # below: a SAM event's Name is the schedule's
            if key == "EventPattern":
                continue  # what a rule matches, not what it is called
            if (key == "Name" or key.endswith("Name")) and key not in NOT_NAMES:
                found.append((logical_id, kind, f"{path}{key}", value))
            elif isinstance(value, dict) and not any(k == "Ref" or k.startswith("Fn::") for k in value):
                walk(logical_id, kind, value, f"{path}{key}.")

    for logical_id, resource in template["Resources"].items():
        walk(logical_id, resource["Type"], resource.get("Properties") or {}, "")
    return found


def test_no_metric_of_the_desk_is_written_or_read_in_a_namespace_without_the_stack_name() -> None:
    """The text of the template names the desk's namespace only with the stack's name in it."""
    text = TEMPLATE.read_text()
    assert "EnrollmentDesk" in text
    bare = [line.strip() for line in text.splitlines() if re.search(r"EnrollmentDesk(?!/\$\{AWS::StackName\})", line)]
    assert bare == []


def test_every_function_writes_and_every_alarm_reads_the_one_stack_namespace(template: dict[str, Any]) -> None:
    functions = resources_of_type(template, "AWS::Serverless::Function")
    assert set(FUNCTIONS) <= set(functions)
    for name in functions:
        assert function_environment(template, name)["POWERTOOLS_METRICS_NAMESPACE"] == DESK_NAMESPACE_SUB, name
    custom = [metric for metric in metric_stats(template["Resources"]) if metric["Namespace"] == DESK_NAMESPACE_SUB]
    assert len(custom) >= 10
    for metric in metric_stats(template["Resources"]):
        namespace = metric["Namespace"]
        assert namespace == DESK_NAMESPACE_SUB or (
            isinstance(namespace, str) and namespace.startswith(("AWS/", "ECS/"))
        ), metric


def test_the_dashboard_reads_the_stack_namespace() -> None:
    from test_operations import dashboard_widgets

    decoded, _ = decode(str(TEMPLATE))
    rows = [
        row
        for widget in dashboard_widgets(decoded)
        for row in widget["properties"]["metrics"]
        if not isinstance(row[0], dict)
    ]
    custom = [row for row in rows if not row[0].startswith(("AWS/", "ECS/"))]
    assert custom
    assert {row[0] for row in custom} == {DESK_NAMESPACE}


def test_a_realizer_that_publishes_metrics_takes_the_namespace_from_its_task(template: dict[str, Any]) -> None:
    """The worker writes no metric of its own today (its jobs show in the realize queue's figures); one that
    does must write the stack's namespace, read from its task's environment."""
    sources = "\n".join(path.read_text() for path in (ROOT / "realizer_container").rglob("*.py"))
    publishes = re.search(r"put_metric_data|\"_aws\"|Metrics\(|METRICS_NAMESPACE", sources)
    env = {entry["Name"]: entry["Value"] for entry in realizer_container(template).get("Environment", [])}
    if publishes:
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == DESK_NAMESPACE_SUB
        assert "POWERTOOLS_METRICS_NAMESPACE" in sources
    else:
        assert "POWERTOOLS_METRICS_NAMESPACE" not in env


def test_two_stacks_write_to_two_namespaces(template: dict[str, Any]) -> None:
    namespaces = {evaluate(DESK_NAMESPACE_SUB, template, stack) for stack in STACKS}
    assert namespaces == {f"EnrollmentDesk/{stack}" for stack in STACKS}
    for namespace in namespaces:
        # CloudWatch's rule for a namespace: up to 255 of these characters, and not AWS/.
        assert re.fullmatch(r"[A-Za-z0-9.\-_/#: ]{1,255}", namespace) and not namespace.startswith("AWS/")


def test_every_name_the_template_sets_carries_the_stack_name(template: dict[str, Any]) -> None:
    """Each name is the stack's or made from a resource CloudFormation named, unless it is unique only
    inside a parent of the stack's own; two stack names give two disjoint sets of names."""
    named = names_set(template)
    assert len(named) >= 10, named
    by_stack: dict[str, set[tuple[str, str]]] = {}
    for stack in STACKS:
        names = set()
        for logical_id, kind, path, value in named:
            if (kind, path) in SCOPED_NAMES:
                continue
            name = evaluate(value, template, stack)
            assert stack in name, (logical_id, path, name)
            names.add((kind, name))
        by_stack[stack] = names
    first, second = by_stack.values()
    assert first and not first & second


def test_the_sweepers_schedule_is_named_by_cloudformation(template: dict[str, Any]) -> None:
    """SAM names a schedule after its logical id unless told to leave it to CloudFormation (OmitName):
    the same name in every stack of the account's default schedule group, so the second desk's deploy
    would fail. Any schedule of any function, and any Scheduler resource, is named from the stack."""
    schedules = 0
    for name in resources_of_type(template, "AWS::Serverless::Function"):
        for event in (function_properties(template, name).get("Events") or {}).values():
            if event["Type"] not in ("Schedule", "ScheduleV2"):
                continue
            schedules += 1
            properties = event["Properties"]
            if event["Type"] == "ScheduleV2" and properties.get("OmitName") is True:
                assert "Name" not in properties
            else:
                assert all(stack in evaluate(properties["Name"], template, stack) for stack in STACKS), name
    assert schedules >= 1
    for kind in ("AWS::Scheduler::Schedule", "AWS::Scheduler::ScheduleGroup", "AWS::Events::Rule"):
        for logical_id, resource in resources_of_type(template, kind).items():
            given = (resource.get("Properties") or {}).get("Name")
            if given is not None:
                assert all(stack in evaluate(given, template, stack) for stack in STACKS), logical_id


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({"POWERTOOLS_METRICS_NAMESPACE": "EnrollmentDesk/desk-north"}, "EnrollmentDesk/desk-north"),
        ({}, "EnrollmentDesk"),
    ],
)
def test_the_functions_read_the_namespace_from_their_environment(environment: dict[str, str], expected: str) -> None:
    """The layer's metrics take the namespace the template gives each function; without one (a test, a
    local run) a default, which devstack replaces with its own (EnrollmentDeskLocal)."""
    from devstack import stack

    env = {key: value for key, value in os.environ.items() if key != "POWERTOOLS_METRICS_NAMESPACE"}
    code = "from dialogue.aws.observability import metrics; print(metrics.namespace)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, **environment, "AWS_DEFAULT_REGION": "us-east-1"},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=ROOT,
    )
    assert result.stdout.strip() == expected
    assert stack._ENVIRONMENT["POWERTOOLS_METRICS_NAMESPACE"] == "EnrollmentDeskLocal"


def test_the_fleet_simulation_reads_only_alarms_on_the_stacks_namespace(template: dict[str, Any]) -> None:
    """`devstack fleet` matches the desk's own metrics by name; it refuses an alarm on one in another
    namespace (a bare EnrollmentDesk, another stack's), which in AWS would never get a datapoint."""
    import copy

    from devstack.fleet import FleetError, load_template, read_config

    shipped = load_template()
    read_config(shipped)
    for name, resource in shipped["Resources"].items():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        if not any(metric["Namespace"] == DESK_NAMESPACE_SUB for metric in metric_stats(resource)):
            continue
        for namespace in ("EnrollmentDesk", {"Fn::Sub": "EnrollmentDesk/another-desk"}):
            changed = copy.deepcopy(shipped)
            for metric in metric_stats(changed["Resources"][name]):
                if metric["Namespace"] == DESK_NAMESPACE_SUB:
                    metric["Namespace"] = namespace
            with pytest.raises(FleetError, match=f"{name} reads EnrollmentDesk"):
                read_config(changed)
