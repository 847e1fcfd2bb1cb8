"""`python -m devstack fleet`: the realizer's control loop simulated from template.yaml (devstack.fleet).

A short run gives sane, reproducible figures; an idle alarm on sampled queue gauges (RealizerIdleAlarm as
issue 42 found it) is caught scaling the realizer in while residents are still talking; a change to the
template, or to a parameter, changes the result; and the template since issue 42 meets the issue's goals
for one desk: kept warm through desk hours, no mid-day scale-in, the off switch outside them and on the
GPU-hours alarm, and a task that never turns healthy stopped within a bound.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from devstack.__main__ import main
from devstack.fleet import (
    DAYS_PER_MONTH,
    FIELDS,
    SCENARIOS,
    Expression,
    FleetError,
    Timings,
    WakeCall,
    at_rest,
    desk_on_shared_realizer,
    fleet_at_rest,
    load_template,
    parse_cron,
    read_config,
    simulate,
)
from realizer.worker import FILL_WAIT_SECONDS

ROOT = Path(__file__).resolve().parents[2]

DAYS = 3  # Monday to Wednesday: three desk days, about a second a run

GAUGE_IDLE_ALARM: dict[str, Any] = {
    "ComparisonOperator": "GreaterThanOrEqualToThreshold",
    "Threshold": 1,
    "EvaluationPeriods": 15,
    "DatapointsToAlarm": 15,
    "TreatMissingData": "notBreaching",
    "AlarmActions": [{"Ref": "RealizerSleepWhenIdlePolicy"}],
    "Metrics": [
        {
            "Id": id_,
            "ReturnData": False,
            "MetricStat": {
                "Period": 60,
                "Stat": stat,
                "Metric": {
                    "Namespace": "AWS/SQS",
                    "MetricName": name,
                    "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["RealizeQueue", "QueueName"]}}],
                },
            },
        }
        for id_, name, stat in (
            ("visible", "ApproximateNumberOfMessagesVisible", "Maximum"),
            ("in_flight", "ApproximateNumberOfMessagesNotVisible", "Maximum"),
        )
    ]
    + [
        {
            "Id": "running",
            "ReturnData": False,
            "MetricStat": {
                "Period": 60,
                "Stat": "Minimum",
                "Metric": {
                    "Namespace": "ECS/ContainerInsights",
                    "MetricName": "RunningTaskCount",
                    "Dimensions": [
                        {"Name": "ClusterName", "Value": {"Ref": "RealizerCluster"}},
                        {"Name": "ServiceName", "Value": {"Fn::GetAtt": ["RealizerService", "Name"]}},
                    ],
                },
            },
        },
        {
            "Id": "idle_with_a_task",
            "Expression": "IF(FILL(running, 0) >= 1 AND (FILL(visible, 0) + FILL(in_flight, 0)) < 1, 1, 0)",
            "ReturnData": True,
        },
    ],
}
"""RealizerIdleAlarm as issue 42 found it: idle when the realize queue's sampled gauges read 0 for 15 minutes
while a task runs. The tests that need it put it into the template, so they hold after the template moves on."""


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture(scope="module")
def gauge_template(template: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(template)
    changed["Resources"]["RealizerIdleAlarm"]["Properties"] = copy.deepcopy(GAUGE_IDLE_ALARM)
    return changed


@pytest.fixture(scope="module")
def before_template(gauge_template: dict[str, Any]) -> dict[str, Any]:
    """The template as issue 42 found it, in what the simulation reads: the gauge idle alarm, jobs kept an
    hour, no not-serving alarm, the GPU-hours alarm only mailing, no fast fallback for a cold turn. With
    `WakeCall.before_issue_42()` (the target's maximum ignored)."""
    changed = copy.deepcopy(gauge_template)
    resources = changed["Resources"]
    resources["RealizeQueue"]["Properties"]["MessageRetentionPeriod"] = 3600
    del resources["RealizerNotServingAlarm"]
    gpu = resources["GpuHoursAlarm"]["Properties"]
    gpu["AlarmActions"] = [action for action in gpu["AlarmActions"] if action == {"Ref": "AlarmTopic"}]
    del resources["DispatchTurnFunction"]["Properties"]["Environment"]["Variables"]["COLD_FALLBACK_SECONDS"]
    return changed


DESK_HOURS = {
    "DeskOpensSchedule": "cron(30 8 ? * MON-FRI *)",  # the default pack's 09:00, half an hour early
    "DeskClosesSchedule": "cron(0 17 ? * MON-FRI *)",
    "DeskTimezone": "Europe/London",
}
"""The default pack's desk hours (Riverton: 09:00-17:00 on weekdays, Europe/London) as its operator sets them."""
WEEK = 5  # Monday to Friday


def test_a_short_run_gives_sane_figures_and_the_same_seed_the_same_figures(template: dict[str, Any]) -> None:
    first = simulate("desk", days=DAYS, seed=7, template=template)
    record = first.record()
    assert tuple(record) == FIELDS
    assert record["scenario"] == "desk" and record["desks"] == 1 and record["days"] == DAYS
    assert record["generated_turns"] > 100 * DAYS  # 100 conversations of 6 turns a day, most generated
    assert 0 <= record["worded_share"] <= 1
    assert record["wait_p50_s"] is not None and 0 < record["wait_p50_s"] <= record["wait_p95_s"]
    assert record["wait_p95_s"] < read_config(template).reply_deadline_s
    assert record["gpu_hours"] >= 0 and record["cold_starts"] >= 1  # the realizer rests at 0 on Monday morning
    assert record["desk_hours"] == 8 * DAYS  # the default pack's desk: 09:00-17:00 on weekdays
    assert record["cost_usd"] > 0 and record["cost_per_worded_reply_usd"] > 0
    json.dumps(record)
    assert simulate("desk", days=DAYS, seed=7, template=template) == first
    assert simulate("desk", days=DAYS, seed=8, template=template) != first


def test_the_settings_come_from_the_template(template: dict[str, Any]) -> None:
    config = read_config(template)
    resources = template["Resources"]
    queue = resources["RealizeQueue"]["Properties"]
    assert config.retention_s == queue["MessageRetentionPeriod"]
    assert config.visibility_timeout_s == queue["VisibilityTimeout"]
    assert config.reply_deadline_s == template["Parameters"]["ReplyDeadlineSeconds"]["Default"]
    assert config.max_tasks == template["Parameters"]["RealizerMaxTasks"]["Default"]
    assert config.instance_types == tuple(template["Parameters"]["GpuInstanceTypes"]["Default"].split(","))
    scale_in = [alarm for alarm in config.alarms if alarm.policies and alarm.name == "RealizerIdleAlarm"]
    assert scale_in, "the idle alarm drives a scaling policy"
    # A parameter given, as sam deploy's overrides: desk hours become two scheduled actions.
    hours = read_config(
        template,
        {"DeskOpensSchedule": "cron(30 8 ? * MON-FRI *)", "DeskClosesSchedule": "cron(0 17 ? * MON-FRI *)"},
    )
    assert [(action.hour, action.minute) for action in hours.scheduled] == [(8, 30), (17, 0)]
    with pytest.raises(FleetError):
        read_config(template, {"NoSuchParameter": "1"})


def test_it_catches_an_idle_alarm_on_sampled_gauges_scaling_in_mid_day(before_template: dict[str, Any]) -> None:
    """Issue 42: a warm worker holds a job 2-3 s, so most once-a-minute samples of the queue's gauges read 0
    under steady desk traffic; 15 zero samples in a row come within the hour and the realizer goes to 0
    while residents are still talking, and the turns of the next cold start get the fallback."""
    result = simulate("desk", days=DAYS, seed=7, template=before_template, wake=WakeCall.before_issue_42())
    assert result.mid_day_scale_ins > DAYS  # several a day
    assert result.cold_starts > DAYS
    assert result.worded_share < 0.99


def test_a_change_to_the_template_changes_the_result(gauge_template: dict[str, Any]) -> None:
    before = simulate("desk", days=DAYS, seed=7, template=gauge_template)
    longer = copy.deepcopy(gauge_template)
    idle = longer["Resources"]["RealizerIdleAlarm"]["Properties"]
    idle["EvaluationPeriods"] = idle["DatapointsToAlarm"] = 60  # an idle hour, not 15 minutes
    after = simulate("desk", days=DAYS, seed=7, template=longer)
    assert after.mid_day_scale_ins < before.mid_day_scale_ins
    assert after.worded_share > before.worded_share
    assert after.record() != before.record()


def test_a_parameter_changes_the_result(template: dict[str, Any]) -> None:
    """RealizerMinTasks 1 keeps a task up: one start, no scale-in, the GPU all day every day."""
    always = simulate("desk", days=DAYS, seed=7, template=template, parameters={"RealizerMinTasks": "1"})
    assert always.cold_starts == 1 and always.mid_day_scale_ins == 0
    assert always.worded_share == 1.0
    assert always.gpu_hours == pytest.approx(24 * DAYS, abs=0.1)


def test_the_abuse_profile_adds_a_strangers_turns_around_the_clock(template: dict[str, Any]) -> None:
    desk = simulate("desk", days=2, seed=3, template=template)
    abuse = simulate("abuse", days=2, seed=3, template=template)
    config = read_config(template)
    stranger = 2 * (24 * 60 // 14) + 2 * (config.turn_burst + int(config.turn_rate_per_s * 60))
    # The desks' own turns are drawn apart in each scenario (the seed names it): about 2 x 370 each.
    assert abuse.generated_turns - desk.generated_turns == pytest.approx(stranger, abs=150)
    # The stranger kept a GPU up through the first night until the GPU-hours alarm turned the off switch.
    assert abuse.switched_off == 1 and desk.switched_off == 0


def test_an_image_that_never_becomes_healthy_kept_a_gpu_and_worded_nothing(before_template: dict[str, Any]) -> None:
    """As issue 42 found it, nothing returned the realizer to 0 while turns kept coming: ECS replaces the hung
    task again and again (every REALIZER_MAX_LOAD_SECONDS + heartbeat age + retries), and the instance bills."""
    config = read_config(before_template)
    assert config.unhealthy_replaced_after_s == 900 + 120 + 3 * 30
    wake = WakeCall.before_issue_42()
    result = simulate("unhealthy", days=1, seed=3, template=before_template, wake=wake)
    assert result.worded_share == 0 and result.wait_p50_s is None and result.cost_per_worded_reply_usd is None
    assert result.cold_starts >= 3  # replacement after replacement, each a load that never ends
    assert result.gpu_hours > result.desk_hours  # billed all desk day, and past it


def test_metric_math_and_cron_are_read_as_cloudwatch_and_application_auto_scaling_do() -> None:
    idle = Expression("IF(FILL(running, 0) >= 1 AND (FILL(visible, 0) + FILL(in_flight, 0)) < 1, 1, 0)")
    values: dict[str, float | None] = {"running": 1.0, "visible": None, "in_flight": 0.0}
    assert idle(values.get) == 1.0
    values["in_flight"] = 1.0
    assert idle(values.get) == 0.0
    assert Expression("visible / running")({"visible": 4.0, "running": 0.0}.get) is None
    assert Expression("m1 * 2 - 1 > 2 OR 0")({"m1": 2.0}.get) == 1.0
    with pytest.raises(FleetError):
        Expression("RATE(m1)")
    assert parse_cron("cron(30 7 ? * MON-FRI *)") == (30, 7, frozenset(range(5)))
    assert parse_cron("cron(0 18 ? * 2-6 *)") == (0, 18, frozenset(range(5)))


def test_the_command_prints_one_json_object_per_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fleet", "--days", "1", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [json.loads(line)["scenario"] for line in lines] == list(SCENARIOS)
    assert all(tuple(json.loads(line)) == FIELDS for line in lines)
    assert main(["fleet", "--days", "1", "--scenario", "desk", "--parameter", "Nope=1"]) == 2


# --- issue 42, item 2: the template since, against the issue's goals ----------------------------------------


def test_idleness_is_judged_on_the_queues_activity_never_on_its_sampled_gauges(template: dict[str, Any]) -> None:
    config = read_config(template)
    (idle,) = [alarm for alarm in config.alarms if alarm.name == "RealizerIdleAlarm"]
    read = {query.series for query in idle.queries if query.series}
    assert read == {"sqs.sent", "sqs.received", "ecs.running"}
    assert all(query.stat == "Sum" for query in idle.queries if query.series.startswith("sqs."))
    assert config.retention_s <= config.reply_deadline_s + 60  # a job outlives its deadline by a minute at most
    assert config.cold_fallback_s is not None and config.cold_fallback_s <= 5
    assert WakeCall.today().respects_max


def test_one_desk_kept_warm_through_its_hours_meets_the_goals(template: dict[str, Any]) -> None:
    """Issue 42's goals for one desk: no mid-day scale-in, at least 99% of the generated turns inside desk
    hours worded by the model, GPU hours at most 1.1 times the desk's hours."""
    result = simulate("desk", days=WEEK, seed=7, template=template, parameters=DESK_HOURS)
    assert result.mid_day_scale_ins == 0
    assert result.worded_share_in_desk_hours >= 0.99
    assert result.gpu_hours <= 1.1 * result.desk_hours
    assert result.switched_off == 0 and result.alarm_mails == 0


def test_woken_on_demand_the_desk_scales_in_mid_day_which_is_why_desk_hours_keep_it_warm(
    template: dict[str, Any],
) -> None:
    """The decision, by the numbers: without desk hours the activity idle alarm still finds 15 quiet minutes
    in a desk day (the first and last hours are thin), and each costs the next turns a cold start; their
    turns get the fallback in seconds with the line that a person will check them."""
    warm = simulate("desk", days=WEEK, seed=7, template=template, parameters=DESK_HOURS)
    on_demand = simulate("desk", days=WEEK, seed=7, template=template)
    assert on_demand.mid_day_scale_ins > 0
    assert on_demand.worded_share_in_desk_hours < warm.worded_share_in_desk_hours
    assert on_demand.cold_turns > 0 and warm.cold_turns == 0


def test_with_desk_hours_a_stranger_adds_no_gpu_hour_outside_them(template: dict[str, Any]) -> None:
    """The abuse profile with the off switch's schedule on: outside desk hours the target's maximum is 0 and
    the wake call respects it, so the stranger's turns every 14 minutes start nothing; the GPU hours outside
    desk hours are the desk's own early start and wind-down."""
    desk = simulate("desk", days=WEEK, seed=7, template=template, parameters=DESK_HOURS)
    abuse = simulate("abuse", days=WEEK, seed=7, template=template, parameters=DESK_HOURS)
    assert abuse.gpu_hours_outside_desk_hours <= desk.gpu_hours_outside_desk_hours + 0.1 * WEEK
    assert abuse.gpu_hours <= 1.1 * abuse.desk_hours
    assert abuse.cold_turns > 0  # the stranger's night turns: the fallback at once, no GPU
    # As issue 42 found it (the maximum ignored, the schedule leaving it at 2), the stranger kept it up.
    before = simulate("abuse", days=2, seed=7, template=template, parameters={**DESK_HOURS,
                      "RealizerOutsideDeskHours": "on-demand"})  # fmt: skip
    assert before.gpu_hours_outside_desk_hours > abuse.gpu_hours_outside_desk_hours / WEEK * 2


def test_without_desk_hours_the_gpu_hours_alarm_turns_the_off_switch(template: dict[str, Any]) -> None:
    """The abuse profile without a schedule: the stranger keeps a GPU up until GpuHoursAlarm's ALARM turns
    the off switch, which then holds until an operator turns it on: at most GpuHoursAlarmHours (12, issue
    42's cap) of GPU, its launch and the instance's 15-minute end included, once. The alarm reads 5-minute
    periods of GpuHoursAlarmHours less 30 minutes; with hour-long periods of GpuHoursAlarmHours, as it
    was, the partial first hour and the instance's end ran it to 13.2 hours."""
    hours = int(template["Parameters"]["GpuHoursAlarmHours"]["Default"])
    assert hours == 12
    result = simulate("abuse", days=3, seed=7, template=template)
    assert result.switched_off == 1
    assert result.gpu_hours_most_in_a_day <= hours
    assert result.gpu_hours <= hours  # off after the first day: no operator turned it on
    hourly = copy.deepcopy(template)
    alarm = hourly["Resources"]["GpuHoursAlarm"]["Properties"]
    alarm["Period"] = 3600
    alarm["EvaluationPeriods"] = alarm["DatapointsToAlarm"] = {"Ref": "GpuHoursAlarmHours"}
    assert simulate("abuse", days=3, seed=7, template=hourly).gpu_hours > hours


def test_a_task_that_never_becomes_healthy_is_stopped_within_a_bound_with_one_alarm(template: dict[str, Any]) -> None:
    """RealizerNotServingAlarm: a task wanted 40 minutes and no worker polling turns the off switch and mails
    once (ALARM, then OK), where ECS's replacements went on all day before."""
    result = simulate("unhealthy", days=1, seed=3, template=template)
    assert result.switched_off == 1
    assert result.gpu_hours <= 1.5  # 40 minutes, the alarm's evaluation and the instance's 15-minute end
    assert result.alarm_mails <= 2


def test_once_warm_a_worded_reply_comes_within_five_seconds_at_p95(template: dict[str, Any]) -> None:
    """Issue 42 asks for a p95 of at most 5 s once warm: the second assumed from the turn to its job on the
    queue, a 2-3 s batch, the half second to screen and store, and a wait for a batch in hand. The worker's
    top-up receives are short polls (realizer.worker.FILL_WAIT_SECONDS, 0), and the model takes the worker's
    own value; with the 1 s top-up wait the worker had, p95 was about 5.7 s."""
    assert FILL_WAIT_SECONDS == 0 and Timings().fill_wait_s == FILL_WAIT_SECONDS
    warm = simulate("desk", days=2, seed=7, template=template, parameters={"RealizerMinTasks": "1"})
    assert warm.worded_share == 1.0
    assert warm.wait_p50_s is not None and warm.wait_p50_s <= 4.5
    assert warm.wait_p95_s is not None and warm.wait_p95_s <= 5.0
    waiting = simulate("desk", days=2, seed=7, template=template, parameters={"RealizerMinTasks": "1"},
                       timings=Timings(fill_wait_s=1.0))  # fmt: skip
    assert waiting.wait_p95_s is not None and waiting.wait_p95_s > 5.0


def test_desk_hours_come_from_the_packs_hours_half_an_hour_early() -> None:
    from devstack.fleet import Traffic, desk_hours_parameters

    traffic = Traffic(open_hours=dict.fromkeys(range(5), (9 * 3600.0, 17 * 3600.0)), time_zone="Europe/London")
    assert desk_hours_parameters(traffic) == {
        "DeskOpensSchedule": "cron(30 8 ? * MON,TUE,WED,THU,FRI *)",
        "DeskClosesSchedule": "cron(0 17 ? * MON,TUE,WED,THU,FRI *)",
        "DeskTimezone": "Europe/London",
    }
    assert parse_cron(desk_hours_parameters(traffic)["DeskOpensSchedule"]) == (30, 8, frozenset(range(5)))
    uneven = Traffic(open_hours={0: (9 * 3600.0, 17 * 3600.0), 5: (10 * 3600.0, 13 * 3600.0)})
    with pytest.raises(FleetError):
        desk_hours_parameters(uneven)


def test_desks_on_a_shared_realizer_sum_their_work_on_one_service_and_make_no_wake_call(
    template: dict[str, Any],
) -> None:
    """Issue 42, item 3: a desk stack deployed with SharedRealizerQueueArn has no realizer to simulate
    (the realizer's stack is simulated with --shared-realizer); there, every desk's jobs reach one queue
    and one service, and no desk makes the wake call (the template names no service to them), so no
    turn gets the cold fallback in seconds."""
    with pytest.raises(FleetError, match="--shared-realizer"):
        read_config(template, {"SharedRealizerQueueArn": "arn:aws:sqs:eu-west-2:123456789012:other-RealizeQueue-1"})
    own = simulate("desk", desks=3, days=DAYS, seed=7, template=template)
    shared = simulate("desk", desks=3, days=DAYS, seed=7, template=template, shared_realizer=True)
    assert own.cold_turns > 0 and shared.cold_turns == 0
    assert shared.gpu_hours < own.gpu_hours / 2, "one GPU's hours for three desks' work"
    assert shared.cost_per_worded_reply_usd is not None and own.cost_per_worded_reply_usd is not None
    assert shared.cost_per_worded_reply_usd < own.cost_per_worded_reply_usd
    assert WakeCall.none().calls is False and WakeCall.today().calls is True


# --- issue 42, item 3: what a desk costs at rest, from the template's shape --------------------------------

ACL = {"PagesWebAclArn": "arn:aws:wafv2:us-east-1:123456789012:global/webacl/desks/0"}
"""One web ACL many desks share (ops/pages-waf.yaml's), as DEPLOY.md's "At rest" says."""


def test_deploy_md_at_rest_table_is_the_templates_default_shape(template: dict[str, Any]) -> None:
    """One source: docs/DEPLOY.md's "At rest" table and the simulation's cost at rest are the same items,
    counted from the template (44 alarm metrics, 6 snapshots, one web ACL of 6 rules, ...)."""
    cost = at_rest(template)
    guide = (ROOT / "docs" / "DEPLOY.md").read_text()
    table = guide.split("### At rest", 1)[1].split("### Per thousand turns", 1)[0]
    rows = {
        cells[0]: cells[-1] for line in table.splitlines() if (cells := [c.strip() for c in line.strip("|").split("|")])
    }
    names = {"SnapStart cache": "SnapStart cache", "web ACL": "WAF web ACL", "alarms": "CloudWatch alarms",
             "image": "ECR image", "secrets": "Secrets Manager", "SQS polling": "SQS"}  # fmt: skip
    for item, row in names.items():
        assert rows[row] == f"${cost.items[item]:.2f}", row
    assert f"= {cost.alarm_metrics} alarm metrics" in table and cost.alarm_metrics == 44
    assert f"{cost.snapshots} functions \N{MULTIPLICATION SIGN} 0.5 GB" in table
    assert f"about **${round(cost.total)} a month**" in table


def test_a_desk_on_a_shared_realizer_drops_its_realizer_pieces_and_snapstart_off_its_snapshots(
    template: dict[str, Any],
) -> None:
    """The levers of issue 42's 100 desks at 1/20 of one desk's cost per reply: a desk on a shared realizer
    has no realizer alarms and no image; one web ACL shared as PagesWebAclArn makes none; SnapStart off
    takes no snapshot. Each is the template's, resolved with the parameters."""
    own = at_rest(template)
    desk = at_rest(template, desk_on_shared_realizer(template, {}))
    assert desk.items["image"] == 0 and own.items["image"] > 0
    assert desk.alarm_metrics == own.alarm_metrics - 13
    assert at_rest(template, ACL).items["web ACL"] == 0 and own.items["web ACL"] > 0
    off = at_rest(template, {"SnapStart": "off"})
    assert off.items["SnapStart cache"] == 0 and off.snapshots == 0 and own.snapshots == 6
    cheapest = at_rest(template, desk_on_shared_realizer(template, {"SnapStart": "off", **ACL}))
    assert cheapest.total < 4.0
    stacks = fleet_at_rest(template, {"SnapStart": "off", **ACL}, 100, shared_realizer=True)
    assert [(count, cost.total) for _, count, cost in stacks][1:] == [(99, cheapest.total), (1, 11.0)]


def test_a_hundred_desks_on_one_realizer_cost_a_twentieth_a_worded_reply(template: dict[str, Any]) -> None:
    """Issue 42's goal, on a desk day: 100 desks on one realizer, each with SnapStart off and the shared web
    ACL, pay at most 1/20 of one desk alone (its own realizer, the template's defaults) a worded reply;
    with each stack's own web ACL and snapshots, the same day's GPU and turns, they would not: the rest
    cost dominates."""
    alone = simulate("desk", days=1, seed=7, template=template, parameters=DESK_HOURS)
    cheapest = {**DESK_HOURS, "SnapStart": "off", **ACL}
    many = simulate("desk", desks=100, days=1, seed=7, template=template, parameters=cheapest,
                    shared_realizer=True)  # fmt: skip
    assert alone.cost_per_worded_reply_usd is not None and many.cost_per_worded_reply_usd is not None
    assert many.worded_share_in_desk_hours >= 0.99
    assert many.cost_per_worded_reply_usd <= alone.cost_per_worded_reply_usd / 20
    default_rest = sum(n * cost.total for _, n, cost in fleet_at_rest(template, DESK_HOURS, 100, shared_realizer=True))
    own_pieces = many.cost_usd - many.at_rest_usd + default_rest / DAYS_PER_MONTH
    worded = many.worded_share * many.generated_turns
    assert own_pieces / worded > alone.cost_per_worded_reply_usd / 20
