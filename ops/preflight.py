"""`make preflight`: check an AWS account and region, and this machine, before anything is created.

    python -m ops preflight [--region us-east-1] [--domain-prefix PREFIX] [--alarm-email ADDRESS]
                            [--gpu-instance-types A,B,C] [--fix]

One line per check, `ok`, `warn` or `FAIL`, one sentence, and for a warning or a failure what to do (a
command or a console step); exit 1 when any check fails. A warning is what no deploy needs but the desk
will (a quota to ask for now), or what preflight cannot know for sure; it does not fail the run. Nothing
is created, but with --fix the ECS service-linked role.

1. the region offers the one to three GPU instance types of the template's GpuInstanceTypes
   (ec2 DescribeInstanceTypeOfferings);
2. the vCPU quota "Running On-Demand G and VT instances" (L-DB2E81BA) holds at least one instance of
   the smallest of them (Service Quotas; DescribeInstanceTypes gives the vCPUs); below that it warns
   with the quota to ask for: no deploy needs it (the first makes no realizer, the second makes it at 0
   tasks), but no realizer task can start without it;
3. the Lambda concurrency quota: it fails only below what a deploy reserves (the template's reserved and
   provisioned concurrency, none today, plus the 100 Lambda keeps unreserved), and warns below the
   functions' busiest moment, estimated from the template (lambda_peak); a new account may have 10;
4. CloudFront: an account with no distribution yet may have to be verified by AWS before it can create
   one (a warning naming the step, before step 1 rolls back on it);
5. the ECS service-linked role AWSServiceRoleForECS exists (the GPU capacity provider needs it before
   CloudFormation creates it in parallel with the cluster); --fix creates it;
6. the staff sign-in domain prefix keeps Cognito's rules and is free in the region;
7. python3.12 and Docker answer on this machine;
8. the alarm and budget address (the template's AlarmEmail) is set.

The GPU types, the prefix's pattern and the other defaults are read from template.yaml's Parameters.
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ops.aws import AWS_ERRORS, aws_reason, report_failure, sentence, session_clients

TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"

GPU_QUOTA_CODE = "L-DB2E81BA"  # EC2: Running On-Demand G and VT instances, in vCPUs
LAMBDA_QUOTA_CODE = "L-B99A9384"  # Lambda: Concurrent executions
ECS_ROLE = "AWSServiceRoleForECS"
ECS_SERVICE = "ecs.amazonaws.com"
# The Auto Scaling group's overrides: the first type, and the second and third when given (the template's
# HasSecondGpuType and HasThirdGpuType).
GPU_TYPES_MOST = 3
DOMAIN_RESERVED_WORDS = ("aws", "amazon", "cognito")
DOMAIN_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$"  # when the template names none
EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
# The functions' busiest moment (lambda_peak), by Little's law: concurrent executions = invocations a
# second x seconds each. An HTTP API route is counted at its ThrottlingRateLimit (its steady ceiling; the
# burst above it is a bucket, not a rate) for WARM_INVOCATION_S, the longest warm duration DEPLOY.md's
# costs assume (50 ms a turn, 100 ms a screened batch). An SQS event source (a SAM event or an
# EventSourceMapping) is its MaximumConcurrency, or without one the five pollers Lambda starts with; a
# stream ParallelizationFactor (default 1) per shard, one shard; a schedule one.
WARM_INVOCATION_S = 0.1
SQS_UNCAPPED_CONCURRENCY = 5
# Lambda keeps 100 of an account's concurrency unreserved: a function's reserved or provisioned
# concurrency fails to deploy where it would leave less.
LAMBDA_UNRESERVED_MINIMUM = 100
COMMAND_TIMEOUT_S = 60

Runner = Callable[[Sequence[str]], tuple[int, str]]
"""Runs a command; its exit status and its output (stdout then stderr). 127: no such program."""


def run_command(command: Sequence[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(list(command), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
    except FileNotFoundError:
        return 127, f"{command[0]}: command not found"
    except subprocess.TimeoutExpired:
        return 124, f"{' '.join(command)} did not finish in {COMMAND_TIMEOUT_S} s"
    return done.returncode, (done.stdout + done.stderr).strip()


@dataclass(frozen=True)
class Check:
    """One check's outcome: a sentence, and for a failure what to do about it."""

    ok: bool
    says: str
    fix: str = ""
    warn: bool = False  # passed, but with something to do before the desk needs it (`fix`)

    def line(self) -> str:
        if self.ok and self.warn:
            return f"warn  {sentence(self.says)} Fix: {sentence(self.fix)}"
        if self.ok:
            return f"ok    {sentence(self.says)}"
        return f"FAIL  {sentence(self.says)} Fix: {sentence(self.fix)}"


def passed(says: str) -> Check:
    return Check(ok=True, says=says)


def warned(says: str, fix: str) -> Check:
    return Check(ok=True, says=says, fix=fix, warn=True)


def failed(says: str, fix: str) -> Check:
    return Check(ok=False, says=says, fix=fix)


class PreflightError(Exception):
    """Why the checks could not start (the template, the region), as one sentence without its full stop."""


@dataclass(frozen=True)
class TemplateFacts:
    """What preflight takes from template.yaml rather than repeat it."""

    gpu_types: tuple[str, ...]  # GpuInstanceTypes' default, most preferred first
    gpu_allowed: tuple[str, ...]  # its AllowedValues
    max_tasks: int  # RealizerMaxTasks' default
    domain_pattern: str
    domain_default: str
    alarm_default: str
    lambda_peak: tuple[tuple[str, float], ...]  # the busiest moment: (what, concurrent executions)
    lambda_reserved: tuple[tuple[str, int], ...] = ()  # (function, reserved or provisioned concurrency)

    @property
    def lambda_peak_total(self) -> int:
        """The functions' concurrent executions at their busiest, rounded up."""
        return math.ceil(sum(count for _, count in self.lambda_peak) - 1e-9)

    @property
    def lambda_deploy_need(self) -> int:
        """The quota a deploy needs: what the template reserves, and the 100 Lambda keeps unreserved beside
        it; 0 when it reserves nothing (as today: no function sets ReservedConcurrentExecutions or
        ProvisionedConcurrencyConfig, see the CKV_AWS_115 skips' reasons in template.yaml)."""
        reserved = sum(count for _, count in self.lambda_reserved)
        return reserved + LAMBDA_UNRESERVED_MINIMUM if reserved else 0

    @property
    def lambda_ask(self) -> int:
        """The quota to ask for: the deploy's need, and what is reserved with the peak beside it, rounded up
        to the hundred (at least 100, the unreserved minimum)."""
        reserved = sum(count for _, count in self.lambda_reserved)
        wanted = max(self.lambda_deploy_need, reserved + self.lambda_peak_total, LAMBDA_UNRESERVED_MINIMUM)
        return math.ceil(wanted / 100) * 100


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """template.yaml as plain data; a CloudFormation tag (!Ref, !Sub, ...) becomes its long form."""
    import yaml  # type: ignore[import-untyped]

    # libyaml's parser where PyYAML was built with it (its wheels are): the same data, a fifteenth of the time.
    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
        pass

    def intrinsic(loader: Any, suffix: str, node: Any) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        return {"Ref" if suffix == "Ref" else f"Fn::{suffix}": value}

    Loader.add_multi_constructor("!", intrinsic)
    try:
        with path.open(encoding="utf-8") as stream:
            template = yaml.load(stream, Loader=Loader)
    except (OSError, yaml.YAMLError) as error:
        raise PreflightError(f"reading {path} failed ({str(error).splitlines()[0]})") from None
    if not isinstance(template, dict) or not isinstance(template.get("Parameters"), dict):
        raise PreflightError(f"{path} has no Parameters section")
    return template


def _number(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _comma_list(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
    return tuple(str(item).strip() for item in items if str(item).strip())


def _http_api_routes(resources: Mapping[str, Any], api: str) -> set[str]:
    """The route keys (`METHOD /path`) the functions' HttpApi events put on the API `api`."""
    routes: set[str] = set()
    for resource in resources.values():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::Serverless::Function":
            continue
        for event in ((resource.get("Properties") or {}).get("Events") or {}).values():
            settings = (event or {}).get("Properties") or {}
            if (event or {}).get("Type") == "HttpApi" and _referenced(settings.get("ApiId")) == api:
                routes.add(f"{str(settings.get('Method', 'ANY')).upper()} {settings.get('Path', '/')}")
    return routes


def lambda_peak(resources: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    """The functions' concurrent executions at their busiest, as the template bounds them, one part per
    source of invocations (WARM_INVOCATION_S above says how each is counted)."""
    parts: list[tuple[str, float]] = []
    for name, resource in resources.items():
        if not isinstance(resource, dict):
            continue
        properties = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::Serverless::HttpApi":
            default = (properties.get("DefaultRouteSettings") or {}).get("ThrottlingRateLimit")
            named = {route: (settings or {}).get("ThrottlingRateLimit")
                     for route, settings in (properties.get("RouteSettings") or {}).items()}  # fmt: skip
            routes = _http_api_routes(resources, name) | set(named)
            rates = [_number(named.get(route), 0) if named.get(route) is not None else _number(default, 0)
                     for route in routes]  # fmt: skip
            if not routes and default is not None:
                rates = [_number(default, 0)]
            if rates:
                rate = sum(rates)
                what = f"{name}'s {len(rates)} routes ({rate:g} requests/s x {WARM_INVOCATION_S:g} s)"
                parts.append((what, rate * WARM_INVOCATION_S))
        elif resource.get("Type") == "AWS::Serverless::Function":
            for event in (properties.get("Events") or {}).values():
                kind = (event or {}).get("Type")
                settings = (event or {}).get("Properties") or {}
                if kind == "SQS":
                    cap = (settings.get("ScalingConfig") or {}).get("MaximumConcurrency")
                    parts.append((f"{name}'s queue", _number(cap, SQS_UNCAPPED_CONCURRENCY)))
                elif kind in ("DynamoDB", "Kinesis"):
                    parts.append((f"{name}'s stream", _number(settings.get("ParallelizationFactor"), 1)))
                elif kind in ("Schedule", "ScheduleV2"):
                    parts.append((f"{name}'s schedule", 1))
        elif resource.get("Type") == "AWS::Lambda::EventSourceMapping":
            source = _referenced(properties.get("EventSourceArn"))
            if (resources.get(source) or {}).get("Type") == "AWS::SQS::Queue":
                cap = (properties.get("ScalingConfig") or {}).get("MaximumConcurrency")
                parts.append((f"{name}'s queue", _number(cap, SQS_UNCAPPED_CONCURRENCY)))
            elif "StartingPosition" in properties:
                parts.append((f"{name}'s stream", _number(properties.get("ParallelizationFactor"), 1)))
    return tuple(parts)


def lambda_reserved(
    resources: Mapping[str, Any], function_globals: Mapping[str, Any], parameters: Mapping[str, Any]
) -> tuple[tuple[str, int], ...]:
    """What the template takes out of the account's concurrency at deploy time: each function's
    ReservedConcurrentExecutions and provisioned concurrency (its own, or Globals' Function), and those of
    plain Lambda functions, aliases and versions. A `!Ref` to a parameter counts its default."""

    def count(value: Any) -> int:
        if isinstance(value, dict) and "Ref" in value:
            value = (parameters.get(str(value["Ref"])) or {}).get("Default")
        return max(0, _number(value, 0))

    parts: list[tuple[str, int]] = []
    for name, resource in resources.items():
        if not isinstance(resource, dict):
            continue
        kind = resource.get("Type")
        properties = resource.get("Properties") or {}
        if kind == "AWS::Serverless::Function":
            properties = {**function_globals, **properties}
        reserved = count(properties.get("ReservedConcurrentExecutions"))
        if reserved and kind in ("AWS::Serverless::Function", "AWS::Lambda::Function"):
            parts.append((f"{name}'s reserved concurrency", reserved))
        provisioned = count(
            (properties.get("ProvisionedConcurrencyConfig") or {}).get("ProvisionedConcurrentExecutions")
        )
        if provisioned and kind in ("AWS::Serverless::Function", "AWS::Lambda::Alias", "AWS::Lambda::Version"):
            parts.append((f"{name}'s provisioned concurrency", provisioned))
    return tuple(parts)


def _referenced(value: Any) -> str:
    """The logical id an `!GetAtt Name.Arn` or a `!Ref Name` names; empty for anything else."""
    if isinstance(value, dict) and len(value) == 1:
        ((function, argument),) = value.items()
        if function == "Fn::GetAtt":
            return str(argument[0] if isinstance(argument, list) else str(argument).split(".")[0])
        if function == "Ref":
            return str(argument)
    return ""


def template_facts(template: Mapping[str, Any]) -> TemplateFacts:
    parameters = template["Parameters"]

    def parameter(name: str) -> dict[str, Any]:
        value = parameters.get(name)
        if not isinstance(value, dict):
            raise PreflightError(f"the template has no parameter {name}")
        return value

    gpu = parameter("GpuInstanceTypes")
    return TemplateFacts(
        gpu_types=_comma_list(gpu.get("Default", "")),
        gpu_allowed=_comma_list(gpu.get("AllowedValues", [])),
        max_tasks=_number(parameter("RealizerMaxTasks").get("Default"), 1),
        domain_pattern=str(parameter("StaffSignInDomainPrefix").get("AllowedPattern") or DOMAIN_PATTERN),
        domain_default=str(parameter("StaffSignInDomainPrefix").get("Default") or ""),
        alarm_default=str(parameter("AlarmEmail").get("Default") or ""),
        lambda_peak=lambda_peak(template.get("Resources") or {}),
        lambda_reserved=lambda_reserved(
            template.get("Resources") or {},
            ((template.get("Globals") or {}).get("Function") or {}),
            parameters,
        ),
    )


@dataclass(frozen=True)
class Clients:
    region: str
    # One boto3 client per service, in the order `for_region` names them.
    ec2: Any
    quotas: Any  # Service Quotas
    lambda_: Any
    iam: Any
    cognito: Any  # cognito-idp
    cloudfront: Any

    @classmethod
    def for_region(cls, region: str | None) -> Clients:
        import boto3

        session = boto3.Session(region_name=region)
        if not session.region_name:
            raise PreflightError("no region: pass --region (make preflight REGION=us-east-1) or run aws configure")
        clients = session_clients(session, "ec2", "service-quotas", "lambda", "iam", "cognito-idp", "cloudfront")
        return cls(str(session.region_name), *clients)


def _names(items: Iterable[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _unreadable(what: str, error: Exception, permission: str) -> Check:
    return failed(
        f"{what} could not be read ({aws_reason(error)})",
        f"run with the credentials you deploy with, allowed {permission} (aws sts get-caller-identity shows whose "
        "they are)",
    )


def offered_types(ec2: Any, types: Iterable[str]) -> set[str]:
    """Which of `types` the client's region offers."""
    offered: set[str] = set()
    pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
        LocationType="region", Filters=[{"Name": "instance-type", "Values": sorted(set(types))}]
    )
    for page in pages:
        offered.update(offering["InstanceType"] for offering in page["InstanceTypeOfferings"])
    return offered


def check_gpu_types(clients: Clients, wanted: Sequence[str], allowed: Sequence[str]) -> tuple[Check, list[str] | None]:
    """The GPU types check, and the wanted types the region offers, in order (None: not known)."""
    region = clients.region
    listed = ",".join(wanted)
    if not 1 <= len(wanted) <= GPU_TYPES_MOST or len(set(wanted)) != len(wanted) or not set(wanted) <= set(allowed):
        return failed(
            f"GpuInstanceTypes {listed} is not one to {GPU_TYPES_MOST} different types of the template's "
            f"{','.join(allowed)}",
            f"pass --gpu-instance-types with one to {GPU_TYPES_MOST} different types of {','.join(allowed)}, "
            "most preferred first",
        ), None
    try:
        offered = offered_types(clients.ec2, [*wanted, *allowed])
    except AWS_ERRORS as error:
        return _unreadable(f"the GPU types {region} offers", error, "ec2:DescribeInstanceTypeOfferings"), None
    available = [item for item in wanted if item in offered]
    missing = [item for item in wanted if item not in offered]
    if not missing:
        return passed(f"{region} offers the GPU types {_names(wanted)} (GpuInstanceTypes)"), available
    says = f"{region} does not offer {_names(missing)}, of GpuInstanceTypes {listed}"
    choice = [*available, *(item for item in allowed if item in offered and item not in available)]
    if choice:
        pick = ",".join(choice[:GPU_TYPES_MOST])
        fix = (
            f"answer sam deploy --guided's GpuInstanceTypes with {pick} (make preflight GPU_INSTANCE_TYPES={pick} "
            "checks it)"
        )
    else:
        fix = (
            f"deploy in a region that offers one of {_names(allowed)} (aws ec2 "
            "describe-instance-type-offerings --region REGION --filters "
            f"Name=instance-type,Values={','.join(allowed)})"
        )
    return failed(says, fix), available


def gpu_quota(quotas: Any) -> float:
    """The account's applied vCPU quota for G and VT instances, else AWS's default for it."""
    from botocore.exceptions import ClientError

    try:
        return float(quotas.get_service_quota(ServiceCode="ec2", QuotaCode=GPU_QUOTA_CODE)["Quota"]["Value"])
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "NoSuchResourceException":
            raise
    return float(quotas.get_aws_default_service_quota(ServiceCode="ec2", QuotaCode=GPU_QUOTA_CODE)["Quota"]["Value"])


def check_gpu_quota(clients: Clients, types: Sequence[str] | None, max_tasks: int) -> Check:
    region = clients.region
    if types is None:
        return failed(
            "the GPU vCPU quota was not compared: the GPU types are not known (the line above)",
            "fix the GPU types line first",
        )
    if not types:
        return failed(
            f"the GPU vCPU quota was not compared: none of GpuInstanceTypes is offered in {region}",
            "fix the GPU types first (the line above)",
        )
    try:
        described = clients.ec2.describe_instance_types(InstanceTypes=list(types))["InstanceTypes"]
        vcpus = {item["InstanceType"]: int(item["VCpuInfo"]["DefaultVCpus"]) for item in described}
    except AWS_ERRORS as error:
        return _unreadable("the GPU types' vCPUs", error, "ec2:DescribeInstanceTypes")
    try:
        quota = gpu_quota(clients.quotas)
    except AWS_ERRORS as error:
        return _unreadable(
            f"the quota Running On-Demand G and VT instances in {region}", error, "servicequotas:GetServiceQuota"
        )
    if not vcpus:
        return failed(f"no vCPU count came back for {_names(types)}", "rerun make preflight")
    smallest = min(vcpus, key=lambda name: (vcpus[name], types.index(name)))
    # RealizerMaxTasks instances of the largest type, and one more for a deploy at full load (DEPLOY.md).
    wanted = max(vcpus.values()) * (max_tasks + 1)
    held = f"{quota:g} vCPUs"
    if quota < vcpus[smallest]:
        # No deploy needs it: the first makes no realizer service, the second makes it at 0 tasks.
        return warned(
            f"the quota Running On-Demand G and VT instances in {region} is {held}, below the {vcpus[smallest]} "
            f"of one {smallest}: no deploy needs it, but no realizer task can start until it is raised, so "
            "every generated turn shows the fallback; ask now, approval can take days",
            f"aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {GPU_QUOTA_CODE} "
            f"--desired-value {wanted} --region {region} ({wanted} vCPUs: RealizerMaxTasks {max_tasks} plus one "
            "instance for a deploy), or in the Service Quotas console, Amazon EC2, Running On-Demand G and VT "
            "instances, Request increase",
        )
    room = int(quota // vcpus[smallest])
    more = "" if quota >= wanted else f"; ask for {wanted} to run RealizerMaxTasks {max_tasks} plus a deploy's one more"
    return passed(
        f"the quota Running On-Demand G and VT instances in {region} is {held}, room for {room} {smallest} "
        f"({vcpus[smallest]} vCPUs each){more}"
    )


def check_lambda_concurrency(clients: Clients, facts: TemplateFacts) -> Check:
    region = clients.region
    try:
        settings = clients.lambda_.get_account_settings()
        quota = int(settings["AccountLimit"]["ConcurrentExecutions"])
    except AWS_ERRORS as error:
        return _unreadable(f"the Lambda concurrency quota in {region}", error, "lambda:GetAccountSettings")
    need, peak, ask = facts.lambda_deploy_need, facts.lambda_peak_total, facts.lambda_ask
    parts = ", ".join(f"{what}: {count:.3g}" for what, count in facts.lambda_peak)
    request = (
        f"aws service-quotas request-service-quota-increase --service-code lambda --quota-code {LAMBDA_QUOTA_CODE} "
        f"--desired-value {ask} --region {region}, or in the Service Quotas console, AWS Lambda, Concurrent "
        "executions, Request increase"
    )
    if quota < need:
        reserved = ", ".join(f"{what}: {count}" for what, count in facts.lambda_reserved)
        return failed(
            f"the Lambda concurrency quota in {region} is {quota}, below the {need} a deploy needs ({reserved}, "
            f"and the {LAMBDA_UNRESERVED_MINIMUM} Lambda keeps unreserved): the deploy would fail",
            request,
        )
    reserves = "the template reserves none" if not need else f"a deploy reserves {need - LAMBDA_UNRESERVED_MINIMUM}"
    if quota < peak:
        return warned(
            f"the Lambda concurrency quota in {region} is {quota}, below the functions' busiest moment, about {peak} "
            f"at once ({parts}): no deploy needs it ({reserves}), but past it Lambda throttles turns",
            request,
        )
    return passed(
        f"the Lambda concurrency quota in {region} is {quota}, at least the functions' busiest moment, about {peak} "
        f"at once ({reserves})"
    )


def check_cloudfront(clients: Clients) -> Check:
    """AWS makes some new accounts verify before they may create a CloudFront distribution, and no API
    says which: an account that has one is past it; one that has none is warned, before step 1."""
    try:
        listed = clients.cloudfront.list_distributions(MaxItems="1")["DistributionList"]
    except AWS_ERRORS as error:
        return _unreadable("the account's CloudFront distributions", error, "cloudfront:ListDistributions")
    if listed.get("Quantity") or listed.get("Items"):
        return passed("the account has a CloudFront distribution already, so it may create PagesDistribution")
    return warned(
        "the account has no CloudFront distribution yet: AWS makes some new accounts verify before they may "
        'create one, and then step 1 rolls back at PagesDistribution with "Your account must be verified '
        'before you can add new CloudFront resources"',
        "before step 1, open a case in the AWS Support Center (Account and billing) asking for account "
        "verification for CloudFront distributions; if step 1 rolls back with that message, once AWS has "
        "answered delete the rolled-back stack (aws cloudformation delete-stack) and deploy again",
    )


def check_ecs_role(clients: Clients, fix: bool) -> Check:
    from botocore.exceptions import ClientError

    try:
        clients.iam.get_role(RoleName=ECS_ROLE)
        return passed(f"the ECS service-linked role {ECS_ROLE} exists")
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "NoSuchEntity":
            return _unreadable(f"the role {ECS_ROLE}", error, "iam:GetRole")
    except AWS_ERRORS as error:
        return _unreadable(f"the role {ECS_ROLE}", error, "iam:GetRole")
    command = f"aws iam create-service-linked-role --aws-service-name {ECS_SERVICE}"
    if not fix:
        return failed(
            f"the ECS service-linked role {ECS_ROLE} does not exist yet, so the GPU capacity provider fails to "
            "create and the first deploy rolls back",
            f"make preflight FIX=1 creates it, or {command}",
        )
    try:
        created = clients.iam.create_service_linked_role(AWSServiceName=ECS_SERVICE)["Role"]
    except AWS_ERRORS as error:
        return failed(
            f"creating the ECS service-linked role {ECS_ROLE} failed ({aws_reason(error)})",
            f"{command}, with credentials allowed iam:CreateServiceLinkedRole",
        )
    return passed(f"the ECS service-linked role was missing and is now created ({created['Arn']})")


def check_domain_prefix(clients: Clients, prefix: str, pattern: str) -> Check:
    region = clients.region
    rules = "lower-case letters, digits and inner hyphens, at most 63, without aws, amazon or cognito"
    if not prefix:
        return failed(
            "no staff sign-in domain prefix was given (the template's StaffSignInDomainPrefix has no default)",
            "make preflight DOMAIN_PREFIX=your-desk-staff, the value you will give sam deploy's "
            "StaffSignInDomainPrefix",
        )
    reserved = [word for word in DOMAIN_RESERVED_WORDS if word in prefix]
    if not re.fullmatch(pattern, prefix) or reserved:
        why = f" (it holds {_names(reserved)})" if reserved else ""
        return failed(
            f"the domain prefix {prefix!r} breaks Cognito's rules: {rules}{why}",
            f"choose a prefix of {rules}, and pass it as --domain-prefix and as StaffSignInDomainPrefix",
        )
    try:
        description = clients.cognito.describe_user_pool_domain(Domain=prefix).get("DomainDescription") or {}
    except AWS_ERRORS as error:
        return _unreadable(f"whether the domain prefix {prefix} is free", error, "cognito-idp:DescribeUserPoolDomain")
    if description:
        owner = description.get("UserPoolId")
        return failed(
            f"the domain prefix {prefix} is taken in {region}" + (f" (by the user pool {owner})" if owner else ""),
            "choose another prefix, say one with your organisation's name in it, and pass it as --domain-prefix "
            "and as StaffSignInDomainPrefix (a pool of your own stack holding it is fine on a redeploy)",
        )
    return passed(f"the domain prefix {prefix} keeps Cognito's rules and is free in {region}")


def check_python(run: Runner) -> Check:
    status, output = run(["python3.12", "--version"])
    found = re.search(r"Python 3\.12\.\d+", output)
    install = (
        "install Python 3.12 so that python3.12 --version works (pyenv install 3.12 and pyenv global 3.12, or the "
        "system's python3.12 package)"
    )
    if status == 0 and found:
        return passed(f"{found.group(0)} is on PATH for make build and sam build")
    if status == 127:
        return failed("python3.12 is not on PATH: make build installs the SAM CLI with it", install)
    return failed(f"python3.12 --version did not answer Python 3.12 ({_first_line(output)})", install)


def check_docker(run: Runner) -> Check:
    status, output = run(["docker", "version"])
    if status == 0:
        return passed("Docker answers (client and daemon) for make pin-base-image and make push-image")
    if status == 127:
        return failed(
            "Docker is not installed: make pin-base-image and make push-image build the realizer image with it",
            "install Docker with Buildx (Docker Engine or Docker Desktop), or run those two targets on a machine "
            "that has it",
        )
    return failed(
        f"Docker's daemon does not answer ({_last_line(output)})",
        "start Docker (sudo systemctl start docker, or open Docker Desktop) until docker version shows a Server",
    )


def check_alarm_email(address: str) -> Check:
    if EMAIL_PATTERN.fullmatch(address):
        return passed(f"alarms and the budget's alerts go to {address} (AlarmEmail; confirm AWS's e-mail)")
    says = (
        f"the alarm address {address!r} is not an e-mail address"
        if address
        else "no alarm address was given: the budget and the alarms would tell no one"
    )
    return failed(
        says,
        "make preflight ALARM_EMAIL=you@example.org, and give sam deploy's AlarmEmail the same address",
    )


def _first_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[0].rstrip(" .") if lines else "no output"


def _last_line(output: str) -> str:
    """The last line: a failed command's error follows what it printed to stdout."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1].rstrip(" .?") if lines else "no output"


@dataclass(frozen=True)
class Options:
    domain_prefix: str
    alarm_email: str
    gpu_types: tuple[str, ...]
    fix: bool = False


def preflight(clients: Clients, facts: TemplateFacts, options: Options, run: Runner) -> list[Check]:
    """Every check, in the order of the deploy guide's steps."""
    types_check, offered = check_gpu_types(clients, options.gpu_types, facts.gpu_allowed)
    return [
        types_check,
        check_gpu_quota(clients, offered, facts.max_tasks),
        check_lambda_concurrency(clients, facts),
        check_cloudfront(clients),
        check_ecs_role(clients, options.fix),
        check_domain_prefix(clients, options.domain_prefix, facts.domain_pattern),
        check_python(run),
        check_docker(run),
        check_alarm_email(options.alarm_email),
    ]


def main(
    argv: list[str] | None = None,
    *,
    connect: Callable[[str | None], Clients] | None = None,
    run: Runner | None = None,
    template: Path = TEMPLATE,
    out: TextIO | None = None,
) -> int:
    """`connect` makes the AWS clients for --region (default: boto3's), `run` runs python3.12 and docker."""
    parser = argparse.ArgumentParser(
        prog="python -m ops preflight", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--region", help="the region to deploy in (default: the AWS CLI's)")
    parser.add_argument("--domain-prefix", help="the StaffSignInDomainPrefix you will deploy with")
    parser.add_argument("--alarm-email", help="the AlarmEmail you will deploy with")
    parser.add_argument(
        "--gpu-instance-types",
        metavar="A[,B[,C]]",
        help="the GpuInstanceTypes you will deploy with, one to three (default: the template's)",
    )
    parser.add_argument("--fix", action="store_true", help="create the ECS service-linked role if it is missing")
    args = parser.parse_args(argv)
    out = out or sys.stdout
    try:
        facts = template_facts(load_template(template))
        clients = (connect or Clients.for_region)(args.region)
    except PreflightError as error:
        return report_failure("preflight", error)
    except AWS_ERRORS as error:
        print(f"preflight: connecting to AWS failed ({aws_reason(error)}).", file=sys.stderr)
        return 1
    options = Options(
        domain_prefix=(args.domain_prefix if args.domain_prefix is not None else facts.domain_default).strip(),
        alarm_email=(args.alarm_email if args.alarm_email is not None else facts.alarm_default).strip(),
        gpu_types=_comma_list(args.gpu_instance_types) if args.gpu_instance_types else facts.gpu_types,
        fix=args.fix,
    )
    checks = preflight(clients, facts, options, run or run_command)
    for check in checks:
        print(check.line(), file=out)
    failures = sum(not check.ok for check in checks)
    warnings = sum(check.warn for check in checks)
    warned_too = f", {warnings} more warn" if warnings else ""
    if failures:
        print(f"preflight: {failures} of {len(checks)} checks failed in {clients.region}{warned_too}.", file=out)
        return 1
    if warnings:
        print(
            f"preflight: no check failed in {clients.region}; {warnings} of {len(checks)} warn: do what each "
            "says before the desk needs it.",
            file=out,
        )
        return 0
    print(f"preflight: all {len(checks)} checks passed in {clients.region}.", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
