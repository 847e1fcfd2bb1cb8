"""The stack as an operator runs it: scaling that cannot flap, desk hours, updates that keep warm tasks
and roll back broken images, alarms and events on one topic, a budget, a dashboard of metrics that
exist, the image repository and the hardened container, and SnapStart on every function.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from cfnlint.decode import decode
from test_template import (
    DESK_NAMESPACE,
    DESK_NAMESPACE_SUB,
    FUNCTIONS,
    KNOWN_METRICS,
    ROOT,
    TEMPLATE,
    function_properties,
    metric_stats,
    namespace_of,
    only_resource,
    realizer_container,
    referenced_id,
    resources_of_type,
)

from dialogue.actions import FIXED_ACTIONS


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    decoded, matches = decode(str(TEMPLATE))
    assert not matches, [str(match) for match in matches]
    return decoded


REALIZER_RESOURCES = {
    "RealizerTaskDefinition",
    "RealizerService",
    "RealizerScalableTarget",
    "RealizerBacklogPerTaskPolicy",
    "RealizerWakeFromZeroPolicy",
    "RealizerWakeFromZeroAlarm",
    "RealizerSleepWhenIdlePolicy",
    "RealizerIdleAlarm",
}


def scaling_policies(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: resource["Properties"]
        for name, resource in resources_of_type(template, "AWS::ApplicationAutoScaling::ScalingPolicy").items()
    }


def alarms_acting_on(template: dict[str, Any], target: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, resource["Properties"])
        for name, resource in resources_of_type(template, "AWS::CloudWatch::Alarm").items()
        if {"Ref": target} in resource["Properties"].get("AlarmActions", [])
    ]


def test_target_tracking_never_scales_in(template: dict[str, Any]) -> None:
    (tracking,) = [p for p in scaling_policies(template).values() if p["PolicyType"] == "TargetTrackingScaling"]
    config = tracking["TargetTrackingScalingPolicyConfiguration"]
    assert config["DisableScaleIn"] is True
    assert "ScaleInCooldown" not in config


def test_only_the_idle_alarm_scales_in_and_it_counts_jobs_sent_and_received(template: dict[str, Any]) -> None:
    to_zero = [
        name
        for name, policy in scaling_policies(template).items()
        if policy["PolicyType"] == "StepScaling"
        and [step["ScalingAdjustment"] for step in policy["StepScalingPolicyConfiguration"]["StepAdjustments"]] == [0]
    ]
    assert to_zero == ["RealizerSleepWhenIdlePolicy"]
    ((_, alarm),) = alarms_acting_on(template, "RealizerSleepWhenIdlePolicy")
    queries = {query["Id"]: query for query in alarm["Metrics"]}
    (returned,) = [query for query in alarm["Metrics"] if query.get("ReturnData")]
    # Idle: a task running and no job sent or received in the minute (tests/deploy/test_gpu_capacity.py
    # evaluates it): the queue's counters, summed, never its once-a-minute gauges (issue 42).
    assert returned["Expression"] == "IF(FILL(running, 0) >= 1 AND (FILL(sent, 0) + FILL(received, 0)) < 1, 1, 0)"
    watched = {term: queries[term]["MetricStat"]["Metric"] for term in ("sent", "received", "running")}
    assert {term: metric["MetricName"] for term, metric in watched.items()} == {
        "sent": "NumberOfMessagesSent",
        "received": "NumberOfMessagesReceived",
        "running": "RunningTaskCount",
    }
    for term in ("sent", "received"):
        assert referenced_id(watched[term]["Dimensions"][0]["Value"]) == "RealizeQueue"
        assert queries[term]["MetricStat"]["Stat"] == "Sum"
    # Fifteen idle minutes in a row; no data at all (no task, an inactive queue) is not idle.
    assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"], alarm["TreatMissingData"]) == (
        15,
        15,
        "notBreaching",
    )
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1)


def test_the_scaling_arithmetic_is_written_down(template: dict[str, Any]) -> None:
    text = (ROOT / "template.yaml").read_text()
    comment = text[text.index("# Scaling, and why it cannot flap") : text.index("  RealizerScalableTarget:")]
    for words in ("DisableScaleIn", "10-15 minute cold start", "no job was sent or received", "15 minutes"):
        assert words in comment, words


def test_desk_hours_hold_one_task_on_a_schedule(template: dict[str, Any]) -> None:
    _, target = only_resource(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    condition, actions, otherwise = target["ScheduledActions"]["Fn::If"]
    assert condition == "HasDeskHours" and otherwise == {"Ref": "AWS::NoValue"}
    opens, closes = actions
    assert referenced_id(opens["Schedule"]) == "DeskOpensSchedule"
    assert opens["ScalableTargetAction"]["MinCapacity"] == 1
    assert referenced_id(closes["Schedule"]) == "DeskClosesSchedule"
    # The closing: off (0 to 0, the off switch) unless RealizerOutsideDeskHours is on-demand (issue 42).
    assert closes["ScalableTargetAction"]["MinCapacity"] == {
        "Fn::If": ["OffOutsideDeskHours", 0, {"Ref": "RealizerMinTasks"}]
    }
    assert opens["ScalableTargetAction"]["MaxCapacity"] == {"Ref": "RealizerMaxTasks"}  # on again
    assert referenced_id(opens["Timezone"]) == referenced_id(closes["Timezone"]) == "DeskTimezone"
    parameters = template["Parameters"]
    for name in ("DeskOpensSchedule", "DeskClosesSchedule"):
        pattern = re.compile(parameters[name]["AllowedPattern"])
        assert parameters[name]["Default"] == ""
        assert pattern.fullmatch("cron(45 7 ? * MON-FRI *)") and pattern.fullmatch("")
        assert not pattern.fullmatch("rate(5 minutes)")


def test_the_first_deploy_makes_no_realizer_and_the_service_starts_at_zero_tasks(template: dict[str, Any]) -> None:
    digest = template["Parameters"]["RealizerImageDigest"]
    assert digest["Default"] == ""
    pattern = re.compile(digest["AllowedPattern"])
    assert pattern.fullmatch("sha256:" + "ab" * 32) and pattern.fullmatch("")
    assert not pattern.fullmatch("latest") and not pattern.fullmatch("sha256:abc")
    # An image, and no other stack's realizer in use (SharedRealizerQueueArn: tests/deploy/test_template.py).
    assert template["Conditions"]["HasRealizer"] == {
        "Fn::And": [
            {"Fn::Not": [{"Condition": "UsesSharedRealizer"}]},
            {"Fn::Not": [{"Fn::Equals": [{"Ref": "RealizerImageDigest"}, ""]}]},
        ]
    }
    for name in REALIZER_RESOURCES:
        assert template["Resources"][name].get("Condition") == "HasRealizer", name
    _, service = only_resource(template, "AWS::ECS::Service")
    # Created at zero tasks, so no create or update waits on a GPU (tests/deploy/test_gpu_capacity.py).
    assert service["DesiredCount"] == 0
    deployment = service["DeploymentConfiguration"]
    assert deployment["DeploymentCircuitBreaker"] == {"Enable": True, "Rollback": True}
    # The new task starts beside the old one, which serves until the new one is healthy.
    assert (deployment["MinimumHealthyPercent"], deployment["MaximumPercent"]) == (100, 200)
    assert template["Parameters"]["RealizerMinTasks"]["Default"] == 0


def test_the_image_comes_from_the_stacks_repository_by_digest(template: dict[str, Any]) -> None:
    repository_id, repository = only_resource(template, "AWS::ECR::Repository")
    assert repository["ImageTagMutability"] == "IMMUTABLE"
    assert repository["ImageScanningConfiguration"]["ScanOnPush"] is True
    assert repository["EmptyOnDelete"] is True
    rules = json.loads(repository["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]
    selections = {(rule["selection"]["tagStatus"], rule["selection"]["countType"]) for rule in rules}
    assert selections == {("untagged", "sinceImagePushed"), ("any", "imageCountMoreThan")}
    assert all(rule["action"]["type"] == "expire" for rule in rules)
    assert realizer_container(template)["Image"]["Fn::Sub"].startswith("${" + repository_id + ".RepositoryUri}@")
    role = template["Resources"]["RealizerExecutionRole"]["Properties"]
    (pull,) = [
        statement
        for policy in role["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
        if "ecr:BatchGetImage" in statement["Action"]
    ]
    assert referenced_id(pull["Resource"]) == repository_id
    assert "RealizerRepositoryUri" in template["Outputs"]


def test_the_container_is_hardened(template: dict[str, Any]) -> None:
    container = realizer_container(template)
    assert container["ReadonlyRootFilesystem"] is True
    assert container["Privileged"] is False
    assert container["User"] == "10001:10001"
    linux = container["LinuxParameters"]
    assert linux["Capabilities"]["Drop"] == ["ALL"]
    assert "Add" not in linux["Capabilities"]
    (tmp,) = linux["Tmpfs"]
    assert tmp["ContainerPath"] == "/tmp" and tmp["Size"] >= 1024
    # Docker mounts a tmpfs noexec unless told: torch and Triton load the kernels they compile there.
    assert "exec" in tmp["MountOptions"] and "noexec" not in tmp["MountOptions"]
    # Every cache the image points at lives on that tmpfs.
    dockerfile = (ROOT / "realizer_container" / "Dockerfile").read_text()
    caches = dict(re.findall(r"\b([A-Z_]*(?:CACHE|CONFIG)[A-Z_]*)=(\S+)", dockerfile))
    for name, path in caches.items():
        if name not in {"HF_HUB_DISABLE_TELEMETRY"}:
            assert path.startswith("/tmp"), (name, path)


def notification_alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(alarms_acting_on(template, "AlarmTopic"))


def test_at_least_ten_alarms_tell_the_topic(template: dict[str, Any]) -> None:
    alarms = notification_alarms(template)
    assert len(alarms) >= 10, sorted(alarms)
    for name, alarm in alarms.items():
        assert {"Ref": "AlarmTopic"} in alarm.get("OKActions", []), name
        assert alarm["AlarmDescription"], name


def test_every_function_has_an_errors_and_a_throttles_alarm(template: dict[str, Any]) -> None:
    watched = {
        (alarm["MetricName"], referenced_id(alarm["Dimensions"][0]["Value"]))
        for alarm in notification_alarms(template).values()
        if alarm.get("Namespace") == "AWS/Lambda"
    }
    assert watched == {(metric, name) for name in FUNCTIONS for metric in ("Errors", "Throttles")}


def test_the_http_api_5xx_has_an_alarm(template: dict[str, Any]) -> None:
    (alarm,) = [a for a in notification_alarms(template).values() if a.get("Namespace") == "AWS/ApiGateway"]
    assert alarm["MetricName"] == "5xx"
    dimensions = {d["Name"]: referenced_id(d["Value"]) for d in alarm["Dimensions"]}
    assert dimensions == {"ApiId": "ConversationApi", "Stage": "Stage"}


def rate_alarm(template: dict[str, Any], name: str) -> tuple[dict[str, Any], dict[str, str]]:
    alarm = notification_alarms(template)[name]
    names = {
        query["Id"]: query["MetricStat"]["Metric"]["MetricName"] for query in alarm["Metrics"] if "MetricStat" in query
    }
    for query in alarm["Metrics"]:
        if "MetricStat" in query:
            metric = query["MetricStat"]["Metric"]
            assert metric["Namespace"] == DESK_NAMESPACE_SUB
            assert metric["Dimensions"] == [{"Name": "service", "Value": "screen_reply"}]
    return alarm, names


def test_the_fallback_and_held_rates_have_alarms_on_the_metrics_the_screen_function_emits(
    template: dict[str, Any],
) -> None:
    fallback, names = rate_alarm(template, "FallbackRateAlarm")
    assert set(names.values()) == {"FallbacksShown", "RepliesScreened", "DeadlineFallbacks"}
    held, names = rate_alarm(template, "HeldRateAlarm")
    assert set(names.values()) == {"RepliesHeld", "RepliesScreened"}
    for alarm in (fallback, held):
        (returned,) = [query for query in alarm["Metrics"] if query.get("ReturnData")]
        assert "100 *" in returned["Expression"] and ">= 10" in returned["Expression"]
        assert 0 < alarm["Threshold"] < 100
    emitted = (ROOT / "functions" / "screen_reply" / "screen_reply.py").read_text()
    for metric in ("FallbacksShown", "RepliesScreened", "DeadlineFallbacks", "RepliesHeld", "ReplySeconds"):
        assert f'name="{metric}"' in emitted, metric


def test_stopped_tasks_and_failed_launches_reach_the_topic(template: dict[str, Any]) -> None:
    rules = {
        name: resource["Properties"] for name, resource in resources_of_type(template, "AWS::Events::Rule").items()
    }
    stopped = rules["RealizerTaskStoppedRule"]["EventPattern"]
    assert stopped["detail-type"] == ["ECS Task State Change"]
    assert referenced_id(stopped["detail"]["clusterArn"][0]) == "RealizerCluster"
    assert stopped["detail"]["lastStatus"] == ["STOPPED"]
    # A scale-in or a deploy stops tasks too (ServiceSchedulerInitiated): those are not news. A
    # health-check kill is the same stop code with a health-check reason: that is news.
    on_its_own, health_check_kill = stopped["detail"]["$or"]
    assert on_its_own == {"stopCode": ["EssentialContainerExited", "TaskFailedToStart"]}
    assert health_check_kill == {
        "stopCode": ["ServiceSchedulerInitiated"],
        "stoppedReason": [{"wildcard": "*health check*"}],
    }
    assert "stopCode" not in stopped["detail"]
    # No mail per failed GPU launch (issue 42): RealizerNotServingAlarm speaks once, and stops the retries.
    assert "GpuLaunchFailedRule" not in rules
    for name, rule in rules.items():
        (target,) = rule["Targets"]
        assert referenced_id(target["Arn"]) == "AlarmTopic", name
        assert referenced_id(target["DeadLetterConfig"]["Arn"]) == "EventRuleDeadLetterQueue", name
    _, policy = only_resource(template, "AWS::SNS::TopicPolicy")
    publishers = {statement["Principal"]["Service"]: statement for statement in policy["PolicyDocument"]["Statement"]}
    assert set(publishers) == {"cloudwatch.amazonaws.com", "events.amazonaws.com", "budgets.amazonaws.com"}
    sources = publishers["events.amazonaws.com"]["Condition"]["ArnEquals"]["aws:SourceArn"]
    assert {referenced_id(source) for source in sources} == set(rules)


def test_a_monthly_budget_with_its_limit_as_a_parameter(template: dict[str, Any]) -> None:
    _, budget = only_resource(template, "AWS::Budgets::Budget")
    assert budget["Budget"]["TimeUnit"] == "MONTHLY" and budget["Budget"]["BudgetType"] == "COST"
    assert referenced_id(budget["Budget"]["BudgetLimit"]["Amount"]) == "MonthlyBudgetUsd"
    kinds = set()
    for notification in budget["NotificationsWithSubscribers"]:
        (subscriber,) = notification["Subscribers"]
        assert subscriber["SubscriptionType"] == "SNS" and referenced_id(subscriber["Address"]) == "AlarmTopic"
        kinds.add(notification["Notification"]["NotificationType"])
    assert kinds == {"ACTUAL", "FORECASTED"}


def dashboard_widgets(template: dict[str, Any]) -> list[dict[str, Any]]:
    _, dashboard = only_resource(template, "AWS::CloudWatch::Dashboard")
    body = dashboard["DashboardBody"]["Fn::Sub"]
    known = set(template["Resources"]) | set(template["Parameters"]) | {"AWS::Region", "AWS::StackName"}
    for reference in re.findall(r"\$\{([^}]+)\}", body):
        assert reference.split(".", 1)[0] in known, reference
    # The desk's namespace is kept as the alarms write it (DESK_NAMESPACE), the other references made "x".
    return json.loads(re.sub(r"\$\{(?!AWS::StackName\})[^}]+\}", "x", body))["widgets"]


def test_the_dashboard_shows_what_an_operator_needs_from_metrics_that_exist(template: dict[str, Any]) -> None:
    widgets = dashboard_widgets(template)
    titles = " / ".join(widget["properties"]["title"].lower() for widget in widgets)
    for words in ("turns by action", "fallback and held", "queues", "latency", "gpu tasks and instances", "staff",
                  "off switch"):  # fmt: skip
        assert words in titles, words
    switch = next(w for w in widgets if "off switch" in w["properties"]["title"].lower())
    charted = {row[1] for row in switch["properties"]["metrics"] if not isinstance(row[0], dict)}
    assert {"RealizerSwitchedOff", "RealizerOff", "RealizerWoken"} <= charted  # an alarm's stop, its turns, a wake
    known = {
        **KNOWN_METRICS,
        DESK_NAMESPACE: KNOWN_METRICS[DESK_NAMESPACE]
        | {f"Action_{action}" for action in FIXED_ACTIONS}
        | {"Action_request"}
        | {"Reviews_pending", "Handoffs_open"},
    }
    for widget in widgets:
        for row in widget["properties"]["metrics"]:
            if isinstance(row[0], dict):  # a metric math expression
                continue
            namespace, name = row[0], row[1]
            assert name in known[namespace], (namespace, name)
    latency = next(w for w in widgets if "latency" in w["properties"]["title"].lower())
    stats = {row[-1]["stat"] for row in latency["properties"]["metrics"]}
    assert stats == {"p50", "p95"}
    assert "DashboardUrl" in template["Outputs"]


def test_every_metric_any_alarm_or_policy_names_exists(template: dict[str, Any]) -> None:
    for metric in metric_stats(template["Resources"]):
        assert metric["MetricName"] in KNOWN_METRICS[namespace_of(metric["Namespace"])], metric


def test_every_function_starts_from_a_snapshot(template: dict[str, Any]) -> None:
    """SnapStart on by default; `SnapStart` off (many desk stacks, issue 42: the snapshots are most of a
    stack's cost at rest) takes none, and keeps the versions and the live alias every wiring names."""
    parameter = template["Parameters"]["SnapStart"]
    assert (parameter["Default"], parameter["AllowedValues"]) == ("on", ["on", "off"])
    assert template["Conditions"]["SnapStartOn"] == {"Fn::Equals": [{"Ref": "SnapStart"}, "on"]}
    for name in FUNCTIONS:
        properties = function_properties(template, name)
        assert properties["Runtime"] == "python3.12"
        assert properties["SnapStart"] == {"ApplyOn": {"Fn::If": ["SnapStartOn", "PublishedVersions", "None"]}}, name
        assert properties["AutoPublishAlias"] == "live", name
        # A new layer alone must publish a new version (and snapshot), not leave the alias on the old one.
        assert properties["AutoPublishAliasAllProperties"] is True, name
        # A snapshot is billed while its version exists: a deploy deletes the version it replaces.
        assert properties["VersionDeletionPolicy"] == "Delete", name
        source = (ROOT / FUNCTIONS[name]["CodeUri"] / (FUNCTIONS[name]["Handler"].split(".")[0] + ".py")).read_text()
        assert re.search(r"^register_snapshot_hooks\((after_restore=\(\w+,\))?\)( +#.*)?$", source, re.MULTILINE), name
