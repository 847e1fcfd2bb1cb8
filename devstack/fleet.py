"""`python -m devstack fleet`: the GPU realizer's control loop, simulated, driven by template.yaml.

The realizer's scaling is CloudWatch's and ECS's, not the code's, so no other test sees it. This is a
discrete-event simulation of that loop, seeded (the same seed gives the same table), in which every
setting that decides when a GPU runs is read from the template itself (`read_config`), so a change to the
template changes the result:

- the alarms whose actions are the realizer's scaling policies or its off switch (a function whose
  handler is functions/realizer_switch's), and any other alarm on metrics modelled here: their metrics,
  statistics, periods, evaluation periods, datapoints to alarm, missing-data rule and metric math (IF,
  FILL, AND, OR, comparisons, arithmetic), and whether they mail the topic;
- the scaling policies of the service's scalable target (step: adjustment type, steps, cooldown; target
  tracking: target, scale-in disabled or not, cooldowns, its metric math) and the target's minimum and
  maximum, with any scheduled actions (cron, time zone, the capacities they set);
- the realize queue (visibility timeout, retention, receive wait), the GPU group's instance types and
  its largest size, the turn route's throttles (for the abuse burst), the reply deadline (the dispatch
  function's REPLY_DEADLINE_SECONDS) and its COLD_FALLBACK_SECONDS (a cold turn's fallback, where set).

Parameters take their defaults, as a `sam deploy` that changes nothing would; `--parameter NAME=VALUE`
overrides one, as `--parameter-overrides` does (the realizer counts as deployed: an image digest);
`--desk-hours` sets the desk-hours schedules from the pack's hours (opening 30 minutes early).

What it models, each minute and each second:

- CloudWatch: SQS's gauges (ApproximateNumberOfMessagesVisible, ...NotVisible, ...AgeOfOldestMessage)
  are point samples taken once a minute, at an instant within it; SQS's counters (NumberOfMessagesSent,
  ...Received, ...Deleted) are the minute's sums. A queue nothing touched for 6 hours is inactive and
  publishes nothing; its metrics resume up to 15 minutes after it is touched again. Container Insights'
  task counts (the minute's minimum, maximum and average) are published in the minutes the service
  wants or has a task; the GPU group's instance counts every minute. Alarms are evaluated every minute;
  one whose action is a scaling policy invokes it every minute it stays in ALARM (cooldown permitting).
- The dispatch function's wake call, as layers/dialogue/dialogue/aws/ecs.py does it: as it sends a
  job it reads the service's desired count and sets it to 1 when it is 0, unless the scalable target's
  maximum is 0 (the off switch: `WakeCall.respects_max`, from RESPECTS_SCALABLE_TARGET_MAX;
  `WakeCall.before_issue_42()` ignores it, as UpdateService alone does), remembering its answer for
  REMEMBER_WANTED_FOR. Cold (woken, off, or no task running: ECS's runningCount counts a task still
  loading its model), the turn's deadline is COLD_FALLBACK_SECONDS after it: its fallback in seconds.
- The off switch: an alarm whose action is the realizer switch function sets the target's minimum and
  maximum to 0 and the desired count to 0 when it goes to ALARM; a scheduled action's capacities set them
  again (desk-opens turns it on). The week before day 0 is taken to have run its last scheduled action
  (Friday's closing), so a month starts as a deployed desk would.
- ECS placing a task: on an empty instance already in the group (its image cached), else on a new
  instance the capacity provider launches (up to the group's largest size); an empty instance is ended
  after the capacity provider's 15 idle minutes. The instance launch, the ECS agent's registration, the
  image pull and the model load take times drawn from `Timings` (DEPLOY.md's cold-start table).
- The worker, as realizer.worker does it: a long poll; once a job has arrived, top-up receives within a
  2 s batch window that wait the worker's FILL_WAIT_SECONDS (0: short polls, which take what is waiting
  and return at once); a batch of jobs worded in 2-3 s, or at DEPLOY.md's full-use rate of 5 replies a
  second; a job older than the reply deadline dropped unrun; a stop waits for the batch in hand.
- The reply deadline: a turn whose reply is not stored by its deadline shows the fallback.

Traffic: weekday desk hours from the pack's `[hours]` with a morning and an afternoon peak, 100
conversations of 6 turns a desk a day, each turn generated (worded by the model) with the pack's share
of generated actions among its scripted turns; `--desks N` desks, each with its own stack and realizer
as the template deploys today (`--shared-realizer`: all on one realizer service, the shape issue 42's
item 3 proposes). The abuse profile adds, to each realizer, a stranger's generated turn every 14
minutes around the clock and, once a day, a burst at the turn route's throttles. The unhealthy profile
is the desks' traffic with an image whose model load hangs: each task is replaced when the health check
gives up (REALIZER_MAX_LOAD_SECONDS, the heartbeat's age limit and the check's retries, from the task
definition), and ECS starts another.

The figures (`FleetResult`): generated turns and the share worded by the model before the deadline;
the wait for a worded reply from the turn (p50, p95); cold starts (a task started while no other was
loading or serving); mid-day scale-ins (a scale-in inside desk hours with a generated turn after it
before the desk closes that day); GPU instance hours; the desk's open hours (once, whatever the number of
desks); the cost (GPU hours at `GPU_PRICES_USD_PER_HOUR` plus the instance's volume and address, the
serverless parts per turn and each stack's cost at rest, `at_rest`: the pieces the template's conditions
give a stack with its parameters, at docs/DEPLOY.md's prices, so a desk on a shared realizer, with a
shared web ACL or with SnapStart off costs what it would) and that cost per worded reply.

Beyond the JSON record it prints the issue's goals' other figures: the share worded inside desk hours,
GPU hours outside desk hours and in the day with most, the alarm topic's mails, the times an alarm
turned the off switch, and the turns that found the realizer cold.

Not modelled: a daylight-saving change (the calendar is a January month); more than one warm dispatch
function remembering its answer; a GPU type short of capacity (`--instance-type` picks the one that
launches), and so a GPU quota of 0 (the unhealthy profile stands for both: no worker ever polls); the
sweeper; an operator turning the off switch on (without desk hours it stays off for the rest of the
run); the WAF's per-address and the per-conversation limits (the stranger's burst comes from many
addresses and conversations, every turn generated); the worker's batch window is Timings' (the worker's
default, 2 s), not read from the task definition, which sets no REALIZER_MAX_BATCH_WAIT_SECONDS; the
second from a turn to its job on the queue (the table's stream and the dispatch function) is assumed,
and named in the output. Once warm, a worded reply waits that second, a 2-3 s batch, 0.5 s to screen
and store, and any batch in hand: p95 4.5 s for one desk.
"""

from __future__ import annotations

import bisect
import heapq
import json
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from realizer.worker import FILL_WAIT_SECONDS

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"

MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0
DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
START = datetime(2026, 1, 5)  # a Monday: day 0 of every simulation, in the desk's own time
"""The simulated calendar starts on a Monday at midnight, desk time (no daylight-saving change in it)."""

FAKE_IMAGE_DIGEST = "sha256:" + "0" * 64
"""RealizerImageDigest for the simulation: the realizer counts as deployed (HasRealizer)."""

# --- prices -------------------------------------------------------------------------------------------

GPU_PRICES_USD_PER_HOUR = {
    "g6.xlarge": 0.8048,
    "g6.2xlarge": 0.9776,
    "g5.xlarge": 1.006,
    "g5.2xlarge": 1.212,
    "g6e.xlarge": 1.861,
}
"""On-demand Linux prices in us-east-1 (AWS's EC2 pricing page, 2025), for the types GpuInstanceTypes
allows; docs/DEPLOY.md's "What it costs" quotes the g6, g5 and g6e xlarge figures."""
GPU_EXTRAS_USD_PER_HOUR = 0.037
"""What each GPU instance adds while it runs (docs/DEPLOY.md, "What it costs"): its 100 GB gp3 volume
($0.011), the volume's 375 MiB/s above the free 125 ($0.021) and a public IPv4 address ($0.005)."""
SERVERLESS_USD_PER_TURN = 0.03 / 1000
"""docs/DEPLOY.md's "Per thousand turns": the HTTP API, CloudFront and WAF, Lambda, DynamoDB, SQS, logs."""
DAYS_PER_MONTH = 365 / 12

# What a stack costs at rest, by the pieces the template gives it (`at_rest`); docs/DEPLOY.md's "At rest"
# table is these prices and a test holds it to `at_rest` of the template's default shape.
SECONDS_PER_MONTH = 2_628_000  # 730 hours
SNAPSTART_CACHE_USD_PER_GB_SECOND = 0.0000015046  # a version's snapshot, while the version exists
ALARM_METRIC_USD_PER_MONTH = 0.10  # a standard-resolution alarm, per metric it reads
WEB_ACL_USD_PER_MONTH = 5.00
WEB_ACL_RULE_USD_PER_MONTH = 1.00
SECRET_USD_PER_MONTH = 0.40
REALIZER_IMAGE_GB = 12  # vLLM base, CUDA and the weights
ECR_USD_PER_GB_MONTH = 0.10
SQS_MAPPING_USD_PER_MONTH = 0.26  # Lambda's pollers on an SQS queue: 5 x 3 requests a minute x $0.40/million
PAGES_WAF_TEMPLATE = ROOT / "ops" / "pages-waf.yaml"
"""The web ACL many desks share (PagesWebAclArn): one stack, counted once for a fleet."""


class FleetError(Exception):
    """The template says something the simulator cannot read, or an option is out of range."""


# --- the template, read -------------------------------------------------------------------------------


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """template.yaml as cfn-lint decodes it, as the deploy tests read it (short-form intrinsics as dicts)."""
    from cfnlint.decode import decode  # type: ignore[import-untyped]

    decoded, matches = decode(str(path))
    if matches or decoded is None:
        raise FleetError(f"{path}: cfn-lint cannot decode it: {'; '.join(str(match) for match in matches)}")
    return dict(decoded)


@dataclass(frozen=True)
class Symbol:
    """A value known only once deployed: a resource's Ref (attribute "") or one of its attributes."""

    resource: str
    attribute: str = ""


class _NoValue:
    pass


NO_VALUE = _NoValue()
PSEUDO_PARAMETERS = {
    "AWS::StackName": "desk",
    "AWS::Region": "us-east-1",
    "AWS::AccountId": "123456789012",
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
}


class Resolver:
    """Evaluates the template's intrinsic functions with its parameters' defaults (and any overrides)."""

    def __init__(self, template: Mapping[str, Any], overrides: Mapping[str, str] | None = None) -> None:
        self.template = template
        specs: Mapping[str, Any] = template.get("Parameters") or {}
        given = dict(overrides or {})
        unknown = sorted(set(given) - set(specs))
        if unknown:
            raise FleetError(f"the template has no parameter {', '.join(unknown)}")
        self.parameters: dict[str, Any] = {}
        for name, spec in specs.items():
            value = given.get(name, spec.get("Default"))
            kind = str(spec.get("Type", ""))
            if (kind == "CommaDelimitedList" or kind.startswith("List<")) and not isinstance(value, list):
                value = [item.strip() for item in str(value or "").split(",") if item.strip()]
            self.parameters[name] = value
        self._conditions: dict[str, bool] = {}

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            conditions: Mapping[str, Any] = self.template.get("Conditions") or {}
            if name not in conditions:
                raise FleetError(f"the template has no condition {name}")
            self._conditions[name] = bool(self.resolve(conditions[name]))
        return self._conditions[name]

    def resolve(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            if len(value) == 1:
                ((key, argument),) = value.items()
                if key == "Ref" or key.startswith("Fn::") or key == "Condition":
                    return self._function(str(key), argument)
            resolved = {str(k): self.resolve(v) for k, v in value.items()}
            return {k: v for k, v in resolved.items() if v is not NO_VALUE}
        if isinstance(value, list):
            return [item for item in (self.resolve(v) for v in value) if item is not NO_VALUE]
        return value

    def _function(self, key: str, argument: Any) -> Any:
        if key == "Ref":
            return self._ref(str(argument))
        if key == "Condition":
            return self.condition(str(argument))
        if key == "Fn::GetAtt":
            resource, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
            return Symbol(str(resource), str(attribute))
        if key == "Fn::If":
            name, when_true, when_false = argument
            return self.resolve(when_true if self.condition(str(name)) else when_false)
        if key == "Fn::Equals":
            first, second = (self.resolve(item) for item in argument)
            return str(first) == str(second)
        if key == "Fn::Not":
            return not self.resolve(argument[0])
        if key == "Fn::And":
            return all(self.resolve(item) for item in argument)
        if key == "Fn::Or":
            return any(self.resolve(item) for item in argument)
        if key == "Fn::Join":
            separator, items = argument
            return str(separator).join(str(item) for item in self.resolve(items))
        if key == "Fn::Split":
            separator, text = argument
            return str(self.resolve(text)).split(str(separator))
        if key == "Fn::Select":
            index, items = argument
            return self.resolve(items)[int(self.resolve(index))]
        if key == "Fn::FindInMap":
            name, first, second = (self.resolve(item) for item in argument)
            return self.template["Mappings"][str(name)][str(first)][str(second)]
        if key == "Fn::Sub":
            text, names = (argument, {}) if isinstance(argument, str) else argument
            values = {str(k): self.resolve(v) for k, v in names.items()}
            return re.sub(r"\$\{([^}!]+)\}", lambda match: self._sub(match.group(1), values), str(text))
        if key in ("Fn::Base64", "Fn::ImportValue", "Fn::GetAZs", "Fn::Cidr", "Fn::Length", "Fn::ToJsonString"):
            return Symbol(key)
        raise FleetError(f"the simulator cannot evaluate {key}")

    def _sub(self, name: str, values: Mapping[str, Any]) -> str:
        if name in values:
            return str(values[name])
        if "." in name:
            resource, attribute = name.split(".", 1)
            return f"{{{resource}.{attribute}}}"
        value = self._ref(name)
        return f"{{{value.resource}}}" if isinstance(value, Symbol) else str(value)

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in PSEUDO_PARAMETERS:
            return PSEUDO_PARAMETERS[name]
        if name in self.parameters:
            return self.parameters[name]
        if name in (self.template.get("Resources") or {}):
            return Symbol(name)
        raise FleetError(f"the template refers to {name}, which it does not define")


def _number(value: Any, what: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise FleetError(f"{what}: expected a number, found {value!r}") from None


@dataclass(frozen=True)
class Query:
    """One entry of an alarm's or a policy's metrics: a metric's statistic over a period, or an expression."""

    id: str
    series: str = ""  # the simulated series (SERIES), for a metric
    stat: str = ""
    period_s: int = 60
    expression: str = ""
    returned: bool = True
    label: str = ""


@dataclass(frozen=True)
class AlarmSpec:
    name: str
    queries: tuple[Query, ...]
    comparison: str
    threshold: float
    evaluation_periods: int
    datapoints: int
    treat_missing: str
    policies: tuple[str, ...]  # the scaling policies its ALARM invokes
    notifies: bool  # an SNS topic hears its state changes
    switches_off: bool = False  # its ALARM invokes the off switch (the realizer switch function)

    @property
    def period_s(self) -> int:
        return max(query.period_s for query in self.queries if query.series)


@dataclass(frozen=True)
class StepPolicy:
    name: str
    adjustment_type: str
    cooldown_s: float
    steps: tuple[tuple[float | None, float | None, float], ...]  # lower, upper (relative to threshold), adjustment


@dataclass(frozen=True)
class TrackingPolicy:
    name: str
    target: float
    disable_scale_in: bool
    scale_out_cooldown_s: float
    scale_in_cooldown_s: float
    queries: tuple[Query, ...]


@dataclass(frozen=True)
class ScheduledAction:
    name: str
    minute: int
    hour: int
    weekdays: frozenset[int]  # 0 is Monday
    time_zone: str
    min_capacity: int | None
    max_capacity: int | None


@dataclass(frozen=True)
class FleetConfig:
    """What the simulation takes from the template (and the parameters it was resolved with)."""

    min_tasks: int
    max_tasks: int
    max_instances: int
    scheduled: tuple[ScheduledAction, ...]
    step_policies: Mapping[str, StepPolicy]
    tracking: tuple[TrackingPolicy, ...]
    alarms: tuple[AlarmSpec, ...]
    visibility_timeout_s: float
    retention_s: float
    receive_wait_s: float
    reply_deadline_s: float
    instance_types: tuple[str, ...]
    turn_rate_per_s: float
    turn_burst: int
    unhealthy_replaced_after_s: float = 1110.0  # a task whose model load hangs is replaced this long after it starts
    cold_fallback_s: float | None = None  # the dispatch function's COLD_FALLBACK_SECONDS, where it sets one
    parameters: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> list[str]:
        """The settings read, in a few lines, for the table's header."""
        lines = [
            f"scalable target: {self.min_tasks}-{self.max_tasks} tasks, GPU group up to {self.max_instances} "
            f"instances of {', '.join(self.instance_types)}; schedules: "
            + (", ".join(f"{s.name} {s.hour:02d}:{s.minute:02d} {s.time_zone}" for s in self.scheduled) or "none"),
            f"realize queue: visibility {self.visibility_timeout_s:g} s, retention {self.retention_s:g} s, "
            f"receive wait {self.receive_wait_s:g} s; reply deadline {self.reply_deadline_s:g} s; turn route "
            f"{self.turn_rate_per_s:g}/s, burst {self.turn_burst}; a task whose model load hangs is replaced "
            f"after {self.unhealthy_replaced_after_s:g} s (the task definition's health check); a turn that finds "
            "the realizer cold gets its fallback "
            + ("at the deadline" if self.cold_fallback_s is None else f"after {self.cold_fallback_s:g} s"),
        ]
        for alarm in self.alarms:
            metrics = ", ".join(f"{q.series}:{q.stat}/{q.period_s}s" for q in alarm.queries if q.series)
            acts = [
                *alarm.policies,
                *(["off switch"] if alarm.switches_off else []),
                *(["mail"] if alarm.notifies else []),
            ]
            action = ", ".join(acts) or "none"
            lines.append(
                f"{alarm.name}: {alarm.datapoints} of {alarm.evaluation_periods} x {alarm.period_s} s "
                f"{alarm.comparison} {alarm.threshold:g}, missing={alarm.treat_missing} [{metrics}] -> {action}"
            )
        for policy in self.step_policies.values():
            steps = "; ".join(f"[{lo},{hi}] -> {adj:g}" for lo, hi, adj in policy.steps)
            lines.append(f"{policy.name}: {policy.adjustment_type} {steps}, cooldown {policy.cooldown_s:g} s")
        for tracking in self.tracking:
            lines.append(
                f"{tracking.name}: target {tracking.target:g}, scale-in "
                f"{'disabled' if tracking.disable_scale_in else 'enabled'}, out cooldown "
                f"{tracking.scale_out_cooldown_s:g} s"
            )
        return lines


SQS_SERIES = {
    "ApproximateNumberOfMessagesVisible": "sqs.visible",
    "ApproximateNumberOfMessagesNotVisible": "sqs.not_visible",
    "ApproximateNumberOfMessagesDelayed": "sqs.delayed",
    "ApproximateAgeOfOldestMessage": "sqs.oldest_age",
    "NumberOfMessagesSent": "sqs.sent",
    "NumberOfMessagesReceived": "sqs.received",
    "NumberOfMessagesDeleted": "sqs.deleted",
    "NumberOfEmptyReceives": "sqs.empty_receives",
}
ECS_SERIES = {
    "RunningTaskCount": "ecs.running",
    "DesiredTaskCount": "ecs.desired",
    "PendingTaskCount": "ecs.pending",
}
ASG_SERIES = {
    "GroupInServiceInstances": "asg.in_service",
    "GroupDesiredCapacity": "asg.desired",
    "GroupPendingInstances": "asg.pending",
    "GroupTotalInstances": "asg.total",
}
CUSTOM_SERIES = {
    "TurnsDispatched": "app.turns_dispatched",
    "RealizerWoken": "app.realizer_woken",
    "RealizerWakeFailed": "app.realizer_wake_failed",
}
"""The desk's own metrics (the dispatch function's), matched by name in whatever namespace carries them. A
metric an alarm that scales the realizer reads must be here (with its count kept in `RealizerSim`), or
`read_config` refuses the template: a jobs-handled metric the worker publishes would be added so."""


def _series(metric: Mapping[str, Any], realize_queue: str) -> str | None:
    namespace = str(metric.get("Namespace", ""))
    name = str(metric.get("MetricName", ""))
    dimensions = {str(d.get("Name")): d.get("Value") for d in metric.get("Dimensions") or []}
    if namespace == "AWS/SQS":
        queue = dimensions.get("QueueName")
        if not (isinstance(queue, Symbol) and queue.resource == realize_queue):
            return None
        return SQS_SERIES.get(name)
    if namespace == "ECS/ContainerInsights":
        return ECS_SERIES.get(name) if "ServiceName" in dimensions else None
    if namespace == "AWS/AutoScaling":
        return ASG_SERIES.get(name)
    if namespace.startswith("AWS/"):
        return None
    return CUSTOM_SERIES.get(name)


def _queries(properties: Mapping[str, Any], realize_queue: str) -> tuple[Query, ...] | None:
    """An alarm's or a customized metric's queries; None where one reads a metric not modelled here."""
    if "MetricName" in properties:  # a one-metric alarm
        series = _series(properties, realize_queue)
        if series is None:
            return None
        stat = str(properties.get("Statistic") or properties.get("ExtendedStatistic") or "Average")
        return (Query("m", series=series, stat=stat, period_s=int(_number(properties.get("Period", 60), "Period"))),)
    queries = []
    for entry in properties.get("Metrics") or []:
        returned = bool(entry.get("ReturnData", True))
        if "Expression" in entry:
            queries.append(Query(str(entry["Id"]), expression=str(entry["Expression"]), returned=returned))
            continue
        stat_spec = entry["MetricStat"]
        series = _series(stat_spec["Metric"], realize_queue)
        if series is None:
            return None
        period = int(_number(stat_spec.get("Period", 60), "Period"))
        queries.append(Query(str(entry["Id"]), series=series, stat=str(stat_spec["Stat"]), period_s=period,
                             returned=returned, label=str(entry.get("Label", ""))))  # fmt: skip
    return tuple(queries) if queries else None


def _of_type(resources: Mapping[str, Any], kind: str) -> dict[str, Mapping[str, Any]]:
    return {name: resource for name, resource in resources.items() if resource.get("Type") == kind}


def _foreign_namespaces(node: Any, namespace: str) -> list[str]:
    """The namespaces of the desk's own (non-AWS) metrics under node that are not the stack's: an alarm on
    one reads another stack's figures, or none (issue 42, item 4)."""
    found: list[str] = []
    if isinstance(node, Mapping):
        metric_namespace = node.get("Namespace")
        own = isinstance(metric_namespace, str) and not metric_namespace.startswith(("AWS/", "ECS/"))
        if "MetricName" in node and own and metric_namespace != namespace:
            found.append(str(metric_namespace))
        for value in node.values():
            found.extend(_foreign_namespaces(value, namespace))
    elif isinstance(node, list):
        for item in node:
            found.extend(_foreign_namespaces(item, namespace))
    return found


def _environment(resource: Mapping[str, Any]) -> Mapping[str, Any]:
    return dict((resource.get("Properties", {}).get("Environment") or {}).get("Variables") or {})


def parse_cron(expression: str) -> tuple[int, int, frozenset[int]]:
    """An Application Auto Scaling cron(...) of a fixed minute and hour: (minute, hour, weekdays, 0=Monday)."""
    match = re.fullmatch(r"cron\(([^)]*)\)", expression.strip())
    if not match or len(parts := match.group(1).split()) != 6:
        raise FleetError(f"the simulator reads cron(M H ? * DAYS *), not {expression!r}")
    minute, hour, day_of_month, month, days, _year = parts
    if not (minute.isdigit() and hour.isdigit()) or day_of_month not in ("?", "*") or month != "*":
        raise FleetError(f"the simulator reads a fixed minute and hour on weekdays, not {expression!r}")
    names = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]
    numbers = {"2": 0, "3": 1, "4": 2, "5": 3, "6": 4, "7": 5, "1": 6}  # cron's 1 is Sunday

    def day(token: str) -> int:
        token = token.upper()
        if token in names:
            return names.index(token)
        if token in numbers:
            return numbers[token]
        raise FleetError(f"unknown day {token!r} in {expression!r}")

    weekdays: set[int] = set()
    if days in ("*", "?"):
        weekdays = set(range(7))
    else:
        for part in days.split(","):
            if "-" in part:
                first, last = (day(token) for token in part.split("-", 1))
                weekdays.update(range(first, last + 1) if first <= last else [*range(first, 7), *range(last + 1)])
            else:
                weekdays.add(day(part))
    return int(minute), int(hour), frozenset(weekdays)


def read_config(template: Mapping[str, Any], overrides: Mapping[str, str] | None = None) -> FleetConfig:
    """The realizer's scaling, as the template deploys it with these parameters."""
    given = dict(overrides or {})
    if "RealizerImageDigest" in (template.get("Parameters") or {}):
        given.setdefault("RealizerImageDigest", FAKE_IMAGE_DIGEST)
    resolver = Resolver(template, given)
    resources: Mapping[str, Any] = template.get("Resources") or {}

    def props(name: str) -> dict[str, Any]:
        resolved = resolver.resolve(resources[name].get("Properties") or {})
        return dict(resolved)

    # The realize queue: what the functions send jobs to (REALIZE_QUEUE_URL).
    functions = {**_of_type(resources, "AWS::Serverless::Function"), **_of_type(resources, "AWS::Lambda::Function")}
    dispatchers = [name for name, res in functions.items() if "REALIZE_QUEUE_URL" in _environment(res)]
    if not dispatchers:
        raise FleetError("no function of the template sends to a realize queue (REALIZE_QUEUE_URL)")
    dispatch_env = dict(resolver.resolve(_environment(functions[dispatchers[0]])))
    queue_ref = dispatch_env["REALIZE_QUEUE_URL"]
    if not isinstance(queue_ref, Symbol):
        # A desk on another stack's realizer (SharedRealizerQueueArn): its scaling is that stack's.
        raise FleetError(
            "REALIZE_QUEUE_URL names another stack's realizer (SharedRealizerQueueArn): simulate the realizer's "
            "stack, its template without that parameter, with --shared-realizer"
        )
    realize_queue = queue_ref.resource
    queue = props(realize_queue)
    globals_env = (((template.get("Globals") or {}).get("Function") or {}).get("Environment") or {}).get("Variables")
    deadline_value = dispatch_env.get("REPLY_DEADLINE_SECONDS")
    if deadline_value is None and globals_env:
        deadline_value = resolver.resolve(globals_env).get("REPLY_DEADLINE_SECONDS")
    # The namespace the functions write their metrics to (POWERTOOLS_METRICS_NAMESPACE): an alarm or policy
    # on a metric of the desk's own in any other namespace never gets a datapoint in AWS, so it is refused.
    namespace_value = dispatch_env.get("POWERTOOLS_METRICS_NAMESPACE")
    if namespace_value is None and globals_env:
        namespace_value = resolver.resolve(globals_env).get("POWERTOOLS_METRICS_NAMESPACE")
    desk_namespace = str(namespace_value or "")
    if deadline_value is None:
        from dialogue.settings import Settings

        deadline_value = Settings.model_fields["reply_deadline_seconds"].default

    # The scalable target of the realizer service's desired count, its policies and their alarms.
    targets = {
        name: res
        for name, res in _of_type(resources, "AWS::ApplicationAutoScaling::ScalableTarget").items()
        if (res.get("Properties") or {}).get("ScalableDimension") == "ecs:service:DesiredCount"
    }
    if len(targets) != 1:
        raise FleetError(f"expected one ECS scalable target, found {len(targets)}")
    (target_name,) = targets
    target = props(target_name)
    scheduled = []
    desk_zone = str(resolver.parameters.get("DeskTimezone") or "UTC")
    for action in target.get("ScheduledActions") or []:
        minute, hour, weekdays = parse_cron(str(action["Schedule"]))
        capacities = action.get("ScalableTargetAction") or {}
        scheduled.append(
            ScheduledAction(
                name=str(action.get("ScheduledActionName", "")),
                minute=minute,
                hour=hour,
                weekdays=weekdays,
                time_zone=str(action.get("Timezone") or desk_zone),
                min_capacity=int(_number(capacities["MinCapacity"], "MinCapacity")) if "MinCapacity" in capacities
                else None,
                max_capacity=int(_number(capacities["MaxCapacity"], "MaxCapacity")) if "MaxCapacity" in capacities
                else None,
            )
        )  # fmt: skip
    step_policies: dict[str, StepPolicy] = {}
    tracking: list[TrackingPolicy] = []
    for name, res in _of_type(resources, "AWS::ApplicationAutoScaling::ScalingPolicy").items():
        if "Condition" in res and not resolver.condition(str(res["Condition"])):
            continue
        policy = props(name)
        scaling_target = policy.get("ScalingTargetId")
        if not (isinstance(scaling_target, Symbol) and scaling_target.resource == target_name):
            continue
        if policy.get("PolicyType") == "StepScaling":
            config = policy["StepScalingPolicyConfiguration"]
            steps = tuple(
                (
                    _number(step["MetricIntervalLowerBound"], "bound") if "MetricIntervalLowerBound" in step else None,
                    _number(step["MetricIntervalUpperBound"], "bound") if "MetricIntervalUpperBound" in step else None,
                    _number(step["ScalingAdjustment"], "ScalingAdjustment"),
                )
                for step in config["StepAdjustments"]
            )
            step_policies[name] = StepPolicy(
                name, str(config["AdjustmentType"]), _number(config.get("Cooldown", 0), "Cooldown"), steps
            )
        elif policy.get("PolicyType") == "TargetTrackingScaling":
            config = policy["TargetTrackingScalingPolicyConfiguration"]
            custom = config.get("CustomizedMetricSpecification")
            if foreign := _foreign_namespaces(custom, desk_namespace):
                raise FleetError(f"{name} reads {', '.join(foreign)}, not the functions' namespace {desk_namespace}")
            queries = _queries(custom, realize_queue) if custom else None
            if queries is None:
                raise FleetError(f"{name}: the simulator models only a customized metric of the realize queue and ECS")
            tracking.append(
                TrackingPolicy(
                    name,
                    _number(config["TargetValue"], "TargetValue"),
                    str(config.get("DisableScaleIn", False)).lower() == "true",
                    _number(config.get("ScaleOutCooldown", 300), "ScaleOutCooldown"),
                    _number(config.get("ScaleInCooldown", 300), "ScaleInCooldown"),
                    queries,
                )
            )
    # The off switch: a function whose handler is the realizer switch's (functions/realizer_switch).
    switches = {name for name, res in functions.items()
                if str((res.get("Properties") or {}).get("Handler", "")).startswith("realizer_switch.")}  # fmt: skip
    topics = set(_of_type(resources, "AWS::SNS::Topic"))
    alarms = []
    for name, res in _of_type(resources, "AWS::CloudWatch::Alarm").items():
        if "Condition" in res and not resolver.condition(str(res["Condition"])):
            continue
        alarm = props(name)
        if foreign := _foreign_namespaces(alarm, desk_namespace):
            raise FleetError(f"{name} reads {', '.join(foreign)}, not the functions' namespace {desk_namespace}")
        actions = [action for action in alarm.get("AlarmActions") or [] if isinstance(action, Symbol)]
        policies = tuple(action.resource for action in actions if action.resource in step_policies)
        switches_off = any(action.resource in switches for action in actions)
        queries = _queries(alarm, realize_queue)
        if queries is None:
            if policies:
                raise FleetError(f"{name} scales the realizer on a metric the simulator does not model; add it")
            continue
        evaluation_periods = int(_number(alarm.get("EvaluationPeriods", 1), "EvaluationPeriods"))
        alarms.append(
            AlarmSpec(
                name=name,
                queries=queries,
                comparison=str(alarm["ComparisonOperator"]),
                threshold=_number(alarm.get("Threshold", 0), "Threshold"),
                evaluation_periods=evaluation_periods,
                datapoints=int(_number(alarm.get("DatapointsToAlarm", evaluation_periods), "DatapointsToAlarm")),
                treat_missing=str(alarm.get("TreatMissingData", "missing")),
                policies=policies,
                notifies=any(action.resource in topics for action in actions),
                switches_off=switches_off,
            )
        )

    # The GPU group: its instance types and largest size.
    groups = _of_type(resources, "AWS::AutoScaling::AutoScalingGroup")
    if len(groups) != 1:
        raise FleetError(f"expected one GPU Auto Scaling group, found {len(groups)}")
    (group_name,) = groups
    group = props(group_name)
    overrides_list = ((group.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}).get("Overrides") or []
    instance_types = tuple(str(entry["InstanceType"]) for entry in overrides_list if "InstanceType" in entry)
    if not instance_types:
        raise FleetError(f"{group_name}: no instance types found")

    # The turn route's throttles (the abuse profile's burst).
    rate, burst = 0.0, 0
    for api_name in _of_type(resources, "AWS::Serverless::HttpApi"):
        api = props(api_name)
        routes = api.get("RouteSettings") or {}
        default = api.get("DefaultRouteSettings") or {}
        for route, settings in routes.items():
            if route.startswith("POST ") and route.endswith("/turns"):
                merged = {**default, **settings}
                rate = _number(merged.get("ThrottlingRateLimit", 0), "ThrottlingRateLimit")
                burst = int(_number(merged.get("ThrottlingBurstLimit", 0), "ThrottlingBurstLimit"))
    if rate <= 0:
        raise FleetError("the template throttles no POST .../turns route")

    # How long a task whose model load hangs lives: its loading heartbeat beats for REALIZER_MAX_LOAD_SECONDS,
    # the heartbeat file then grows older than the health check's limit, and the check fails Retries times.
    from realizer.healthcheck import DEFAULT_MAX_AGE_SECONDS
    from realizer.loading import DEFAULT_MAX_LOAD_SECONDS

    replaced_after = DEFAULT_MAX_LOAD_SECONDS + DEFAULT_MAX_AGE_SECONDS + 3 * 30.0
    for name, res in _of_type(resources, "AWS::ECS::TaskDefinition").items():
        if "Condition" in res and not resolver.condition(str(res["Condition"])):
            continue
        for container in props(name).get("ContainerDefinitions") or []:
            check = container.get("HealthCheck")
            if not check:
                continue
            env = {str(e.get("Name")): e.get("Value") for e in container.get("Environment") or []}
            max_load = _number(env.get("REALIZER_MAX_LOAD_SECONDS", DEFAULT_MAX_LOAD_SECONDS), "max load")
            max_age = _number(env.get("REALIZER_HEARTBEAT_MAX_AGE_SECONDS", DEFAULT_MAX_AGE_SECONDS), "max age")
            interval = _number(check.get("Interval", 30), "Interval")
            retries = _number(check.get("Retries", 3), "Retries")
            replaced_after = max_load + max_age + interval * retries

    return FleetConfig(
        min_tasks=int(_number(target["MinCapacity"], "MinCapacity")),
        max_tasks=int(_number(target["MaxCapacity"], "MaxCapacity")),
        max_instances=int(_number(group["MaxSize"], "MaxSize")),
        scheduled=tuple(scheduled),
        step_policies=step_policies,
        tracking=tuple(tracking),
        alarms=tuple(alarms),
        visibility_timeout_s=_number(queue.get("VisibilityTimeout", 30), "VisibilityTimeout"),
        retention_s=_number(queue.get("MessageRetentionPeriod", 345600), "MessageRetentionPeriod"),
        receive_wait_s=_number(queue.get("ReceiveMessageWaitTimeSeconds", 0), "ReceiveMessageWaitTimeSeconds"),
        reply_deadline_s=_number(deadline_value, "REPLY_DEADLINE_SECONDS"),
        instance_types=instance_types,
        turn_rate_per_s=rate,
        turn_burst=burst,
        unhealthy_replaced_after_s=replaced_after,
        cold_fallback_s=None
        if dispatch_env.get("COLD_FALLBACK_SECONDS") is None
        else _number(dispatch_env["COLD_FALLBACK_SECONDS"], "COLD_FALLBACK_SECONDS"),
        parameters=dict(resolver.parameters),
    )


# --- the cost at rest, from the template's shape ------------------------------------------------------

SHARED_QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:realizer-RealizeQueue-0"
"""SharedRealizerQueueArn for the desks on a shared realizer (`--shared-realizer`): the realizer's stack's
RealizeQueueArn, as DEPLOY.md's "One realizer for many desks" deploys them."""


@dataclass(frozen=True)
class RestCost:
    """One stack's (or the shared web ACL's) cost a month at rest: no traffic, no task, no GPU."""

    items: Mapping[str, float]
    alarm_metrics: int = 0
    snapshots: int = 0

    @property
    def total(self) -> float:
        return sum(self.items.values())

    def describe(self) -> str:
        parts = ", ".join(f"{name} ${value:.2f}" for name, value in self.items.items() if value)
        return f"${self.total:.2f} a month ({parts or 'nothing'})"


def at_rest(template: Mapping[str, Any], overrides: Mapping[str, str] | None = None) -> RestCost:
    """What a stack of `template` deployed with these parameters costs a month at rest, from the pieces
    its conditions give it (docs/DEPLOY.md's "At rest", whose table is the default shape): each function's
    SnapStart snapshot, each alarm metric (target tracking's two alarms included), each web ACL and its
    rules, each secret, the realizer's image (where the stack runs a task definition), Lambda's pollers on
    each SQS queue it maps. Not counted: DynamoDB's few MB, the first three dashboards (free), Container
    Insights (published while a task runs, not at rest)."""
    given = dict(overrides or {})
    parameters = template.get("Parameters") or {}
    if "RealizerImageDigest" in parameters and "SharedRealizerQueueArn" not in given:
        given.setdefault("RealizerImageDigest", FAKE_IMAGE_DIGEST)
    resolver = Resolver(template, given)
    resources: Mapping[str, Any] = template.get("Resources") or {}

    def deployed(kind: str) -> list[Mapping[str, Any]]:
        return [
            res.get("Properties") or {}
            for res in _of_type(resources, kind).values()
            if "Condition" not in res or resolver.condition(str(res["Condition"]))
        ]

    defaults = (template.get("Globals") or {}).get("Function") or {}
    snapshot_gb, snapshots = 0.0, 0
    for properties in deployed("AWS::Serverless::Function"):
        snap = resolver.resolve(properties.get("SnapStart", defaults.get("SnapStart")) or {})
        if isinstance(snap, Mapping) and snap.get("ApplyOn") == "PublishedVersions":
            memory = resolver.resolve(properties.get("MemorySize", defaults.get("MemorySize", 128)))
            snapshot_gb += _number(memory, "MemorySize") / 1024
            snapshots += 1
    metrics = 0
    for properties in deployed("AWS::CloudWatch::Alarm"):
        metrics += 1 if "MetricName" in properties else sum("MetricStat" in e for e in properties.get("Metrics") or [])
    for properties in deployed("AWS::ApplicationAutoScaling::ScalingPolicy"):
        tracking = properties.get("TargetTrackingScalingPolicyConfiguration")
        if tracking:  # Application Auto Scaling makes a high and a low alarm on the policy's metrics
            custom = tracking.get("CustomizedMetricSpecification") or {}
            metrics += 2 * (sum("MetricStat" in e for e in custom.get("Metrics") or []) or 1)
    acls = deployed("AWS::WAFv2::WebACL")
    queues = set(_of_type(resources, "AWS::SQS::Queue"))
    sources = [resolver.resolve(p.get("EventSourceArn")) for p in deployed("AWS::Lambda::EventSourceMapping")]
    items = {
        "SnapStart cache": snapshot_gb * SECONDS_PER_MONTH * SNAPSTART_CACHE_USD_PER_GB_SECOND,
        "web ACL": sum(
            WEB_ACL_USD_PER_MONTH + WEB_ACL_RULE_USD_PER_MONTH * len(acl.get("Rules") or []) for acl in acls
        ),
        "alarms": metrics * ALARM_METRIC_USD_PER_MONTH,
        "image": REALIZER_IMAGE_GB * ECR_USD_PER_GB_MONTH if deployed("AWS::ECS::TaskDefinition") else 0.0,
        "secrets": len(deployed("AWS::SecretsManager::Secret")) * SECRET_USD_PER_MONTH,
        "SQS polling": SQS_MAPPING_USD_PER_MONTH
        * sum(1 for source in sources if isinstance(source, Symbol) and source.resource in queues),
    }
    return RestCost(items={name: round(value, 2) for name, value in items.items()}, alarm_metrics=metrics,
                    snapshots=snapshots)  # fmt: skip


def desk_on_shared_realizer(template: Mapping[str, Any], overrides: Mapping[str, str]) -> dict[str, str]:
    """A desk stack's parameters on another stack's realizer, the rest as given (DEPLOY.md: its
    RealizerImageDigest empty, SharedRealizerQueueArn the realizer's queue)."""
    if "SharedRealizerQueueArn" not in (template.get("Parameters") or {}):
        raise FleetError("this template has no SharedRealizerQueueArn: its desks cannot share a realizer")
    kept = {k: v for k, v in overrides.items() if k not in ("RealizerImageDigest", "SharedRealizerReplyQueueArns")}
    return {**kept, "RealizerImageDigest": "", "SharedRealizerQueueArn": SHARED_QUEUE_ARN}


def fleet_at_rest(
    template: Mapping[str, Any], overrides: Mapping[str, str], desks: int, *, shared_realizer: bool
) -> list[tuple[str, int, RestCost]]:
    """The stacks of `desks` desks at rest: (what, how many, each one's cost). Each desk its own stack and
    realizer; or, on a shared realizer, the realizer's stack (a desk itself) and desks - 1 stacks on it;
    and a web ACL given as PagesWebAclArn (ops/pages-waf.yaml's) counted once, however many share it."""
    if shared_realizer:
        stacks = [("the realizer's desk stack", 1, at_rest(template, overrides))]
        if desks > 1:
            stacks.append(
                ("a desk stack on it", desks - 1, at_rest(template, desk_on_shared_realizer(template, overrides)))
            )
    else:
        stacks = [("a desk stack with its realizer", desks, at_rest(template, overrides))]
    if overrides.get("PagesWebAclArn") and PAGES_WAF_TEMPLATE.is_file():
        stacks.append(("the web ACL they share (ops/pages-waf.yaml)", 1, at_rest(load_template(PAGES_WAF_TEMPLATE))))
    return stacks


# --- metric math --------------------------------------------------------------------------------------

Value = float | None
Series = Callable[[str], Value]

_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d*)?|\.\d+)|([A-Za-z_][A-Za-z0-9_]*)|(<=|>=|==|!=|[-+*/(),<>]))")


class Expression:
    """A CloudWatch metric-math expression of the forms the template uses: numbers, metric ids, + - * /,
    comparisons (1 or 0), AND, OR, IF(c, a, b) and FILL(m, v). A missing value (None) propagates; FILL
    replaces it; a division by zero is missing."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._tokens: list[str] = []
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if not match or match.end() == position:
                if text[position:].strip() == "":
                    break
                raise FleetError(f"cannot read the metric math {text!r} at {text[position:]!r}")
            self._tokens.append(match.group(match.lastindex or 0))
            position = match.end()
        self._position = 0
        self._tree = self._or()
        if self._position != len(self._tokens):
            raise FleetError(f"cannot read the metric math {text!r}")

    def __call__(self, lookup: Series) -> Value:
        return self._tree(lookup)

    def _peek(self) -> str:
        return self._tokens[self._position] if self._position < len(self._tokens) else ""

    def _take(self, expected: str | None = None) -> str:
        token = self._peek()
        if expected is not None and token.upper() != expected:
            raise FleetError(f"cannot read the metric math {self.text!r}: expected {expected!r}")
        self._position += 1
        return token

    def _binary(self, operand: Callable[[], Callable[[Series], Value]], operators: Sequence[str]) -> Any:
        left = operand()
        while self._peek().upper() in operators:
            operator = self._take().upper()
            right = operand()
            left = _apply(operator, left, right)
        return left

    def _or(self) -> Callable[[Series], Value]:
        result: Callable[[Series], Value] = self._binary(self._and, ["OR"])
        return result

    def _and(self) -> Callable[[Series], Value]:
        result: Callable[[Series], Value] = self._binary(self._compare, ["AND"])
        return result

    def _compare(self) -> Callable[[Series], Value]:
        result: Callable[[Series], Value] = self._binary(self._sum, ["<", ">", "<=", ">=", "==", "!="])
        return result

    def _sum(self) -> Callable[[Series], Value]:
        result: Callable[[Series], Value] = self._binary(self._product, ["+", "-"])
        return result

    def _product(self) -> Callable[[Series], Value]:
        result: Callable[[Series], Value] = self._binary(self._unary, ["*", "/"])
        return result

    def _unary(self) -> Callable[[Series], Value]:
        token = self._take()
        if token == "-":
            inner = self._unary()
            return lambda lookup: None if (value := inner(lookup)) is None else -value
        if token == "(":
            inner = self._or()
            self._take(")")
            return inner
        if re.fullmatch(r"\d+(?:\.\d*)?|\.\d+", token):
            number = float(token)
            return lambda lookup: number
        name = token.upper()
        if name in ("IF", "FILL") and self._peek() == "(":
            self._take("(")
            arguments = [self._or()]
            while self._peek() == ",":
                self._take(",")
                arguments.append(self._or())
            self._take(")")
            if name == "FILL" and len(arguments) == 2:
                series, filler = arguments
                return lambda lookup: value if (value := series(lookup)) is not None else filler(lookup)
            if name == "IF" and len(arguments) in (2, 3):
                condition, when_true = arguments[0], arguments[1]
                when_false = arguments[2] if len(arguments) == 3 else None

                def choose(lookup: Series) -> Value:
                    test = condition(lookup)
                    if test is None:
                        return None
                    if test:
                        return when_true(lookup)
                    return when_false(lookup) if when_false is not None else None

                return choose
            raise FleetError(f"cannot read the metric math {self.text!r}: {name} takes other arguments")
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token):
            return lambda lookup: lookup(token)
        raise FleetError(f"cannot read the metric math {self.text!r} at {token!r}")


def _apply(
    operator: str, left: Callable[[Series], Value], right: Callable[[Series], Value]
) -> Callable[[Series], Value]:
    def combined(lookup: Series) -> Value:
        a, b = left(lookup), right(lookup)
        if a is None or b is None:
            return None
        if operator == "/":
            return None if b == 0 else a / b
        results = {
            "+": lambda: a + b,
            "-": lambda: a - b,
            "*": lambda: a * b,
            "<": lambda: float(a < b),
            ">": lambda: float(a > b),
            "<=": lambda: float(a <= b),
            ">=": lambda: float(a >= b),
            "==": lambda: float(a == b),
            "!=": lambda: float(a != b),
            "AND": lambda: float(bool(a) and bool(b)),
            "OR": lambda: float(bool(a) or bool(b)),
        }
        return results[operator]()

    return combined


COMPARISONS: Mapping[str, Callable[[float, float], bool]] = {
    "GreaterThanThreshold": lambda value, threshold: value > threshold,
    "GreaterThanOrEqualToThreshold": lambda value, threshold: value >= threshold,
    "LessThanThreshold": lambda value, threshold: value < threshold,
    "LessThanOrEqualToThreshold": lambda value, threshold: value <= threshold,
}


# --- the simulation's inputs ---------------------------------------------------------------------------

Range = tuple[float, float]


@dataclass(frozen=True)
class Timings:
    """Times the template does not set. Defaults: docs/DEPLOY.md's cold-start table ("A cold start takes
    10-15 minutes") and "What it costs", and the worker's own settings (realizer_container)."""

    launch_s: Range = (120.0, 180.0)  # the capacity provider raises the group; EC2 launches and boots a GPU
    register_s: Range = (45.0, 75.0)  # the ECS agent registers the instance; the task is placed ("about 1")
    pull_s: Range = (120.0, 240.0)  # the image pulled and unpacked (a fresh instance only: prefer-cached)
    load_s: Range = (180.0, 300.0)  # vLLM loads the model and warms up; the worker's first poll
    job_s: Range = (2.0, 3.0)  # a warm worker words a batch ("2-3 s")
    replies_per_s: float = 5.0  # a full batch's pace (DEPLOY.md: "at 5 generated replies a second")
    max_batch_wait_s: float = 2.0  # the worker's batch window (REALIZER_MAX_BATCH_WAIT_SECONDS)
    fill_wait_s: float = float(FILL_WAIT_SECONDS)  # its top-up receives' wait: the worker's own (0, a short poll)
    batch_size: int = 32  # REALIZER_BATCH_SIZE
    dispatch_s: float = 1.0  # assumed: a turn's stream record to its job on the queue (and the wake call)
    screen_s: float = 0.5  # a realized reply screened and stored
    empty_instance_s: float = 900.0  # the capacity provider ends an instance empty this long
    queue_inactive_s: float = 6 * HOUR  # SQS stops publishing an untouched queue's metrics
    metrics_resume_s: Range = (0.0, 900.0)  # ... and resumes them up to 15 minutes after it is touched
    think_s: Range = (15.0, 60.0)  # a resident reads a reply and types the next turn
    restart_s: float = 60.0  # ECS's service scheduler starts a replacement for a task the health check stopped

    def named(self) -> str:
        def span(value: Range) -> str:
            return f"{value[0] / 60:g}-{value[1] / 60:g} min"

        return (
            f"instance launch {span(self.launch_s)}, agent and placement {span(self.register_s)}, image pull "
            f"{span(self.pull_s)}, model load {span(self.load_s)} (DEPLOY.md); a turn to its job on the queue "
            f"{self.dispatch_s:g} s (assumed: the table's stream and the dispatch function); the worker's batch "
            f"window {self.max_batch_wait_s:g} s, its top-up receives waiting {self.fill_wait_s:g} s "
            f"(realizer.worker), a batch {self.job_s[0]:g}-{self.job_s[1]:g} s, {self.replies_per_s:g} replies/s "
            f"at full use; a reply screened and stored in {self.screen_s:g} s; empty instance ended after "
            f"{self.empty_instance_s / 60:g} min; queue metrics resume up to {self.metrics_resume_s[1] / 60:g} min "
            f"after an idle 6 h; a replaced task restarted after {self.restart_s:g} s"
        )


@dataclass(frozen=True)
class Traffic:
    conversations: int = 100  # a desk's conversations on an open day
    turns: int = 6  # turns in each
    generated_share: float = 8 / 13  # the default pack's share of generated actions in its scripted turns
    abuse_interval_s: float = 14 * MINUTE  # the stranger's generated turn, around the clock
    burst_s: float = 60.0  # the stranger's daily burst at the turn route's throttles
    open_hours: Mapping[int, tuple[float, float]] = field(
        default_factory=lambda: dict.fromkeys(range(5), (9 * HOUR, 17 * HOUR))
    )  # weekday (0 Monday) -> opening and closing, seconds from midnight, desk time
    time_zone: str = "Europe/London"


def pack_traffic(pack_dir: Path | None = None) -> Traffic:
    """The traffic of a desk: its pack's opening hours and time zone, and its scripted turns' share of
    generated actions (Riverton: 8 of 13)."""
    from dialogue.pack import default_pack_dir, load_pack, read_scripted_turns

    folder = pack_dir or default_pack_dir()
    pack = load_pack(folder)
    hours = pack.spec.hours
    open_hours: dict[int, tuple[float, float]] = {}
    if hours is not None:
        for day, (opens, closes) in hours.open.items():
            open_hours[DAY_NAMES.index(str(day))] = (_clock_seconds(str(opens)), _clock_seconds(str(closes)))
    else:
        open_hours = dict.fromkeys(range(5), (9 * HOUR, 17 * HOUR))
    share = Traffic.generated_share
    scripted = folder / "scripted_turns.csv"
    if scripted.is_file():
        turns = read_scripted_turns(scripted, pack.frame)
        actions = [turn.expected_action for turn in turns if turn.expected_action is not None]
        if actions:
            share = sum(1 for action in actions if action.uses_model) / len(actions)
    return Traffic(
        generated_share=share, open_hours=open_hours, time_zone=hours.time_zone if hours else "Europe/London"
    )


def _clock_seconds(text: str) -> float:
    hours, minutes = text.split(":")[:2]
    return int(hours) * HOUR + int(minutes) * MINUTE


@dataclass(frozen=True)
class WakeCall:
    """The dispatch function's wake call (dialogue.aws.ecs.EcsServiceWaker)."""

    remember_for_s: float
    respects_max: bool = False  # False: UpdateService(desiredCount=1) whatever the scalable target says
    # False: no wake call at all, as for desks on another stack's realizer (SharedRealizerQueueArn: the
    # template gives their dispatch function no REALIZER_CLUSTER); the realizer's own scaling wakes it.
    calls: bool = True

    @staticmethod
    def today() -> WakeCall:
        """As the code makes it: since issue 42 it reads the scalable target's maximum and wakes nothing at
        0 (RESPECTS_SCALABLE_TARGET_MAX)."""
        from dialogue.aws.ecs import REMEMBER_WANTED_FOR, RESPECTS_SCALABLE_TARGET_MAX

        return WakeCall(remember_for_s=REMEMBER_WANTED_FOR.total_seconds(), respects_max=RESPECTS_SCALABLE_TARGET_MAX)

    @staticmethod
    def none() -> WakeCall:
        """Desks on a shared realizer: none of them makes the wake call, so none sends a cold deadline."""
        return WakeCall(remember_for_s=0.0, calls=False)

    @staticmethod
    def before_issue_42() -> WakeCall:
        """As issue 42 found it: the target's maximum ignored."""
        from dialogue.aws.ecs import REMEMBER_WANTED_FOR

        return WakeCall(remember_for_s=REMEMBER_WANTED_FOR.total_seconds(), respects_max=False)


# --- the simulation -------------------------------------------------------------------------------------


@dataclass(eq=False)
class Turn:
    at: float
    desk: int
    generated: bool
    deadline: float
    follow_ups: int = 0  # turns still to come in its conversation
    worded_at: float | None = None
    final_at: float | None = None
    cold: bool = False  # it found the realizer cold: its fallback came in seconds


@dataclass(eq=False)
class Job:
    turn: Turn
    sent_at: float
    visible_at: float
    in_flight: bool = False
    gone: bool = False


@dataclass(eq=False)
class Instance:
    number: int
    kind: str
    launched_at: float
    ready: bool = False
    task: Task | None = None
    cached: bool = False
    ended_at: float | None = None
    empty_since: float | None = None


@dataclass(eq=False)
class Task:
    number: int
    state: str = "waiting"  # waiting (no instance), pulling, loading, ready, stopped
    instance: Instance | None = None
    batch: list[Job] = field(default_factory=list)
    busy: bool = False
    stopping: bool = False
    epoch: int = 0  # bumped when its state changes, so stale events do nothing


@dataclass
class RealizerRun:
    """One realizer service's simulation: what it did, for `FleetResult`."""

    turns: list[Turn] = field(default_factory=list)
    instances: list[Instance] = field(default_factory=list)
    cold_starts: int = 0
    scale_ins: list[float] = field(default_factory=list)
    alarm_mails: int = 0
    switched_off: list[float] = field(default_factory=list)  # when an alarm turned the off switch


@dataclass(eq=False)
class RealizerSim:
    """One realizer service, its queue, its alarms and policies, and the turns of the desks it serves."""

    config: FleetConfig
    timings: Timings
    wake_call: WakeCall
    rng: random.Random
    _: KW_ONLY
    end_s: float
    instance_type: str
    generated_share: float
    zone: str
    healthy: bool = True

    def __post_init__(self) -> None:
        config, rng = self.config, self.rng
        self.now = 0.0
        self._events: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._sequence = 0
        self.run = RealizerRun()
        # the queue
        self.queue: list[Job] = []  # visible jobs, oldest first
        self.in_flight: set[Job] = set()
        self.last_touched = -math.inf
        self.metrics_from = 0.0  # SQS publishes from here (after a resume)
        self.counters = dict.fromkeys(("sent", "received", "deleted", "empty_receives", "woken", "dispatched"), 0.0)
        # ECS and Application Auto Scaling
        self.desired = 0
        self.min_capacity = config.min_tasks
        self.max_capacity = config.max_tasks
        self.tasks: list[Task] = []  # not stopped
        self.live: list[Instance] = []  # not ended
        self.task_count = 0
        self.idle_workers: list[Task] = []
        self.wanted_until = -math.inf
        self.remembered_cold = False
        self.policy_acted: dict[str, float] = {}
        # CloudWatch
        self.sample_offset = rng.uniform(5.0, 55.0)
        self.minutes: list[dict[str, tuple[float, float, float, float] | None]] = []
        self.gauge_range: dict[str, list[float]] = {}
        self.alarm_state = {alarm.name: "OK" for alarm in config.alarms}
        self.tracking_history: dict[str, list[Value]] = {policy.name: [] for policy in config.tracking}
        self.period_cache: dict[tuple[str, int], Value] = {}
        self.expressions = {
            query.expression: Expression(query.expression)
            for queries in [*(a.queries for a in config.alarms), *(t.queries for t in config.tracking)]
            for query in queries
            if query.expression
        }
        self._reset_gauges()

    # --- events ---

    def at(self, when: float, action: Callable[..., None], *args: Any) -> None:
        self._sequence += 1
        heapq.heappush(self._events, (when, self._sequence, action, args))

    def simulate(self, until: float) -> RealizerRun:
        self.at(self.sample_offset, self._minute)
        self._last_schedule_before_start()
        if self.min_capacity > 0:  # registering the scalable target raises the service to its minimum
            self._set_desired(self.min_capacity, "registered")
        for scheduled in self.config.scheduled:
            self._schedule_action(scheduled)
        while self._events and self._events[0][0] <= until:
            when, _, action, args = heapq.heappop(self._events)
            self.now = when
            action(*args)
        self.now = until
        for instance in self.run.instances:
            if instance.ended_at is None:
                instance.ended_at = min(until, self.end_s)
        return self.run

    # --- traffic ---

    def add_turn(self, when: float, desk: int, generated: bool, follow_ups: int = 0) -> None:
        self.at(when, self._turn, desk, generated, follow_ups)

    def _turn(self, desk: int, generated: bool, follow_ups: int) -> None:
        turn = Turn(self.now, desk, generated, self.now + self.config.reply_deadline_s, follow_ups)
        self.run.turns.append(turn)
        if not generated:
            self._final(turn, self.now + 0.3)
            return
        self.at(self.now + self.timings.dispatch_s, self._dispatch, turn)
        self.at(turn.deadline, self._deadline, turn)

    def _final(self, turn: Turn, when: float) -> None:
        turn.final_at = when
        if turn.follow_ups > 0 and when < self.end_s:
            think = self.rng.uniform(*self.timings.think_s)
            generated = self.rng.random() < self.generated_share
            self.add_turn(when + think, turn.desk, generated, turn.follow_ups - 1)

    def _deadline(self, turn: Turn) -> None:
        if turn.final_at is None:
            self._final(turn, self.now)  # the fallback

    def _dispatch(self, turn: Turn) -> None:
        # The dispatch function wakes as it sends (functions/dispatch_turn): a cold realizer gets the turn a
        # second deadline, COLD_FALLBACK_SECONDS after it, where the template sets one.
        cold = self._wake()
        if cold and self.config.cold_fallback_s is not None:
            turn.cold = True
            due = min(turn.deadline, turn.at + self.config.cold_fallback_s)
            if due < turn.deadline:
                turn.deadline = due
                self.at(max(self.now, due), self._deadline, turn)
        job = Job(turn, self.now, self.now)
        self.queue.append(job)
        self.counters["sent"] += 1
        self.counters["dispatched"] += 1
        self._touch_queue()
        self._hand_to_idle_worker()
        self._gauges()

    def _wake(self) -> bool:
        """The wake call; whether it found the realizer cold (woken, off, or no task running: ECS's
        runningCount counts a task loading its model), remembered as long as "wanted" is."""
        if not self.wake_call.calls:
            return False
        if self.now < self.wanted_until:
            return self.remembered_cold
        running = sum(1 for t in self.tasks if t.state in ("loading", "ready") and not t.stopping)
        cold = running < 1
        if self.desired < 1:
            cold = True
            if not (self.wake_call.respects_max and self.max_capacity < 1):
                self.desired = 1  # UpdateService
                self.counters["woken"] += 1
                self._reconcile()
        self.wanted_until = self.now + self.wake_call.remember_for_s
        self.remembered_cold = cold
        return cold

    # --- the queue ---

    def _touch_queue(self) -> None:
        if self.now - self.last_touched >= self.timings.queue_inactive_s and not self._has_messages():
            self.metrics_from = self.now + self.rng.uniform(*self.timings.metrics_resume_s)
        self.last_touched = self.now

    def _has_messages(self) -> bool:
        return bool(self.queue or self.in_flight)

    def _expire(self) -> None:
        horizon = self.now - self.config.retention_s
        while self.queue and self.queue[0].sent_at <= horizon:
            self.queue.pop(0).gone = True

    def _receive(self, task: Task, limit: int) -> list[Job]:
        self._expire()
        taken = self.queue[:limit]
        del self.queue[:limit]
        for job in taken:
            job.in_flight = True
            self.in_flight.add(job)
        self.counters["received"] += len(taken)
        self._touch_queue()
        return taken

    def _hand_to_idle_worker(self) -> None:
        while self.idle_workers and self.queue:
            task = self.idle_workers.pop(0)
            if task.state == "ready" and not task.busy and not task.stopping:
                self._poll(task)

    # --- the worker ---

    def _poll(self, task: Task) -> None:
        if task.stopping:
            self._stop(task)
            return
        received = self._receive(task, min(10, self.timings.batch_size))
        if not received:
            if task not in self.idle_workers:
                self.idle_workers.append(task)
            return
        task.busy = True
        task.batch = received
        opened = self.now
        self.at(self.now + self.timings.fill_wait_s, self._top_up, task, task.epoch, opened)
        self._gauges()

    def _top_up(self, task: Task, epoch: int, opened: float) -> None:
        if epoch != task.epoch:
            return
        if task.stopping:  # a stop while collecting hands the batch back (visibility 0)
            for job in task.batch:
                self.in_flight.discard(job)
                job.in_flight = False
            self.queue[:0] = [job for job in task.batch if not job.gone]
            task.batch = []
            self._stop(task)
            self._hand_to_idle_worker()
            return
        room = self.timings.batch_size - len(task.batch)
        more = self._receive(task, min(10, room)) if room > 0 else []
        if room > 0 and not more:
            self.counters["empty_receives"] += 1
        task.batch.extend(more)
        if more and self.now + self.timings.fill_wait_s <= opened + self.timings.max_batch_wait_s + 1e-9:
            self.at(self.now + self.timings.fill_wait_s, self._top_up, task, epoch, opened)
            return
        fresh = [job for job in task.batch if self.now - job.turn.at < self.config.reply_deadline_s]
        if fresh:
            duration = max(self.rng.uniform(*self.timings.job_s), len(fresh) / self.timings.replies_per_s)
        else:
            duration = 0.05  # stale jobs are dropped unrun
        self.at(self.now + duration, self._realized, task, epoch, fresh)
        self._gauges()

    def _realized(self, task: Task, epoch: int, fresh: list[Job]) -> None:
        if epoch != task.epoch:
            return
        for job in task.batch:
            self.in_flight.discard(job)
            job.in_flight = False
            job.gone = True
        self.counters["deleted"] += len(task.batch)
        for job in fresh:
            stored = self.now + self.timings.screen_s
            turn = job.turn
            if stored < turn.deadline and turn.final_at is None:
                turn.worded_at = stored
                self.at(stored, self._worded, turn)
        task.batch = []
        task.busy = False
        self._gauges()
        self._poll(task)

    def _worded(self, turn: Turn) -> None:
        if turn.final_at is None:
            self._final(turn, self.now)

    # --- ECS ---

    def _active(self) -> list[Task]:
        return [task for task in self.tasks if task.state != "stopped" and not task.stopping]

    def _reconcile(self) -> None:
        active = self._active()
        while len(active) < self.desired:
            self.task_count += 1
            task = Task(self.task_count)
            if not any(other.state in ("loading", "ready") for other in active):
                self.run.cold_starts += 1
            self.tasks.append(task)
            active.append(task)
            self._place(task)
        order = {"waiting": 0, "pulling": 1, "loading": 2, "ready": 3}
        while len(active) > self.desired:
            victim = min(reversed(active), key=lambda task: (order[task.state], task.busy))
            active.remove(victim)
            victim.stopping = True
            if victim.state != "ready" or not victim.busy:
                self._stop(victim)
        self._gauges()

    def _place(self, task: Task) -> None:
        empty = [i for i in self.live if i.ready and i.task is None]
        if empty:
            self._start_on(task, empty[0])
            return
        running = self.live
        waiting = [t for t in self.tasks if t.state == "waiting" and not t.stopping]
        unready = [i for i in running if not i.ready]
        if len(unready) < len(waiting) and len(running) < self.config.max_instances:
            instance = Instance(len(self.run.instances) + 1, self.instance_type, self.now)
            self.run.instances.append(instance)
            self.live.append(instance)
            up = self.rng.uniform(*self.timings.launch_s) + self.rng.uniform(*self.timings.register_s)
            self.at(self.now + up, self._instance_ready, instance)

    def _instance_ready(self, instance: Instance) -> None:
        instance.ready = True
        waiting = [t for t in self.tasks if t.state == "waiting" and not t.stopping]
        if waiting:
            self._start_on(waiting[0], instance)
        else:
            self._empty(instance)
        self._gauges()

    def _start_on(self, task: Task, instance: Instance) -> None:
        instance.task = task
        instance.empty_since = None
        task.instance = instance
        task.epoch += 1
        if instance.cached:
            task.state = "loading"
            self._load(task)
        else:
            task.state = "pulling"
            self.at(self.now + self.rng.uniform(*self.timings.pull_s), self._pulled, task, task.epoch)
        self._gauges()

    def _pulled(self, task: Task, epoch: int) -> None:
        if epoch != task.epoch or task.instance is None:
            return
        task.instance.cached = True
        task.state = "loading"
        task.epoch += 1
        self._load(task)
        self._gauges()

    def _load(self, task: Task) -> None:
        if self.healthy:
            self.at(self.now + self.rng.uniform(*self.timings.load_s), self._loaded, task, task.epoch)
        else:  # the load hangs: the health check fails and ECS replaces the task
            self.at(self.now + self.config.unhealthy_replaced_after_s, self._unhealthy, task, task.epoch)

    def _unhealthy(self, task: Task, epoch: int) -> None:
        if epoch != task.epoch or task.state != "loading":
            return
        self._stop(task)
        self.at(self.now + self.timings.restart_s, self._reconcile)

    def _loaded(self, task: Task, epoch: int) -> None:
        if epoch != task.epoch:
            return
        task.state = "ready"
        task.epoch += 1
        self._gauges()
        self._poll(task)

    def _stop(self, task: Task) -> None:
        if task.state == "stopped":
            return
        task.state = "stopped"
        task.epoch += 1
        self.tasks.remove(task)
        if task in self.idle_workers:
            self.idle_workers.remove(task)
        if task.instance is not None:
            task.instance.task = None
            self._empty(task.instance)
        self._gauges()
        waiting = [t for t in self.tasks if t.state == "waiting" and not t.stopping]
        if waiting:  # a task no instance had room for takes the freed one
            empty = [i for i in self.live if i.ready and i.task is None]
            if empty:
                self._start_on(waiting[0], empty[0])

    def _empty(self, instance: Instance) -> None:
        instance.empty_since = self.now
        self.at(self.now + self.timings.empty_instance_s, self._end_if_empty, instance, self.now)

    def _end_if_empty(self, instance: Instance, since: float) -> None:
        if instance.task is None and instance.empty_since == since and instance.ended_at is None:
            instance.ended_at = self.now
            self.live.remove(instance)
            self._gauges()

    # --- Application Auto Scaling ---

    def _set_desired(self, wanted: int, cause: str) -> None:
        wanted = max(self.min_capacity, min(self.max_capacity, wanted))
        if wanted == self.desired:
            return
        if wanted < self.desired and any(t.state in ("loading", "ready", "pulling") for t in self._active()):
            self.run.scale_ins.append(self.now)
        self.desired = wanted
        self._reconcile()

    def _switch_off(self) -> None:
        """The realizer switch function: the target's minimum and maximum at 0, the desired count at 0."""
        self.run.switched_off.append(self.now)
        self.min_capacity = self.max_capacity = 0
        self._set_desired(0, "off switch")

    def _last_schedule_before_start(self) -> None:
        """The range the last scheduled action of the week before day 0 left (Friday's closing, say), so a
        month starting on a Monday at midnight starts as a deployed desk would."""
        latest: tuple[float, ScheduledAction] | None = None
        for action in self.config.scheduled:
            offset = _zone_offset_s(action.time_zone, self.zone)
            for day in range(-7, 0):
                when = day * DAY + action.hour * HOUR + action.minute * MINUTE + offset
                if day % 7 in action.weekdays and when < 0 and (latest is None or when > latest[0]):
                    latest = (when, action)
        if latest is not None:
            _, action = latest
            if action.min_capacity is not None:
                self.min_capacity = action.min_capacity
            if action.max_capacity is not None:
                self.max_capacity = action.max_capacity

    def _schedule_action(self, action: ScheduledAction) -> None:
        offset = _zone_offset_s(action.time_zone, self.zone)
        for day in range(int(self.end_s // DAY) + 2):
            local_day = (day) % 7
            if local_day not in action.weekdays:
                continue
            when = day * DAY + action.hour * HOUR + action.minute * MINUTE + offset
            if 0 <= when <= self.end_s:
                self.at(when, self._scheduled, action)

    def _scheduled(self, action: ScheduledAction) -> None:
        if action.min_capacity is not None:
            self.min_capacity = action.min_capacity
        if action.max_capacity is not None:
            self.max_capacity = action.max_capacity
        self._set_desired(self.desired, action.name)

    # --- CloudWatch ---

    def _reset_gauges(self) -> None:
        self.gauge_range = {name: [value, value] for name, value in self._gauge_values().items()}

    def _gauge_values(self) -> dict[str, float]:
        running = sum(1 for t in self.tasks if t.state in ("loading", "ready"))
        pending = sum(1 for t in self.tasks if t.state in ("waiting", "pulling"))
        live = self.live
        return {
            "ecs.running": float(running),
            "ecs.pending": float(pending),
            "ecs.desired": float(self.desired),
            "asg.in_service": float(sum(1 for i in live if i.ready)),
            "asg.pending": float(sum(1 for i in live if not i.ready)),
            "asg.total": float(len(live)),
            "asg.desired": float(len(live)),
        }

    def _gauges(self) -> None:
        for name, value in self._gauge_values().items():
            low_high = self.gauge_range[name]
            low_high[0] = min(low_high[0], value)
            low_high[1] = max(low_high[1], value)

    def _minute(self) -> None:
        """Once a minute, at the sample instant: SQS's point samples and the minute's counters, Container
        Insights' and the group's counts, then every alarm and tracking policy evaluated."""
        self._expire()
        index = len(self.minutes)
        record: dict[str, tuple[float, float, float, float] | None] = {}
        if self.tasks and any(t.state == "ready" for t in self.tasks):
            self.last_touched = self.now  # a worker's long polls keep the queue active
        # An idle worker's long polls (20 s each) come back empty about three times a minute.
        self.counters["empty_receives"] += sum(1 for task in self.idle_workers if task.state == "ready") * 3
        active = self._has_messages() or self.now - self.last_touched < self.timings.queue_inactive_s
        publish_sqs = active and self.now >= self.metrics_from
        oldest = self.now - min((j.sent_at for j in [*self.queue, *self.in_flight]), default=self.now)
        sqs = {
            "sqs.visible": float(len(self.queue)),
            "sqs.not_visible": float(len(self.in_flight)),
            "sqs.delayed": 0.0,
            "sqs.oldest_age": oldest,
            "sqs.sent": self.counters["sent"],
            "sqs.received": self.counters["received"],
            "sqs.deleted": self.counters["deleted"],
            "sqs.empty_receives": self.counters["empty_receives"],
        }
        for name, value in sqs.items():
            record[name] = (value, 1.0, value, value) if publish_sqs else None
        current = self._gauge_values()
        service_seen = self.gauge_range["ecs.desired"][1] > 0 or self.gauge_range["ecs.running"][1] > 0
        for name, (low, high) in self.gauge_range.items():
            if name.startswith("ecs.") and not service_seen:
                record[name] = None
            else:
                record[name] = ((low + high) / 2, 1.0, low, high)
        for counter, name in (("woken", "app.realizer_woken"), ("dispatched", "app.turns_dispatched")):
            value = self.counters[counter]
            record[name] = (value, 1.0, value, value) if value else None
        record["app.realizer_wake_failed"] = None
        self.minutes.append(record)
        for key in self.counters:
            self.counters[key] = 0.0
        self.gauge_range = {name: [value, value] for name, value in current.items()}
        for alarm in self.config.alarms:
            self._evaluate(alarm, index)
        for policy in self.config.tracking:
            self._track(policy, index)
        if self.now + MINUTE <= self.end_s:
            self.at(self.now + MINUTE, self._minute)

    def _statistic(self, query: Query, period: int) -> Value:
        span = max(1, query.period_s // 60)
        points = [
            point
            for point in (self.minutes[m].get(query.series) for m in range(period * span, (period + 1) * span))
            if point is not None
        ]
        if not points:
            return None
        if query.stat == "Sum":
            return sum(p[0] for p in points)
        if query.stat == "Maximum":
            return max(p[3] for p in points)
        if query.stat == "Minimum":
            return min(p[2] for p in points)
        if query.stat == "SampleCount":
            return sum(p[1] for p in points)
        return sum(p[0] for p in points) / sum(p[1] for p in points)  # Average

    def _datapoint(self, queries: Sequence[Query], period: int) -> Value:
        values: dict[str, Value] = {}
        for query in queries:
            if query.series:
                values[query.id] = self._statistic(query, period)
        for query in queries:
            if query.expression:
                values[query.id] = self.expressions[query.expression](lambda name: values.get(name))
        returned = [query for query in queries if query.returned]
        return values.get(returned[-1].id) if returned else None

    def _evaluate(self, alarm: AlarmSpec, minute: int) -> None:
        """CloudWatch's evaluation of one alarm after `minute`: its state when a period has just closed, and
        its scaling actions every minute it is in ALARM."""
        span = max(1, alarm.period_s // 60)
        last = (minute + 1) // span - 1  # the last whole period
        if last < 0:
            return
        if (minute + 1) % span == 0:
            breaching: list[bool] = []
            for period in range(max(0, last - alarm.evaluation_periods + 1), last + 1):
                key = (alarm.name, period)
                if key not in self.period_cache:
                    self.period_cache[key] = self._datapoint(alarm.queries, period)
                value = self.period_cache[key]
                if value is not None:
                    breaching.append(COMPARISONS[alarm.comparison](value, alarm.threshold))
                elif alarm.treat_missing in ("breaching", "notBreaching"):
                    breaching.append(alarm.treat_missing == "breaching")
            state = self.alarm_state[alarm.name]
            if breaching:
                state = "ALARM" if sum(breaching) >= alarm.datapoints else "OK"
            elif alarm.treat_missing == "missing":
                state = "INSUFFICIENT_DATA"
            if state != self.alarm_state[alarm.name] and alarm.notifies:
                self.run.alarm_mails += 1
            if state == "ALARM" and self.alarm_state[alarm.name] != "ALARM" and alarm.switches_off:
                self._switch_off()
            self.alarm_state[alarm.name] = state
        if self.alarm_state[alarm.name] == "ALARM":
            value = self.period_cache.get((alarm.name, last))
            for name in alarm.policies:
                self._step(self.config.step_policies[name], (value or 0.0) - alarm.threshold)

    def _step(self, policy: StepPolicy, excess: float) -> None:
        if self.now - self.policy_acted.get(policy.name, -math.inf) < policy.cooldown_s:
            return
        matching = [
            adjustment
            for lower, upper, adjustment in policy.steps
            if (lower is None or excess >= lower) and (upper is None or excess <= upper)
        ]
        if not matching:
            return
        adjustment = matching[0]
        if policy.adjustment_type == "ExactCapacity":
            wanted = int(adjustment)
        elif policy.adjustment_type == "ChangeInCapacity":
            wanted = self.desired + int(adjustment)
        else:  # PercentChangeInCapacity
            wanted = self.desired + int(math.copysign(math.ceil(abs(self.desired * adjustment / 100)), adjustment))
        before = self.desired
        self._set_desired(wanted, policy.name)
        if self.desired != before:
            self.policy_acted[policy.name] = self.now

    def _track(self, policy: TrackingPolicy, minute: int) -> None:
        history = self.tracking_history[policy.name]
        history.append(self._datapoint(policy.queries, minute))
        recent = history[-3:]
        acted = self.policy_acted.get(policy.name, -math.inf)
        if len(recent) == 3 and all(v is not None and v > policy.target for v in recent):
            value = recent[-1] or 0.0
            wanted = math.ceil(max(self.desired, 1) * value / policy.target)
            if wanted > self.desired and self.now - acted >= policy.scale_out_cooldown_s:
                self._set_desired(wanted, policy.name)
                self.policy_acted[policy.name] = self.now
        low = history[-15:]
        if policy.disable_scale_in or len(low) < 15:
            return
        if all(v is not None and v < 0.9 * policy.target for v in low):
            value = low[-1] or 0.0
            wanted = math.ceil(self.desired * value / policy.target)
            if wanted < self.desired and self.now - acted >= policy.scale_in_cooldown_s:
                self._set_desired(wanted, policy.name)
                self.policy_acted[policy.name] = self.now


def _zone_offset_s(schedule_zone: str, desk_zone: str) -> float:
    """Seconds to add to a schedule's local time to get the desk's local time (at the calendar's start)."""
    if schedule_zone == desk_zone:
        return 0.0

    def offset(zone: str) -> float:
        delta = START.replace(tzinfo=ZoneInfo(zone)).utcoffset() or timedelta(0)
        return delta.total_seconds()

    return offset(desk_zone) - offset(schedule_zone)


# --- scenarios ------------------------------------------------------------------------------------------

SCENARIOS = ("desk", "abuse", "unhealthy")
FIELDS = (
    "scenario",
    "desks",
    "days",
    "generated_turns",
    "worded_share",
    "wait_p50_s",
    "wait_p95_s",
    "cold_starts",
    "mid_day_scale_ins",
    "gpu_hours",
    "desk_hours",
    "cost_usd",
    "cost_per_worded_reply_usd",
)


@dataclass(frozen=True)
class FleetResult:
    scenario: str
    desks: int
    days: int
    generated_turns: int
    worded_share: float
    wait_p50_s: float | None
    wait_p95_s: float | None
    cold_starts: int
    mid_day_scale_ins: int
    gpu_hours: float
    desk_hours: float
    cost_usd: float
    cost_per_worded_reply_usd: float | None
    # Beyond the JSON record: the issue's goals' other figures, printed under the table.
    worded_share_in_desk_hours: float = 0.0
    gpu_hours_outside_desk_hours: float = 0.0
    scale_ins: int = 0
    alarm_mails: int = 0  # state changes of the alarms that tell the topic (the GPU-hours alarm among them)
    switched_off: int = 0  # times an alarm turned the off switch
    gpu_hours_most_in_a_day: float = 0.0  # the most GPU instance hours of one calendar day
    cold_turns: int = 0  # generated turns that found the realizer cold (their fallback in seconds)
    at_rest_usd: float = 0.0  # the stacks' cost at rest over the run's days (fleet_at_rest), in cost_usd

    def record(self) -> dict[str, Any]:
        """The JSON object: exactly FIELDS."""
        return {name: getattr(self, name) for name in FIELDS}


def _day_profile(rng: random.Random, opens: float, closes: float) -> float:
    """A conversation's start in the day: a morning and an afternoon peak over a steady base."""
    length = closes - opens
    while True:
        draw = rng.random()
        if draw < 0.2:
            when = rng.uniform(opens, closes)
        elif draw < 0.6:
            when = rng.gauss(opens + 0.25 * length, 0.08 * length)  # the morning peak (11:00 on 09-17)
        else:
            when = rng.gauss(opens + 0.68 * length, 0.10 * length)  # the afternoon peak (14:26 on 09-17)
        if opens <= when < closes - 5 * MINUTE:
            return when


def _percentile(values: Sequence[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def simulate(
    scenario: str = "desk",
    *,
    desks: int = 1,
    days: int = 30,
    seed: int = 42,
    template: Mapping[str, Any] | None = None,
    parameters: Mapping[str, str] | None = None,
    timings: Timings | None = None,
    traffic: Traffic | None = None,
    wake: WakeCall | None = None,
    shared_realizer: bool = False,
    instance_type: str | None = None,
) -> FleetResult:
    """One scenario's figures: the desks' traffic (and, for "abuse", a stranger's) through the realizers
    the template deploys, `days` days from a Monday."""
    if scenario not in SCENARIOS:
        raise FleetError(f"choose a scenario of {', '.join(SCENARIOS)}")
    if desks < 1 or days < 1:
        raise FleetError("give at least one desk and one day")
    template = template if template is not None else load_template()
    config = read_config(template, parameters)
    rest = fleet_at_rest(template, dict(parameters or {}), desks, shared_realizer=shared_realizer)
    timings = timings or Timings()
    traffic = traffic or pack_traffic()
    # Desks on a shared realizer make no wake call of their own (the template names no service to them).
    wake = wake or (WakeCall.none() if shared_realizer else WakeCall.today())
    kind = instance_type or config.instance_types[0]
    if kind not in config.instance_types:
        raise FleetError(f"{kind} is not among the template's GPU types ({', '.join(config.instance_types)})")
    if kind not in GPU_PRICES_USD_PER_HOUR:
        raise FleetError(f"no price for {kind}: add it to GPU_PRICES_USD_PER_HOUR")
    end = days * DAY
    groups = [list(range(desks))] if shared_realizer else [[desk] for desk in range(desks)]
    runs: list[RealizerRun] = []
    for number, group in enumerate(groups):
        rng = random.Random(f"{seed}:{scenario}:{number}")
        sim = RealizerSim(
            config,
            timings,
            wake,
            rng,
            end_s=end,
            instance_type=kind,
            generated_share=traffic.generated_share,
            zone=traffic.time_zone,
            healthy=scenario != "unhealthy",
        )
        for day in range(days):
            window = traffic.open_hours.get(day % 7)
            if window is None:
                continue
            for desk in group:
                for _ in range(traffic.conversations):
                    start = day * DAY + _day_profile(rng, *window)
                    sim.add_turn(start, desk, rng.random() < traffic.generated_share, traffic.turns - 1)
        if scenario == "abuse":
            when = rng.uniform(0, traffic.abuse_interval_s)
            while when < end:
                sim.add_turn(when, -1, True)
                when += traffic.abuse_interval_s
            for day in range(days):
                start = day * DAY + rng.uniform(0, DAY - traffic.burst_s)
                count = config.turn_burst + int(config.turn_rate_per_s * traffic.burst_s)
                for index in range(count):
                    offset = 0.0 if index < config.turn_burst else (index - config.turn_burst) / config.turn_rate_per_s
                    sim.add_turn(start + offset, -1, True)
        runs.append(sim.simulate(end + 2 * config.reply_deadline_s + timings.screen_s))
    at_rest_usd = sum(count * cost.total for _, count, cost in rest) * days / DAYS_PER_MONTH
    return _figures(scenario, desks, days, runs, traffic, kind, end, at_rest_usd)


def _figures(
    scenario: str,
    desks: int,
    days: int,
    runs: Sequence[RealizerRun],
    traffic: Traffic,
    kind: str,
    end: float,
    at_rest_usd: float,
) -> FleetResult:
    generated = [turn for run in runs for turn in run.turns if turn.generated and turn.at < end]
    worded = [turn for turn in generated if turn.worded_at is not None]
    waits = [(turn.worded_at or 0.0) - turn.at for turn in worded]
    gpu_hours = sum(
        (min(instance.ended_at or end, end) - instance.launched_at) / HOUR
        for run in runs
        for instance in run.instances
        if instance.launched_at < end
    )
    desk_hours = sum(
        (window[1] - window[0]) / HOUR for day in range(days) if (window := traffic.open_hours.get(day % 7))
    )
    mid_day = 0
    for run in runs:
        times = sorted(turn.at for turn in run.turns if turn.generated)
        for when in run.scale_ins:
            day = int(when // DAY)
            window = traffic.open_hours.get(day % 7)
            if window is None:
                continue
            opens, closes = day * DAY + window[0], day * DAY + window[1]
            later = bisect.bisect_right(times, when)
            if opens <= when < closes and later < len(times) and times[later] < closes:
                mid_day += 1
    windows = [
        (day * DAY + window[0], day * DAY + window[1])
        for day in range(days)
        if (window := traffic.open_hours.get(day % 7))
    ]
    inside = [turn for turn in generated if _inside(turn.at, windows)]
    outside_hours = 0.0
    for run in runs:
        for instance in run.instances:
            start, stop = instance.launched_at, min(instance.ended_at or end, end)
            overlap = sum(max(0.0, min(stop, closes) - max(start, opens)) for opens, closes in windows)
            outside_hours += max(0.0, stop - start - overlap) / HOUR
    all_turns = sum(1 for run in runs for turn in run.turns if turn.at < end)
    price = GPU_PRICES_USD_PER_HOUR[kind] + GPU_EXTRAS_USD_PER_HOUR
    cost = gpu_hours * price + all_turns * SERVERLESS_USD_PER_TURN + at_rest_usd
    return FleetResult(
        scenario=scenario,
        desks=desks,
        days=days,
        generated_turns=len(generated),
        worded_share=round(len(worded) / len(generated), 4) if generated else 0.0,
        wait_p50_s=None if (p50 := _percentile(waits, 0.5)) is None else round(p50, 1),
        wait_p95_s=None if (p95 := _percentile(waits, 0.95)) is None else round(p95, 1),
        cold_starts=sum(run.cold_starts for run in runs),
        mid_day_scale_ins=mid_day,
        gpu_hours=round(gpu_hours, 1),
        desk_hours=round(desk_hours, 1),
        cost_usd=round(cost, 2),
        cost_per_worded_reply_usd=round(cost / len(worded), 4) if worded else None,
        worded_share_in_desk_hours=round(sum(1 for t in inside if t.worded_at is not None) / len(inside), 4)
        if inside
        else 0.0,
        gpu_hours_outside_desk_hours=round(outside_hours, 1),
        scale_ins=sum(len(run.scale_ins) for run in runs),
        alarm_mails=sum(run.alarm_mails for run in runs),
        switched_off=sum(len(run.switched_off) for run in runs),
        gpu_hours_most_in_a_day=round(
            max(
                (
                    sum(
                        max(0.0, min(min(i.ended_at or end, end), (day + 1) * DAY) - max(i.launched_at, day * DAY))
                        for run in runs
                        for i in run.instances
                    )
                    / HOUR
                    for day in range(days)
                ),
                default=0.0,
            ),
            1,
        ),
        cold_turns=sum(1 for turn in generated if turn.cold),
        at_rest_usd=round(at_rest_usd, 2),
    )


def _inside(when: float, windows: Sequence[tuple[float, float]]) -> bool:
    day = int(when // DAY)
    return any(opens <= when < closes for opens, closes in windows if int(opens // DAY) == day)


# --- the command ------------------------------------------------------------------------------------------


def table(results: Iterable[FleetResult]) -> str:
    headers = ["scenario", "desks", "days", "generated", "worded", "p50 s", "p95 s", "cold starts",
               "mid-day scale-ins", "GPU h", "desk h", "cost $", "$ / worded reply"]  # fmt: skip
    rows = [headers]
    for r in results:
        rows.append(
            [
                r.scenario,
                str(r.desks),
                str(r.days),
                str(r.generated_turns),
                f"{r.worded_share:.1%}",
                "-" if r.wait_p50_s is None else f"{r.wait_p50_s:.1f}",
                "-" if r.wait_p95_s is None else f"{r.wait_p95_s:.1f}",
                str(r.cold_starts),
                str(r.mid_day_scale_ins),
                f"{r.gpu_hours:.1f}",
                f"{r.desk_hours:.0f}",
                f"{r.cost_usd:.2f}",
                "-" if r.cost_per_worded_reply_usd is None else f"{r.cost_per_worded_reply_usd:.4f}",
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(headers))]
    lines = [
        "| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + " |" for row in rows
    ]
    lines.insert(1, "| " + " | ".join("-" * width for width in widths) + " |")
    return "\n".join(lines)


def desk_hours_parameters(traffic: Traffic, lead_s: float = 30 * MINUTE) -> dict[str, str]:
    """DeskOpensSchedule, DeskClosesSchedule and DeskTimezone for the pack's hours, as DEPLOY.md says to set
    them: opening `lead_s` early (a cold start), closing at the closing. The pack's open days must share
    one opening and one closing."""
    windows = set(traffic.open_hours.values())
    if len(windows) != 1:
        raise FleetError("--desk-hours needs one opening and closing time on every open day; give the schedules")
    ((opens, closes),) = windows
    days = ",".join(DAY_NAMES[day][:3].upper() for day in sorted(traffic.open_hours))
    start = opens - lead_s
    return {
        "DeskOpensSchedule": f"cron({int(start % HOUR // MINUTE)} {int(start // HOUR)} ? * {days} *)",
        "DeskClosesSchedule": f"cron({int(closes % HOUR // MINUTE)} {int(closes // HOUR)} ? * {days} *)",
        "DeskTimezone": traffic.time_zone,
    }


def parse_timings(texts: Sequence[str]) -> Timings:
    """`--timing NAME=SECONDS` or `NAME=LOW-HIGH` (seconds), for any field of Timings."""
    known = {item.name: item for item in fields(Timings)}
    changes: dict[str, Any] = {}
    for text in texts:
        name, value = _parameter(text)
        if name not in known:
            raise FleetError(f"no timing {name}; choose one of {', '.join(known)}")
        try:
            low, _, high = value.partition("-")
            numbers = (float(low), float(high or low))
        except ValueError:
            raise FleetError(f"{name}: give seconds, or LOW-HIGH seconds, not {value!r}") from None
        if numbers[0] < 0 or numbers[1] < numbers[0]:
            raise FleetError(f"{name}: give seconds from 0, low before high")
        default = getattr(Timings(), name)
        if isinstance(default, tuple):
            changes[name] = numbers
        elif isinstance(default, int):
            changes[name] = max(1, int(numbers[0]))
        else:
            changes[name] = numbers[0]
    return replace(Timings(), **changes)


def _parameter(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise ValueError(f"give NAME=VALUE, not {text!r}")
    return name, value


def run_command(
    *,
    scenarios: Sequence[str],
    desks: int,
    days: int,
    seed: int,
    as_json: bool,
    parameters: Sequence[str] = (),
    shared_realizer: bool = False,
    instance_type: str | None = None,
    template_path: Path = TEMPLATE,
    pack: Path | None = None,
    timing: Sequence[str] = (),
    conversations: int | None = None,
    generated_share: float | None = None,
    desk_hours: bool = False,
) -> str:
    template = load_template(template_path)
    overrides = dict(_parameter(text) for text in parameters)
    timings = parse_timings(timing)
    traffic = pack_traffic(pack)
    if desk_hours:
        overrides = {**desk_hours_parameters(traffic), **overrides}
        parameters = [*(f"{name}={value}" for name, value in desk_hours_parameters(traffic).items()), *parameters]
    if conversations is not None:
        if conversations < 0:
            raise FleetError("give a number of conversations from 0")
        traffic = replace(traffic, conversations=conversations)
    if generated_share is not None:
        if not 0 <= generated_share <= 1:
            raise FleetError("give a share of generated turns from 0 to 1")
        traffic = replace(traffic, generated_share=generated_share)
    results = [
        simulate(
            scenario,
            desks=desks,
            days=days,
            seed=seed,
            template=template,
            parameters=overrides,
            traffic=traffic,
            timings=timings,
            shared_realizer=shared_realizer,
            instance_type=instance_type,
        )
        for scenario in scenarios
    ]
    if as_json:
        return "\n".join(json.dumps(result.record()) for result in results)
    config = read_config(template, overrides)
    kind = instance_type or config.instance_types[0]
    wake = WakeCall.none() if shared_realizer else WakeCall.today()
    opening = ", ".join(
        f"{DAY_NAMES[day][:3]} {window[0] / HOUR:g}-{window[1] / HOUR:g} h"
        for day, window in sorted(traffic.open_hours.items())
    )
    lines = [
        table(results),
        "",
        *(
            f"{r.scenario}: {r.worded_share_in_desk_hours:.1%} of the generated turns inside desk hours worded; "
            f"{r.gpu_hours_outside_desk_hours:.1f} GPU hours outside desk hours, {r.gpu_hours_most_in_a_day:.1f} in "
            f"the day with most; scale-ins in all: {r.scale_ins}; mails from the alarm topic: {r.alarm_mails}; "
            f"off switch turned by an alarm: {r.switched_off}; turns that found the realizer cold (fallback in "
            f"seconds): {r.cold_turns}"
            for r in results
        ),
        "",
        f"{template_path.name}, as deployed with its defaults"
        + (f" and {', '.join(parameters)}" if parameters else "")
        + f"; seed {seed}; {'one shared realizer' if shared_realizer else 'a realizer per desk'}:",
        *(f"  {line}" for line in config.describe()),
        (
            f"  wake call (dialogue.aws.ecs): desired count 0 -> 1 at each job sent, 'wanted' remembered "
            f"{wake.remember_for_s:g} s, {'within' if wake.respects_max else 'ignoring'} the scalable target's maximum"
            if wake.calls
            else "  wake call: none (desks on a shared realizer; the realizer's own scaling wakes it)"
        ),
        f"  times: {timings.named()}",
        f"  traffic: {traffic.conversations} conversations of {traffic.turns} turns a desk an open day ({opening}, "
        f"{traffic.time_zone}), {traffic.generated_share:.0%} of turns generated; abuse: one generated turn every "
        f"{traffic.abuse_interval_s / 60:g} min around the clock and a daily {traffic.burst_s:g} s burst at the turn "
        f"route's {config.turn_rate_per_s:g}/s (burst {config.turn_burst})",
        f"  cost: {kind} at ${GPU_PRICES_USD_PER_HOUR[kind]}/h + ${GPU_EXTRAS_USD_PER_HOUR}/h volume and address "
        f"(us-east-1 on-demand, 2025), serverless ${SERVERLESS_USD_PER_TURN * 1000:g} per 1,000 turns, and at rest "
        "(docs/DEPLOY.md's prices, for the pieces the template gives each stack with these parameters):",
        *(
            f"    {what}{f' (x{count})' if count > 1 else ''}: {cost.describe()}"
            for what, count, cost in fleet_at_rest(template, overrides, desks, shared_realizer=shared_realizer)
        ),
    ]
    return "\n".join(lines)
