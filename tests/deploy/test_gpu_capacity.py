"""The GPU realizer's capacity in the template: created at zero tasks, woken on demand by the dispatch
function, scaled in only after a task ran idle, a health check that covers a bounded model load,
alarms that keep quiet on a morning wake-up and speak up about GPU hours, and the dispatch function's
stream read scoped to the conversation table's stream.
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
    KNOWN_METRICS,
    ROOT,
    TEMPLATE,
    as_list,
    function_environment,
    function_properties,
    iam_statements,
    only_resource,
    realizer_container,
    referenced_id,
    resources_of_type,
)

from dialogue.aws.turns import PENDING_TURN_INSERTS
from dialogue.settings import Settings
from realizer import healthcheck, loading

COLD_START_MAX_S = 15 * 60
"""The top of the documented cold start (template.yaml's scaling comment: 10-15 minutes)."""
ECS_MAX_START_PERIOD_S = 300
STREAM_READS = {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    decoded, matches = decode(str(TEMPLATE))
    assert not matches, [str(match) for match in matches]
    return decoded


def comment_above(resource: str) -> str:
    """The comment block right above a resource in template.yaml."""
    lines = TEMPLATE.read_text().splitlines()
    index = lines.index(f"  {resource}:")
    block: list[str] = []
    for line in reversed(lines[:index]):
        if not line.strip().startswith("#"):
            break
        block.insert(0, line.strip().lstrip("#").strip())
    return " ".join(block)


def alarm(template: dict[str, Any], name: str) -> dict[str, Any]:
    resource = template["Resources"][name]
    assert resource["Type"] == "AWS::CloudWatch::Alarm"
    props: dict[str, Any] = resource["Properties"]
    return props


def evaluate(expression: str, **series: float | None) -> float:
    """A metric math expression of IF, FILL, AND and arithmetic, at one timestamp (None: no datapoint)."""

    def fill(value: float | None, default: float) -> float:
        return default if value is None else value

    def if_(condition: bool, then: float, otherwise: float) -> float:
        return then if condition else otherwise

    python = re.sub(r"\bIF\(", "if_(", expression.replace(" AND ", " and ")).replace("FILL(", "fill(")
    return float(eval(python, {"fill": fill, "if_": if_, "__builtins__": {}}, dict(series)))


# --- created at zero tasks ---------------------------------------------------------------------------


def test_the_service_is_created_at_zero_tasks_and_the_template_says_what_that_costs(template: dict[str, Any]) -> None:
    """No create or update waits on a GPU: the service starts at 0, and the comment above it says why, what
    an update that touches the service does to a warm task, and what wakes it again."""
    name, service = only_resource(template, "AWS::ECS::Service")
    assert service["DesiredCount"] == 0
    why = comment_above(name)
    for words in ("DesiredCount 0", "no create and no update waits on a GPU", "every update of this resource",
                  "returns a warm realizer to 0 tasks", "dialogue.aws.ecs", "make smoke",
                  "custom resource"):  # fmt: skip
        assert words in why, words
    # A minimum above zero is reached without CloudFormation waiting: the scalable target raises it.
    _, target = only_resource(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert referenced_id(target["MinCapacity"]) == "RealizerMinTasks"
    assert "RealizerService.Name" in str(target["ResourceId"])


# --- the health check covers a bounded model load -----------------------------------------------------


def test_the_health_check_covers_a_model_load_longer_than_the_start_period_but_not_a_hung_one(
    template: dict[str, Any],
) -> None:
    container = realizer_container(template)
    check = container["HealthCheck"]
    assert check["Command"] == ["CMD", "python3", "-m", "realizer.healthcheck"]
    assert check["StartPeriod"] == ECS_MAX_START_PERIOD_S  # ECS allows no longer
    env = {variable["Name"]: variable["Value"] for variable in container["Environment"]}
    bound = float(env["REALIZER_MAX_LOAD_SECONDS"])
    assert bound == loading.DEFAULT_MAX_LOAD_SECONDS
    # Longer than the start period and than the documented model load (3-5 minutes), with room to spare.
    assert bound > ECS_MAX_START_PERIOD_S and bound >= 3 * 5 * 60
    # Beats come often enough that the file never ages past the check's limit while the load runs.
    assert 2 * loading.DEFAULT_BEAT_SECONDS <= healthcheck.DEFAULT_MAX_AGE_SECONDS
    # A hung load is replaced: the file goes stale past the bound, then `Retries` checks fail.
    replaced_after = bound + healthcheck.DEFAULT_MAX_AGE_SECONDS + check["Retries"] * check["Interval"]
    assert replaced_after <= 20 * 60
    assert "REALIZER_MAX_LOAD_SECONDS" in (ROOT / "realizer_container" / "realizer" / "__main__.py").read_text()


# --- woken on demand by the dispatch function ----------------------------------------------------------


def test_the_dispatch_function_may_wake_the_realizer_service_and_nothing_else_on_ecs(template: dict[str, Any]) -> None:
    """The waker's settings name the service only where it exists (HasRealizer), and its statement reaches
    that one service's ARN, built from the cluster and the service's fixed name. No other function may
    call ECS."""
    env = function_environment(template, "DispatchTurnFunction")
    assert env["REALIZER_CLUSTER"] == {"Fn::If": ["HasRealizer", {"Ref": "RealizerCluster"}, {"Ref": "AWS::NoValue"}]}
    assert env["REALIZER_SERVICE"] == {
        "Fn::If": ["HasRealizer", {"Fn::GetAtt": ["RealizerService", "Name"]}, {"Ref": "AWS::NoValue"}]
    }
    assert {"realizer_cluster", "realizer_service"} <= set(Settings.model_fields)
    _, service = only_resource(template, "AWS::ECS::Service")
    statements = list(iam_statements(function_properties(template, "DispatchTurnFunction")["Policies"]))
    (wake,) = [s for s in statements if any(str(a).startswith("ecs:") for a in as_list(s["Action"]))]
    assert wake["Effect"] == "Allow"
    assert set(as_list(wake["Action"])) == {"ecs:DescribeServices", "ecs:UpdateService"}
    arn = wake["Resource"]["Fn::Sub"]
    assert arn == (
        "arn:${AWS::Partition}:ecs:${AWS::Region}:${AWS::AccountId}:service/${RealizerCluster}/"
        + service["ServiceName"]
    )
    for resource_id, resource in template["Resources"].items():
        if resource_id not in ("DispatchTurnFunction", "RealizerSwitchFunction"):
            assert "ecs:UpdateService" not in json.dumps(resource), resource_id
    # The off switch's maximum, read where the service wants no task (Describe takes no resource).
    (switch,) = [
        s for s in statements if any(str(a).startswith("application-autoscaling:") for a in as_list(s["Action"]))
    ]
    assert as_list(switch["Action"]) == ["application-autoscaling:DescribeScalableTargets"]


def test_the_off_switch_is_a_function_two_alarms_invoke_and_the_desk_closing_turns(template: dict[str, Any]) -> None:
    """Issue 42: the GPU-hours alarm and the not-serving alarm turn the off switch (RealizerSwitchFunction:
    the scalable target's maximum at 0), each allowed to by a permission of its own; with desk hours the
    closing sets the maximum to 0 unless RealizerOutsideDeskHours is on-demand, and the opening restores it."""
    resources = template["Resources"]
    switch = function_properties(template, "RealizerSwitchFunction")
    assert switch["Handler"] == "realizer_switch.lambda_handler"
    statements = list(iam_statements(switch["Policies"]))
    _, service = only_resource(template, "AWS::ECS::Service")
    (stop,) = [s for s in statements if any(str(a).startswith("ecs:") for a in as_list(s["Action"]))]
    assert stop["Resource"]["Fn::Sub"].endswith("service/${RealizerCluster}/" + service["ServiceName"])
    (scaling,) = [
        s for s in statements if any(str(a).startswith("application-autoscaling:") for a in as_list(s["Action"]))
    ]
    assert "application-autoscaling:RegisterScalableTarget" in as_list(scaling["Action"])
    env = function_environment(template, "RealizerSwitchFunction")
    assert env["REALIZER_MIN_TASKS"] == {"Ref": "RealizerMinTasks"}
    assert env["REALIZER_MAX_TASKS"] == {"Ref": "RealizerMaxTasks"}
    for name in ("GpuHoursAlarm", "RealizerNotServingAlarm"):
        actions = resources[name]["Properties"]["AlarmActions"]
        assert {"Fn::GetAtt": ["RealizerSwitchFunction", "Arn"]} in actions, name
        assert {"Ref": "AlarmTopic"} in actions, name  # one mail as well
        (permission,) = [
            res["Properties"]
            for res in resources_of_type(template, "AWS::Lambda::Permission").values()
            if referenced_id(res["Properties"].get("SourceArn")) == name
        ]
        assert permission["Principal"] == "lambda.alarms.cloudwatch.amazonaws.com"
        assert referenced_id(permission["FunctionName"]) == "RealizerSwitchFunction"
    opens, closes = resources["RealizerScalableTarget"]["Properties"]["ScheduledActions"]["Fn::If"][1]
    assert opens["ScalableTargetAction"] == {"MinCapacity": 1, "MaxCapacity": {"Ref": "RealizerMaxTasks"}}
    assert closes["ScalableTargetAction"]["MaxCapacity"] == {
        "Fn::If": ["OffOutsideDeskHours", 0, {"Ref": "RealizerMaxTasks"}]
    }
    assert template["Parameters"]["RealizerOutsideDeskHours"]["Default"] == "off"


def test_a_task_that_never_serves_is_stopped_by_one_alarm_within_a_bound(template: dict[str, Any]) -> None:
    """RealizerNotServingAlarm: a task wanted and no worker polling (no job and no empty receive) for 40
    minutes, above a cold start and SQS's late metrics, turns the off switch and mails once; no rule mails
    per failed launch any more."""
    not_serving = alarm(template, "RealizerNotServingAlarm")
    (returned,) = [query for query in not_serving["Metrics"] if query.get("ReturnData")]
    assert evaluate(returned["Expression"], desired=1, received=None, empty=None) == 1
    assert evaluate(returned["Expression"], desired=1, received=0, empty=3) == 0  # a warm worker's long polls
    assert evaluate(returned["Expression"], desired=1, received=4, empty=0) == 0
    assert evaluate(returned["Expression"], desired=None, received=None, empty=None) == 0  # at rest
    assert not_serving["EvaluationPeriods"] == not_serving["DatapointsToAlarm"] == 40
    assert 2 * COLD_START_MAX_S + 5 * 60 <= 40 * 60
    assert not_serving["TreatMissingData"] == "notBreaching"
    rules = resources_of_type(template, "AWS::Events::Rule")
    assert not [name for name, rule in rules.items() if "aws.autoscaling" in json.dumps(rule["Properties"])]


def test_the_realize_queue_keeps_a_job_no_longer_than_the_deadline_and_a_minute(template: dict[str, Any]) -> None:
    queue = template["Resources"]["RealizeQueue"]["Properties"]
    deadline = template["Parameters"]["ReplyDeadlineSeconds"]["Default"]
    assert 60 <= queue["MessageRetentionPeriod"] <= deadline + 60  # SQS keeps a message 60 s at least
    assert queue["MessageRetentionPeriod"] > deadline


def test_the_wake_outcomes_are_metrics_and_repeated_failures_are_alarmed(template: dict[str, Any]) -> None:
    for metric in ("RealizerWoken", "RealizerWakeFailed"):
        assert metric in KNOWN_METRICS[DESK_NAMESPACE], metric
    failed = alarm(template, "RealizerWakeFailedAlarm")
    assert template["Resources"]["RealizerWakeFailedAlarm"]["Condition"] == "HasRealizer"
    assert (failed["Namespace"], failed["MetricName"]) == (DESK_NAMESPACE_SUB, "RealizerWakeFailed")
    assert failed["Dimensions"] == [{"Name": "service", "Value": "dispatch_turn"}]
    assert failed["Threshold"] > 1  # one failed wake is retried by the next batch; the wake alarm is the backstop
    assert referenced_id(failed["AlarmActions"][0]) == "AlarmTopic"


# --- scale in only after a task ran idle ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("series", "idle"),
    [
        ({"running": None, "sent": None, "received": None}, 0),  # the night: no task, an inactive queue
        ({"running": 0, "sent": 1, "received": 0}, 0),  # just woken: a job waits for the cold start
        ({"running": 0, "sent": None, "received": None}, 0),  # woken, the queue's metrics not back yet
        ({"running": 1, "sent": 1, "received": 1}, 0),  # a task at work, for 3 s of the minute
        ({"running": 1, "sent": 0, "received": 0}, 1),  # a task idle
        ({"running": 1, "sent": None, "received": None}, 1),  # a task, and SQS published nothing
    ],
)
def test_the_idle_alarm_counts_only_minutes_in_which_a_task_ran_with_nothing_to_do(
    template: dict[str, Any], series: dict[str, float | None], idle: int
) -> None:
    """An alarm with a scaling action repeats it every minute it stays in ALARM, so an idle alarm that sat
    in ALARM all night would undo every wake at once. It is idle only while a task runs, and it reads the
    queue's activity (the minute's sums of jobs sent and received), never its sampled gauges (issue 42)."""
    idle_alarm = alarm(template, "RealizerIdleAlarm")
    for query in idle_alarm["Metrics"]:
        if "MetricStat" in query and query["MetricStat"]["Metric"]["Namespace"] == "AWS/SQS":
            assert query["MetricStat"]["Stat"] == "Sum"
            assert query["MetricStat"]["Metric"]["MetricName"] in ("NumberOfMessagesSent", "NumberOfMessagesReceived")
    (returned,) = [query for query in idle_alarm["Metrics"] if query.get("ReturnData")]
    assert evaluate(returned["Expression"], **series) == idle
    assert idle_alarm["TreatMissingData"] == "notBreaching"
    assert (idle_alarm["EvaluationPeriods"], idle_alarm["DatapointsToAlarm"]) == (15, 15)
    running = next(q for q in idle_alarm["Metrics"] if q["Id"] == "running")["MetricStat"]["Metric"]
    dimensions = {d["Name"]: referenced_id(d["Value"]) for d in running["Dimensions"]}
    assert dimensions == {"ClusterName": "RealizerCluster", "ServiceName": "RealizerService"}


def test_the_wake_alarm_remains_the_backstop(template: dict[str, Any]) -> None:
    wake = alarm(template, "RealizerWakeFromZeroAlarm")
    (returned,) = [query for query in wake["Metrics"] if query.get("ReturnData")]
    assert evaluate(returned["Expression"], visible=2, desired=None) == 1
    assert evaluate(returned["Expression"], visible=2, desired=1) == 0
    assert [referenced_id(action) for action in wake["AlarmActions"]] == ["RealizerWakeFromZeroPolicy"]


# --- alarms: quiet on a morning wake-up, loud about GPU hours --------------------------------------------


def test_the_not_serving_alarm_waits_longer_than_a_cold_start(template: dict[str, Any]) -> None:
    """It replaces the oldest-job alarm: a job now lives 120 s, so its age can no longer tell a stuck realizer."""
    assert "RealizeQueueOldestMessageAlarm" not in template["Resources"]
    not_serving = alarm(template, "RealizerNotServingAlarm")
    assert not_serving["EvaluationPeriods"] * 60 >= COLD_START_MAX_S + 15 * 60
    assert "SQS resumes an inactive queue's metrics" in comment_above("RealizerNotServingAlarm")


def test_desk_hours_start_early_enough_for_a_cold_start(template: dict[str, Any]) -> None:
    opens = template["Parameters"]["DeskOpensSchedule"]
    description = " ".join(opens["Description"].split())
    assert "cron(30 7 ? * MON-FRI *)" in description and "08:00" in description
    assert "Start 30 minutes early" in description
    assert re.fullmatch(opens["AllowedPattern"], "cron(30 7 ? * MON-FRI *)")
    assert 2 * COLD_START_MAX_S <= 30 * 60  # the lead is a cold start with as much again to spare


def test_gpu_hours_are_alarmed_after_a_desk_day(template: dict[str, Any]) -> None:
    """More GPU instances than the minimum, in service through each 5-minute period of the last N hours
    less 30 minutes, tells the topic and turns the off switch, so a run bills N hours at most, its launch
    and its instance's 15-minute end included (issue 42: within 12 hours a day; hour-long periods let it
    run 13.2). N is a parameter whose default is above a desk day, and whose range fits an alarm's window."""
    hours = template["Parameters"]["GpuHoursAlarmHours"]
    assert hours["Type"] == "Number" and hours["MinValue"] >= 1
    periods = template["Mappings"]["GpuHoursAlarmPeriods"]
    assert set(periods) == {str(n) for n in range(hours["MinValue"], hours["MaxValue"] + 1)}
    for n, row in periods.items():
        assert row["Periods"] * 300 == int(n) * 3600 - 30 * 60  # 30 minutes for the launch and the end
        assert row["Periods"] * 300 <= 24 * 3600  # EvaluationPeriods x Period stays within a day
    # The example desk (08:00-18:00), its 30-minute early start and an hour of wind-down: the full clock
    # hours it holds a GPU are fewer than the default.
    assert hours["Default"] > 10 + 0.5 + 1
    gpu = alarm(template, "GpuHoursAlarm")
    assert (gpu["Namespace"], gpu["MetricName"]) == ("AWS/AutoScaling", "GroupInServiceInstances")
    assert referenced_id(gpu["Dimensions"][0]["Value"]) == "GpuAutoScalingGroup"
    _, group = only_resource(template, "AWS::AutoScaling::AutoScalingGroup")
    collected = {metric for entry in group["MetricsCollection"] for metric in entry["Metrics"]}
    assert "GroupInServiceInstances" in collected
    assert (gpu["Statistic"], gpu["Period"]) == ("Minimum", 300)
    in_periods = {"Fn::FindInMap": ["GpuHoursAlarmPeriods", {"Ref": "GpuHoursAlarmHours"}, "Periods"]}
    assert gpu["EvaluationPeriods"] == gpu["DatapointsToAlarm"] == in_periods
    assert (gpu["ComparisonOperator"], gpu["Threshold"]) == ("GreaterThanThreshold", {"Ref": "RealizerMinTasks"})
    assert gpu["TreatMissingData"] == "notBreaching"
    assert referenced_id(gpu["AlarmActions"][0]) == referenced_id(gpu["OKActions"][0]) == "AlarmTopic"
    assert referenced_id(gpu["AlarmActions"][1]) == "RealizerSwitchFunction"  # and the off switch
    groups = template["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
    assert any("GpuHoursAlarmHours" in group["Parameters"] for group in groups)


def test_the_budget_tells_actual_spend_early_for_an_account_without_a_forecast(template: dict[str, Any]) -> None:
    _, budget = only_resource(template, "AWS::Budgets::Budget")
    thresholds = {
        (entry["Notification"]["NotificationType"], entry["Notification"]["Threshold"])
        for entry in budget["NotificationsWithSubscribers"]
    }
    actual = sorted(threshold for kind, threshold in thresholds if kind == "ACTUAL")
    assert actual[0] <= 50 and len(actual) >= 2
    assert ("FORECASTED", 100) in thresholds
    assert "50%" in template["Parameters"]["MonthlyBudgetUsd"]["Description"]


def test_a_health_check_kill_reaches_the_topic_and_a_scale_in_does_not(template: dict[str, Any]) -> None:
    """The task-stopped rule's pattern, run by moto's EventBridge matcher on the stops ECS reports."""
    from moto.events.models import EventPattern

    cluster = "arn:aws:ecs:us-east-1:123456789012:cluster/realizer"
    pattern = json.loads(
        json.dumps(template["Resources"]["RealizerTaskStoppedRule"]["Properties"]["EventPattern"]).replace(
            json.dumps({"Fn::GetAtt": ["RealizerCluster", "Arn"]}), json.dumps(cluster)
        )
    )
    matcher = EventPattern.load(json.dumps(pattern))

    def stopped(code: str, reason: str) -> bool:
        event = {
            "source": "aws.ecs",
            "detail-type": "ECS Task State Change",
            "detail": {"clusterArn": cluster, "lastStatus": "STOPPED", "stopCode": code, "stoppedReason": reason},
        }
        return bool(matcher.matches_event(event))

    assert stopped("ServiceSchedulerInitiated", "Task failed container health checks")
    assert stopped("EssentialContainerExited", "Essential container in task exited")
    assert stopped("TaskFailedToStart", "CannotPullContainerError: pull image manifest has been retried")
    assert not stopped("ServiceSchedulerInitiated", "Scaling activity initiated by (deployment ecs-svc/123)")
    assert not stopped("ServiceSchedulerInitiated", "ECS is performing maintenance on the underlying infrastructure")


# --- the stream mapping: explicit, with a policy on the table's stream alone --------------------------------


def test_the_stream_reaches_the_dispatch_function_through_an_explicit_mapping_with_every_setting(
    template: dict[str, Any],
) -> None:
    """Not a SAM DynamoDB event (which attaches AWSLambdaDynamoDBExecutionRole: every stream in the account).
    The mapping keeps the event's logical id and every one of its settings."""
    assert "Events" not in function_properties(template, "DispatchTurnFunction")
    mapping = template["Resources"]["DispatchTurnFunctionPendingTurns"]
    assert mapping["Type"] == "AWS::Lambda::EventSourceMapping"
    props = mapping["Properties"]
    assert props["EventSourceArn"] == {"Fn::GetAtt": ["ConversationTable", "StreamArn"]}
    assert props["FunctionName"] == {"Ref": "DispatchTurnFunction.Alias"}
    settings = {key: value for key, value in props.items() if key not in ("EventSourceArn", "FunctionName")}
    filters = settings.pop("FilterCriteria")["Filters"]
    assert [json.loads(f["Pattern"]) for f in filters] == [PENDING_TURN_INSERTS]
    assert settings == {
        "StartingPosition": "TRIM_HORIZON",
        "BatchSize": 10,
        "MaximumBatchingWindowInSeconds": 0,
        "BisectBatchOnFunctionError": True,
        "MaximumRetryAttempts": 100,
        "MaximumRecordAgeInSeconds": 3600,
        "FunctionResponseTypes": ["ReportBatchItemFailures"],
        "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": ["DispatchFailureQueue", "Arn"]}}},
    }


def test_only_the_dispatch_function_reads_the_stream_and_only_this_tables(template: dict[str, Any]) -> None:
    statements = list(iam_statements(function_properties(template, "DispatchTurnFunction")["Policies"]))
    (reads,) = [s for s in statements if STREAM_READS & set(as_list(s["Action"]))]
    assert set(as_list(reads["Action"])) == STREAM_READS
    assert reads["Resource"] == {"Fn::GetAtt": ["ConversationTable", "StreamArn"]}
    (listing,) = [s for s in statements if "dynamodb:ListStreams" in as_list(s["Action"])]
    assert as_list(listing["Action"]) == ["dynamodb:ListStreams"]
    assert listing["Resource"] == {"Fn::Sub": "${ConversationTable.Arn}/stream/*"}
    for name, resource in resources_of_type(template, "AWS::Serverless::Function").items():
        for statement in iam_statements(resource["Properties"].get("Policies", [])):
            if STREAM_READS & set(as_list(statement["Action"])):
                assert name == "DispatchTurnFunction", name
                assert as_list(statement["Resource"]) != ["*"]


def test_the_audit_bucket_goes_with_a_failed_first_create(template: dict[str, Any]) -> None:
    bucket = template["Resources"]["AuditBucket"]
    assert (bucket["DeletionPolicy"], bucket["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")
    why = comment_above("AuditBucket")
    assert "failed create" in why and "empty bucket" in why
