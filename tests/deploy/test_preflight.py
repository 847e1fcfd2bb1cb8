"""`make preflight` (ops/preflight.py) on moto: each check passing and failing, with its fix.

moto answers EC2's instance type offerings and instance types, IAM's roles, Cognito's domains and
CloudFront's distributions; botocore's Stubber answers what moto lacks: Service Quotas' G and VT quota
(moto knows only VPC's) and Lambda's GetAccountSettings (moto: "Not yet implemented"). python3.12 and
docker run through a fake runner.
"""

from __future__ import annotations

import io
import re
import shlex
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from cfnlint.decode import decode

from ops import preflight
from ops.__main__ import main as ops_main
from ops.preflight import Check, Clients
from tests.fake_aws import mocked_aws

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
REGION = "us-east-1"
PREFIX = "desk-staff-dev"
EMAIL = "desk-alarms@example.org"
GOOD_ANSWERS = {
    ("python3.12", "--version"): (0, "Python 3.12.8"),
    ("docker", "version"): (0, "Client:\n Version: 28.2.2\nServer:\n Engine:\n  Version: 28.2.2"),
}
GPU_QUOTA_CALL = {"ServiceCode": "ec2", "QuotaCode": "L-DB2E81BA"}


class FakeRunner:
    """Answers the commands it is given answers for; records every command it is asked to run."""

    def __init__(self, answers: dict[tuple[str, ...], tuple[int, str]] | None = None) -> None:
        self.answers = {**GOOD_ANSWERS, **(answers or {})}
        self.commands: list[tuple[str, ...]] = []

    def __call__(self, command: Sequence[str]) -> tuple[int, str]:
        self.commands.append(tuple(command))
        return self.answers.get(tuple(command), (127, f"{command[0]}: command not found"))


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with mocked_aws(monkeypatch, REGION):
        yield


def ecs_role_exists() -> None:
    """The role as AWS names it (moto's CreateServiceLinkedRole spells it AWSServiceRoleForecs)."""
    boto3.client("iam").create_role(
        RoleName="AWSServiceRoleForECS",
        Path="/aws-service-role/ecs.amazonaws.com/",
        AssumeRolePolicyDocument='{"Version": "2012-10-17", "Statement": []}',
    )


def make_distribution() -> None:
    """A CloudFront distribution of the account's own: an account that has one is past AWS's verification."""
    cloudfront = boto3.client("cloudfront")
    if cloudfront.list_distributions()["DistributionList"].get("Quantity"):
        return
    cloudfront.create_distribution(
        DistributionConfig={
            "CallerReference": "an-earlier-site",
            "Comment": "",
            "Enabled": True,
            "Origins": {
                "Quantity": 1,
                "Items": [
                    {
                        "Id": "site",
                        "DomainName": "site.s3.amazonaws.com",
                        "S3OriginConfig": {"OriginAccessIdentity": ""},
                    }
                ],
            },
            "DefaultCacheBehavior": {
                "TargetOriginId": "site",
                "ViewerProtocolPolicy": "redirect-to-https",
                "MinTTL": 0,
                "ForwardedValues": {"QueryString": False, "Cookies": {"Forward": "none"}},
            },
        }
    )


def take_domain(prefix: str, region: str = REGION) -> str:
    cognito = boto3.client("cognito-idp", region_name=region)
    pool = cognito.create_user_pool(PoolName="someone-elses-pool")["UserPool"]["Id"]
    cognito.create_user_pool_domain(Domain=prefix, UserPoolId=pool)
    return str(pool)


class Account:
    """moto's clients for a region, with Stubbers for the GPU quota and Lambda's account settings."""

    def __init__(
        self,
        *,
        gpu_quota: float | None = 12.0,
        default_gpu_quota: float | None = None,
        lambda_limit: int | None = 1000,
        quota_error: str | None = None,
        has_distribution: bool = True,
    ) -> None:
        self.has_distribution = has_distribution
        self.gpu_quota = gpu_quota
        self.default_gpu_quota = default_gpu_quota
        self.lambda_limit = lambda_limit
        self.quota_error = quota_error
        self.regions: list[str | None] = []
        self.stubbers: list[Stubber] = []

    def connect(self, region: str | None) -> Clients:
        self.regions.append(region)
        region = region or REGION
        if self.has_distribution:
            make_distribution()
        quotas = boto3.client("service-quotas", region_name=region)
        quota_stub = Stubber(quotas)
        if self.quota_error:
            quota_stub.add_client_error("get_service_quota", self.quota_error, "not for you", 400, GPU_QUOTA_CALL)
        elif self.gpu_quota is not None:
            quota_stub.add_response("get_service_quota", {"Quota": {"Value": self.gpu_quota}}, GPU_QUOTA_CALL)
        else:
            quota_stub.add_client_error("get_service_quota", "NoSuchResourceException", "", 400, GPU_QUOTA_CALL)
            quota_stub.add_response(
                "get_aws_default_service_quota", {"Quota": {"Value": self.default_gpu_quota}}, GPU_QUOTA_CALL
            )
        lambda_ = boto3.client("lambda", region_name=region)
        lambda_stub = Stubber(lambda_)
        if self.lambda_limit is not None:
            limit = {"ConcurrentExecutions": self.lambda_limit, "UnreservedConcurrentExecutions": self.lambda_limit}
            lambda_stub.add_response("get_account_settings", {"AccountLimit": limit}, {})
        for stub in (quota_stub, lambda_stub):
            stub.activate()
            self.stubbers.append(stub)
        return Clients(
            ec2=boto3.client("ec2", region_name=region),
            quotas=quotas,
            lambda_=lambda_,
            iam=boto3.client("iam", region_name=region),
            cognito=boto3.client("cognito-idp", region_name=region),
            cloudfront=boto3.client("cloudfront", region_name=region),
            region=region,
        )


def run(
    argv: list[str], account: Account | None = None, runner: FakeRunner | None = None
) -> tuple[int, list[str], str]:
    """Exit status, the check lines (without the summary) and the summary line."""
    out = io.StringIO()
    status = preflight.main(
        argv, connect=(account or Account()).connect, run=runner or FakeRunner(), out=out, template=TEMPLATE
    )
    lines = out.getvalue().splitlines()
    return status, lines[:-1], lines[-1]


def ready(**extra: str) -> list[str]:
    argv = ["--domain-prefix", PREFIX, "--alarm-email", EMAIL]
    for name, value in extra.items():
        argv += [f"--{name.replace('_', '-')}", value]
    return argv


def line_about(lines: list[str], words: str) -> str:
    (line,) = [line for line in lines if words in line]
    return line


# --- the whole run -----------------------------------------------------------------------------------


def test_a_ready_account_passes_every_check_one_line_each(aws: None) -> None:
    ecs_role_exists()
    runner = FakeRunner()
    status, lines, summary = run(ready(), runner=runner)
    assert status == 0, lines
    assert len(lines) == 9
    assert all(line.startswith("ok    ") and line.endswith(".") and "Fix:" not in line for line in lines), lines
    assert summary == f"preflight: all 9 checks passed in {REGION}."
    assert runner.commands == [("python3.12", "--version"), ("docker", "version")]


def test_one_failed_check_makes_the_exit_status_1_and_the_line_carries_its_fix(aws: None) -> None:
    status, lines, summary = run(ready())  # no ECS role in a new account
    assert status == 1
    (failed,) = [line for line in lines if not line.startswith("ok")]
    assert failed.startswith("FAIL  the ECS service-linked role AWSServiceRoleForECS does not exist")
    assert "Fix: make preflight FIX=1 creates it, or aws iam create-service-linked-role" in failed
    assert summary == f"preflight: 1 of 9 checks failed in {REGION}."


def test_the_region_option_reaches_aws(aws: None) -> None:
    account = Account()
    run([*ready(), "--region", "eu-west-2"], account)
    assert account.regions == ["eu-west-2"]


def test_no_region_is_one_sentence_and_exit_1(
    aws: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    assert preflight.main(ready(), run=FakeRunner(), out=io.StringIO()) == 1
    assert capsys.readouterr().err == (
        "preflight: no region: pass --region (make preflight REGION=us-east-1) or run aws configure.\n"
    )


# --- the GPU types and their quota -------------------------------------------------------------------


def test_the_gpu_types_come_from_the_template() -> None:
    decoded, matches = decode(str(TEMPLATE))
    assert not matches
    parameter = decoded["Parameters"]["GpuInstanceTypes"]
    facts = preflight.template_facts(preflight.load_template(TEMPLATE))
    assert ",".join(facts.gpu_types) == parameter["Default"]
    assert list(facts.gpu_allowed) == parameter["AllowedValues"]
    assert facts.max_tasks == int(decoded["Parameters"]["RealizerMaxTasks"]["Default"])
    assert facts.domain_pattern == decoded["Parameters"]["StaffSignInDomainPrefix"]["AllowedPattern"]


def test_the_template_reads_the_same_with_libyaml_as_without(monkeypatch: pytest.MonkeyPatch) -> None:
    """load_template takes libyaml's parser where PyYAML has it, and PyYAML's own where not."""
    import yaml  # type: ignore[import-untyped]

    with_libyaml = preflight.load_template(TEMPLATE)
    monkeypatch.delattr(yaml, "CSafeLoader")
    assert preflight.load_template(TEMPLATE) == with_libyaml
    assert with_libyaml["Resources"]["ConversationApi"]["Properties"]["StageName"] == {"Ref": "Stage"}


def test_a_region_missing_one_gpu_type_fails_with_three_it_offers(aws: None) -> None:
    ecs_role_exists()
    status, lines, _ = run([*ready(), "--region", "eu-west-2"])  # moto: no g6e.xlarge there
    assert status == 1
    line = line_about(lines, "GpuInstanceTypes")
    assert line.startswith(
        "FAIL  eu-west-2 does not offer g6e.xlarge, of GpuInstanceTypes g6.xlarge,g5.xlarge,g6e.xlarge"
    )
    assert "Fix: answer sam deploy --guided's GpuInstanceTypes with g6.xlarge,g5.xlarge,g5.2xlarge" in line
    # The quota is still compared, against the types the region offers.
    assert line_about(lines, "G and VT").startswith("ok    ")

    status, lines, _ = run(
        [*ready(), "--region", "eu-west-2", "--gpu-instance-types", "g6.xlarge,g5.xlarge,g5.2xlarge"]
    )
    assert status == 0, lines
    assert "eu-west-2 offers the GPU types g6.xlarge, g5.xlarge and g5.2xlarge" in lines[0]


def test_a_region_with_two_of_the_gpu_types_is_told_to_deploy_with_those_two(aws: None) -> None:
    ecs_role_exists()
    status, lines, _ = run([*ready(), "--region", "eu-west-1"])  # moto: only the two g5 types
    assert status == 1
    line = line_about(lines, "GpuInstanceTypes")
    assert "does not offer g6.xlarge and g6e.xlarge" in line
    assert "Fix: answer sam deploy --guided's GpuInstanceTypes with g5.xlarge,g5.2xlarge" in line
    # and those two are enough: the template takes one to three types
    status, lines, _ = run([*ready(), "--region", "eu-west-1", "--gpu-instance-types", "g5.xlarge,g5.2xlarge"])
    assert status == 0, lines
    assert "eu-west-1 offers the GPU types g5.xlarge and g5.2xlarge" in lines[0]


@pytest.mark.parametrize("types", ["g6.xlarge", "g6.xlarge,g5.xlarge", "g6.xlarge,g5.xlarge,g6e.xlarge"])
def test_one_to_three_gpu_types_pass(aws: None, types: str) -> None:
    ecs_role_exists()
    status, lines, _ = run([*ready(), "--gpu-instance-types", types])
    assert status == 0, lines
    assert lines[0].startswith(f"ok    {REGION} offers the GPU type")


def test_a_region_with_no_gpu_type_skips_the_quota_with_a_reason(aws: None) -> None:
    status, lines, _ = run([*ready(), "--region", "af-south-1"])
    assert status == 1
    assert lines[1] == (
        "FAIL  the GPU vCPU quota was not compared: none of GpuInstanceTypes is offered in af-south-1. "
        "Fix: fix the GPU types first (the line above)."
    )


@pytest.mark.parametrize(
    "types",
    [
        "g6.xlarge,g5.xlarge,g6e.xlarge,g5.2xlarge",
        "g6.xlarge,g6.xlarge",
        "g6.xlarge,g6.xlarge,g5.xlarge",
        "g6.xlarge,g5.xlarge,p5.48xlarge",
    ],
)
def test_gpu_types_the_template_refuses_fail_before_asking_aws(aws: None, types: str) -> None:
    status, lines, _ = run([*ready(), "--gpu-instance-types", types])
    assert status == 1
    assert lines[0].startswith(f"FAIL  GpuInstanceTypes {types} is not one to 3 different types of the template's")
    assert lines[1].startswith("FAIL  the GPU vCPU quota was not compared: the GPU types are not known")


def test_a_gpu_quota_of_zero_warns_with_the_request_for_twelve_and_passes(aws: None) -> None:
    # No deploy needs a GPU (the first makes no realizer, the second makes it at 0 tasks): a new account's
    # quota of 0 is a warning with the quota to ask for, not a failure.
    ecs_role_exists()
    status, lines, summary = run(ready(), Account(gpu_quota=0))
    assert status == 0, lines
    assert summary.startswith(f"preflight: no check failed in {REGION}; 1 of 9 warn")
    line = line_about(lines, "G and VT")
    assert line.startswith(
        f"warn  the quota Running On-Demand G and VT instances in {REGION} is 0 vCPUs, below the 4 of one g6.xlarge"
        ": no deploy needs it"
    )
    assert (
        "Fix: aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-DB2E81BA "
        f"--desired-value 12 --region {REGION}"
    ) in line


def test_a_gpu_quota_of_one_instance_passes_and_asks_for_more(aws: None) -> None:
    ecs_role_exists()
    status, lines, _ = run(ready(), Account(gpu_quota=4))
    assert status == 0
    line = line_about(lines, "G and VT")
    assert line == (
        f"ok    the quota Running On-Demand G and VT instances in {REGION} is 4 vCPUs, room for 1 g6.xlarge "
        "(4 vCPUs each); ask for 12 to run RealizerMaxTasks 2 plus a deploy's one more."
    )


def test_an_unset_gpu_quota_reads_aws_default(aws: None) -> None:
    ecs_role_exists()
    account = Account(gpu_quota=None, default_gpu_quota=0)
    status, lines, _ = run(ready(), account)
    assert status == 0
    assert "is 0 vCPUs" in line_about(lines, "G and VT")
    for stub in account.stubbers:
        stub.assert_no_pending_responses()


def test_a_quota_aws_refuses_to_show_names_the_permission(aws: None) -> None:
    ecs_role_exists()
    status, lines, _ = run(ready(), Account(quota_error="AccessDeniedException"))
    assert status == 1
    line = line_about(lines, "G and VT")
    assert "could not be read (AccessDeniedException: not for you)" in line
    assert "allowed servicequotas:GetServiceQuota" in line


# --- Lambda's concurrency ----------------------------------------------------------------------------


@pytest.mark.parametrize(("limit", "ok"), [(10, False), (172, False), (173, True), (1000, True)])
def test_the_lambda_quota_warns_below_the_functions_busiest_moment_and_never_fails(
    aws: None, limit: int, ok: bool
) -> None:
    # The template reserves no concurrency, so no deploy needs any: a new account's 10 is a warning.
    ecs_role_exists()
    status, lines, _ = run(ready(), Account(lambda_limit=limit))
    line = line_about(lines, "Lambda concurrency")
    assert status == 0, lines
    if ok:
        assert line == (
            f"ok    the Lambda concurrency quota in {REGION} is {limit}, at least the functions' busiest moment, "
            "about 173 at once (the template reserves none)."
        )
    else:
        assert line.startswith(
            f"warn  the Lambda concurrency quota in {REGION} is {limit}, below the functions' busiest moment, "
            "about 173 at once (ConversationApi's 23 routes (1660 requests/s x 0.1 s): 166, "
            "ScreenReplyEventSource's queue: 5, DispatchTurnFunctionPendingTurns's stream: 1, "
            "SweepTurnsFunction's schedule: 1): no deploy needs it (the template reserves none)"
        )
        assert (
            "Fix: aws service-quotas request-service-quota-increase --service-code lambda --quota-code L-B99A9384 "
            f"--desired-value 200 --region {REGION}"
        ) in line


def test_the_template_s_busiest_moment_counts_each_source_of_invocations() -> None:
    facts = preflight.template_facts(preflight.load_template(TEMPLATE))
    parts = dict(facts.lambda_peak)
    # Each route at its steady rate (not its burst) for a warm invocation's 0.1 s: the template's
    # RouteSettings, 300 requests/s for the residents' six routes and 1,360 for the staff's seventeen.
    assert parts["ConversationApi's 23 routes (1660 requests/s x 0.1 s)"] == pytest.approx(166)
    assert parts["DispatchTurnFunctionPendingTurns's stream"] == 1  # the dispatch function's stream mapping
    assert parts["SweepTurnsFunction's schedule"] == 1
    assert parts["ScreenReplyEventSource's queue"] == 5  # the screen queue's MaximumConcurrency
    assert facts.lambda_peak_total == 173
    # Nothing reserved or provisioned: the deploy takes nothing out of the quota; ask for the peak, rounded up.
    assert facts.lambda_reserved == ()
    assert facts.lambda_deploy_need == 0
    assert facts.lambda_ask == 200


def test_the_busiest_moment_grows_with_the_template() -> None:
    resources: dict[str, Any] = {
        "Api": {
            "Type": "AWS::Serverless::HttpApi",
            "Properties": {
                "DefaultRouteSettings": {"ThrottlingBurstLimit": 150, "ThrottlingRateLimit": 100},
                "RouteSettings": {"GET /staff/{proxy+}": {"ThrottlingBurstLimit": 20, "ThrottlingRateLimit": 10}},
            },
        },
        "Queue": {"Type": "AWS::SQS::Queue"},
        "Mapping": {
            "Type": "AWS::Lambda::EventSourceMapping",
            "Properties": {"EventSourceArn": {"Fn::GetAtt": "Queue.Arn"}, "ScalingConfig": {"MaximumConcurrency": 7}},
        },
        "Worker": {
            "Type": "AWS::Serverless::Function",
            "Properties": {
                "Events": {
                    "Jobs": {"Type": "SQS", "Properties": {"Queue": {"Fn::GetAtt": "Queue.Arn"}}},
                    "Stream": {"Type": "DynamoDB", "Properties": {"ParallelizationFactor": 3}},
                    # a route the RouteSettings do not name runs at the default's rate
                    "Post": {
                        "Type": "HttpApi",
                        "Properties": {"ApiId": {"Ref": "Api"}, "Path": "/x", "Method": "post"},
                    },
                }
            },
        },
    }
    peak = preflight.lambda_peak(resources)
    assert sum(count for _, count in peak) == pytest.approx((100 + 10) * 0.1 + 7 + 5 + 3)
    facts = preflight.TemplateFacts((), (), 1, "", "", "", peak)
    assert facts.lambda_peak_total == 26
    assert (facts.lambda_deploy_need, facts.lambda_ask) == (0, 100)


def test_reserved_or_provisioned_concurrency_is_what_a_deploy_needs_and_fails_below_it(aws: None) -> None:
    resources: dict[str, Any] = {
        "Turns": {"Type": "AWS::Serverless::Function", "Properties": {"ReservedConcurrentExecutions": 50}},
        "Warm": {
            "Type": "AWS::Serverless::Function",
            "Properties": {"ProvisionedConcurrencyConfig": {"ProvisionedConcurrentExecutions": {"Ref": "Warmth"}}},
        },
    }
    reserved = preflight.lambda_reserved(resources, {}, {"Warmth": {"Type": "Number", "Default": 2}})
    assert reserved == (("Turns's reserved concurrency", 50), ("Warm's provisioned concurrency", 2))
    # Globals' Function settings count for every SAM function
    assert preflight.lambda_reserved(
        {"F": {"Type": "AWS::Serverless::Function"}}, {"ReservedConcurrentExecutions": 3}, {}
    ) == (("F's reserved concurrency", 3),)
    facts = preflight.TemplateFacts((), (), 1, "", "", "", (("Api's routes", 20.0),), reserved)
    assert facts.lambda_deploy_need == 152  # what it reserves, and the 100 Lambda keeps unreserved
    assert facts.lambda_ask == 200
    clients = Account(lambda_limit=100).connect(REGION)
    check = preflight.check_lambda_concurrency(clients, facts)
    assert not check.ok
    assert check.line().startswith(
        f"FAIL  the Lambda concurrency quota in {REGION} is 100, below the 152 a deploy needs (Turns's reserved "
        "concurrency: 50, Warm's provisioned concurrency: 2, and the 100 Lambda keeps unreserved)"
    )
    assert "--desired-value 200" in check.line()


# --- CloudFront's account verification ---------------------------------------------------------------


def test_an_account_without_a_distribution_is_warned_of_cloudfront_verification_before_step_1(aws: None) -> None:
    ecs_role_exists()
    status, lines, summary = run(ready(), Account(has_distribution=False))
    assert status == 0, lines
    line = line_about(lines, "CloudFront")
    assert line.startswith("warn  the account has no CloudFront distribution yet: AWS makes some new accounts verify")
    assert "Your account must be verified before you can add new CloudFront resources" in line
    assert "Fix: before step 1, open a case in the AWS Support Center" in line
    assert "account verification for CloudFront distributions" in line
    assert (
        summary == f"preflight: no check failed in {REGION}; 1 of 9 warn: do what each says before the desk needs it."
    )


def test_an_account_with_a_distribution_passes_the_cloudfront_check(aws: None) -> None:
    ecs_role_exists()
    status, lines, _ = run(ready())
    assert status == 0
    assert "ok    the account has a CloudFront distribution already, so it may create PagesDistribution." in lines


def test_a_new_account_passes_preflight_with_warnings_only(aws: None) -> None:
    # A new account: GPU quota 0, Lambda concurrency 10, no distribution; the role made by FIX=1.
    status, lines, summary = run([*ready(), "--fix"], Account(gpu_quota=0, lambda_limit=10, has_distribution=False))
    assert status == 0, lines
    assert [line.split()[0] for line in lines] == ["ok", "warn", "warn", "warn", "ok", "ok", "ok", "ok", "ok"]
    assert (
        summary == f"preflight: no check failed in {REGION}; 3 of 9 warn: do what each says before the desk needs it."
    )


# --- the ECS service-linked role ----------------------------------------------------------------------


def test_a_missing_ecs_role_is_not_created_without_fix(aws: None) -> None:
    run(ready())
    assert boto3.client("iam").list_roles(PathPrefix="/aws-service-role/")["Roles"] == []


def test_fix_creates_the_ecs_role(aws: None) -> None:
    status, lines, _ = run([*ready(), "--fix"])
    assert status == 0, lines
    line = line_about(lines, "service-linked role")
    assert line.startswith("ok    the ECS service-linked role was missing and is now created (arn:aws:iam::")
    (role,) = boto3.client("iam").list_roles(PathPrefix="/aws-service-role/ecs.amazonaws.com/")["Roles"]
    assert role["Arn"] in line


def test_fix_leaves_an_existing_role_alone(aws: None) -> None:
    ecs_role_exists()
    status, lines, _ = run([*ready(), "--fix"])
    assert status == 0
    assert "ok    the ECS service-linked role AWSServiceRoleForECS exists." in lines
    assert len(boto3.client("iam").list_roles(PathPrefix="/aws-service-role/")["Roles"]) == 1


# --- the Cognito domain prefix ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "why"),
    [
        ("Desk-Staff", ""),
        ("desk_staff", ""),
        ("-desk", ""),
        ("desk-", ""),
        ("a" * 64, ""),
        ("desk-aws-staff", " (it holds aws)"),
        ("amazonian-desk", " (it holds amazon)"),
        ("cognitodesk", " (it holds cognito)"),
    ],
)
def test_a_prefix_against_cognito_s_rules_fails(aws: None, prefix: str, why: str) -> None:
    ecs_role_exists()
    status, lines, _ = run([f"--domain-prefix={prefix}", "--alarm-email", EMAIL])
    assert status == 1
    line = line_about(lines, "domain prefix")
    assert line.startswith(f"FAIL  the domain prefix {prefix!r} breaks Cognito's rules: lower-case letters")
    assert f"without aws, amazon or cognito{why}." in line
    assert "Fix: choose a prefix of lower-case letters" in line


def test_no_prefix_fails_with_the_make_variable(aws: None) -> None:
    ecs_role_exists()
    status, lines, _ = run(["--alarm-email", EMAIL])
    assert status == 1
    assert "Fix: make preflight DOMAIN_PREFIX=your-desk-staff" in line_about(lines, "domain prefix")


def test_a_taken_prefix_fails_and_names_the_pool(aws: None) -> None:
    ecs_role_exists()
    pool = take_domain(PREFIX)
    status, lines, _ = run(ready())
    assert status == 1
    line = line_about(lines, "domain prefix")
    assert line.startswith(f"FAIL  the domain prefix {PREFIX} is taken in {REGION} (by the user pool {pool}).")
    assert "Fix: choose another prefix" in line


def test_a_prefix_taken_in_another_region_is_free_here(aws: None) -> None:
    ecs_role_exists()
    take_domain(PREFIX, region="eu-west-2")
    status, lines, _ = run(ready())
    assert status == 0
    assert f"ok    the domain prefix {PREFIX} keeps Cognito's rules and is free in {REGION}." in lines


# --- this machine: Python 3.12 and Docker, through the injected runner -------------------------------


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ((127, "python3.12: command not found"), "FAIL  python3.12 is not on PATH"),
        ((0, "Python 3.11.9"), "FAIL  python3.12 --version did not answer Python 3.12 (Python 3.11.9)."),
        ((0, "Python 3.12.8"), "ok    Python 3.12.8 is on PATH"),
    ],
)
def test_python_3_12_is_asked_of_the_runner(aws: None, answer: tuple[int, str], says: str) -> None:
    ecs_role_exists()
    runner = FakeRunner({("python3.12", "--version"): answer})
    status, lines, _ = run(ready(), runner=runner)
    assert status == (0 if says.startswith("ok") else 1)
    line = line_about(lines, "ython")
    assert line.startswith(says)
    assert ("Fix: install Python 3.12" in line) is (status == 1)
    assert ("python3.12", "--version") in runner.commands


@pytest.mark.parametrize(
    ("answer", "says", "fix"),
    [
        ((127, "docker: command not found"), "FAIL  Docker is not installed", "Fix: install Docker with Buildx"),
        (
            (1, "Client:\n Version: 28.2.2\nCannot connect to the Docker daemon at unix:///var/run/docker.sock."),
            "FAIL  Docker's daemon does not answer (Cannot connect to the Docker daemon at unix:///var/run/docker.sock).",
            "Fix: start Docker",
        ),
        ((0, "Client:\nServer:"), "ok    Docker answers", ""),
    ],
)
def test_docker_is_asked_of_the_runner(aws: None, answer: tuple[int, str], says: str, fix: str) -> None:
    ecs_role_exists()
    runner = FakeRunner({("docker", "version"): answer})
    status, lines, _ = run(ready(), runner=runner)
    assert status == (1 if fix else 0)
    line = line_about(lines, "Docker")
    assert line.startswith(says)
    assert fix in line
    assert ("docker", "version") in runner.commands


def test_the_default_runner_runs_the_command_and_reports_a_missing_one() -> None:
    status, output = preflight.run_command(["python3", "-c", "import sys; print('out'); sys.exit(3)"])
    assert (status, output) == (3, "out")
    assert preflight.run_command(["no-such-program-for-preflight"])[0] == 127


# --- the alarm address --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "ok"),
    [("", False), ("desk-alarms", False), ("desk@localhost", False), ("a b@example.org", False), (EMAIL, True)],
)
def test_the_alarm_address_must_be_set(aws: None, address: str, ok: bool) -> None:
    ecs_role_exists()
    status, lines, _ = run(["--domain-prefix", PREFIX, "--alarm-email", address])
    assert status == (0 if ok else 1)
    line = lines[-1]
    assert line.startswith("ok    alarms and the budget's alerts go to" if ok else "FAIL  ")
    assert ("Fix: make preflight ALARM_EMAIL=you@example.org" in line) is not ok


def test_check_lines_have_one_sentence_and_a_fix_only_on_failure() -> None:
    assert Check(ok=True, says="fine").line() == "ok    fine."
    assert Check(ok=False, says="broken", fix="mend it.").line() == "FAIL  broken. Fix: mend it."


# --- make preflight and python -m ops preflight ------------------------------------------------------


def make_command(*variables: str) -> list[str]:
    """The command `make preflight` runs (make -n, the operator tools' venv taken as built)."""
    result = subprocess.run(
        ["make", "-s", "-n", "-o", ".venv-ops/.installed", "preflight", *variables],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return shlex.split(result.stdout.replace("\\\n", " "))


def test_make_preflight_passes_its_variables_and_runs_on_moto(aws: None) -> None:
    command = make_command(
        "REGION=eu-west-2",
        f"DOMAIN_PREFIX={PREFIX}",
        f"ALARM_EMAIL={EMAIL}",
        "GPU_INSTANCE_TYPES=g6.xlarge,g5.xlarge,g5.2xlarge",
        "FIX=1",
    )
    assert command[:4] == [".venv-ops/bin/python", "-m", "ops", "preflight"]
    argv = command[4:]
    assert argv == [
        "--region",
        "eu-west-2",
        "--domain-prefix",
        PREFIX,
        "--alarm-email",
        EMAIL,
        "--gpu-instance-types",
        "g6.xlarge,g5.xlarge,g5.2xlarge",
        "--fix",
    ]
    account = Account()
    status, lines, summary = run(argv, account)
    assert status == 0, lines
    assert account.regions == ["eu-west-2"]
    assert summary == "preflight: all 9 checks passed in eu-west-2."


def test_make_preflight_without_variables_passes_no_options() -> None:
    assert make_command() == [".venv-ops/bin/python", "-m", "ops", "preflight"]


def test_python_m_ops_preflight_dispatches(
    aws: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ecs_role_exists()
    account = Account(lambda_limit=10)
    monkeypatch.setattr(preflight.Clients, "for_region", account.connect)
    monkeypatch.setattr(preflight, "run_command", FakeRunner())
    assert ops_main(["preflight", *ready(alarm_email="not-an-address")]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^warn  the Lambda concurrency quota in us-east-1 is 10, below", out, flags=re.MULTILINE)
    assert out.rstrip().endswith("preflight: 1 of 9 checks failed in us-east-1, 1 more warn.")
