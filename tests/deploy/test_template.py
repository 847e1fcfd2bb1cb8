"""Checks on the SAM template: cfn-lint clean, `sam build` complete, and the wiring the rest of the
project relies on, including what cfn-lint cannot see inside SAM resources (event sources, policies).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode
from commands import run_command

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"

FUNCTIONS = {
    "TurnApiFunction": {"CodeUri": "functions/turn_api/", "Handler": "turn_api.lambda_handler"},
    "StaffApiFunction": {"CodeUri": "functions/staff_api/", "Handler": "staff_api.lambda_handler"},
    "DispatchTurnFunction": {"CodeUri": "functions/dispatch_turn/", "Handler": "dispatch_turn.lambda_handler"},
    "ScreenReplyFunction": {"CodeUri": "functions/screen_reply/", "Handler": "screen_reply.lambda_handler"},
    "SweepTurnsFunction": {"CodeUri": "functions/sweep_turns/", "Handler": "sweep_turns.lambda_handler"},
    "RealizerSwitchFunction": {"CodeUri": "functions/realizer_switch/", "Handler": "realizer_switch.lambda_handler"},
}
SERVICE_NAMES = {
    "TurnApiFunction": "turn_api",
    "StaffApiFunction": "staff_api",
    "DispatchTurnFunction": "dispatch_turn",
    "ScreenReplyFunction": "screen_reply",
    "SweepTurnsFunction": "sweep_turns",
    "RealizerSwitchFunction": "realizer_switch",
}
REQUIRED_ENV = {
    "TurnApiFunction": {
        "TABLE_NAME",
        "DOMAIN_PACK_DIR",
        "RETENTION_DAYS",
        "REPLY_DEADLINE_SECONDS",
        "LOG_LEVEL",
    },
    "DispatchTurnFunction": {
        "TABLE_NAME",
        "REALIZE_QUEUE_URL",
        "SCREEN_QUEUE_URL",
        "DOMAIN_PACK_DIR",
        "REPLY_DEADLINE_SECONDS",
        "LOG_LEVEL",
    },
    "ScreenReplyFunction": {"TABLE_NAME", "DOMAIN_PACK_DIR", "REPLY_RETENTION_HOURS", "SCREEN_PROFILE", "LOG_LEVEL"},
    "SweepTurnsFunction": {
        "TABLE_NAME",
        "DOMAIN_PACK_DIR",
        "REPLY_DEADLINE_SECONDS",
        "SWEEP_GRACE_SECONDS",
        "DISPATCH_FAILURE_QUEUE_URL",
        "LOG_LEVEL",
    },
    "RealizerSwitchFunction": {"TABLE_NAME", "REALIZER_MIN_TASKS", "REALIZER_MAX_TASKS", "LOG_LEVEL"},
    "StaffApiFunction": {
        "TABLE_NAME",
        "DOMAIN_PACK_DIR",
        "STAFF_GROUP",
        "CLAIM_SECONDS",
        "STAFF_MESSAGE_RETENTION_DAYS",
        "AUDIT_RETENTION_DAYS",
        "AUDIT_BUCKET",
        "LOG_LEVEL",
    },
}
# SAM policy templates whose expansions name their actions one by one (no "*" in any action), each
# scoped by its parameter to one resource. SQSSendMessagePolicy is not here: it grants "sqs:SendMessage*".
SCOPED_POLICY_TEMPLATES = {
    "DynamoDBCrudPolicy",
    "DynamoDBReadPolicy",
    "DynamoDBWritePolicy",
    "SQSPollerPolicy",
}
DEAD_LETTER_RETENTION_S = 14 * 24 * 3600
# Queues that hold what an event source mapping or an EventBridge rule gave up on, not work.
FAILURE_DESTINATIONS = {"DispatchFailureQueue", "EventRuleDeadLetterQueue"}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    """The template as cfn-lint decodes it (short-form intrinsics such as !GetAtt become dicts)."""
    decoded, matches = decode(str(TEMPLATE))
    assert not matches, [str(match) for match in matches]
    return decoded


def resources_of_type(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    """Logical id -> resource, for every resource of the given type."""
    return {name: res for name, res in template["Resources"].items() if res["Type"] == resource_type}


def merge_globals(global_value: Any, local_value: Any) -> Any:
    """Merge like SAM Globals: maps merge key by key, lists are concatenated, the resource's scalars win."""
    if isinstance(global_value, dict) and isinstance(local_value, dict):
        merged = dict(global_value)
        for key, value in local_value.items():
            merged[key] = merge_globals(global_value[key], value) if key in global_value else value
        return merged
    if isinstance(global_value, list) and isinstance(local_value, list):
        return [*global_value, *local_value]
    return local_value


def function_properties(template: dict[str, Any], name: str) -> dict[str, Any]:
    """A function's properties with the template's Globals.Function applied."""
    resource = template["Resources"][name]
    assert resource["Type"] == "AWS::Serverless::Function"
    return merge_globals(template.get("Globals", {}).get("Function", {}), resource["Properties"])


def function_environment(template: dict[str, Any], name: str) -> dict[str, Any]:
    """The environment variables a function gets after Globals are applied."""
    return function_properties(template, name).get("Environment", {}).get("Variables", {})


def referenced_id(value: Any) -> str | None:
    """The logical id behind a Ref or Fn::GetAtt value, else None."""
    if isinstance(value, dict) and "Ref" in value:
        return value["Ref"]
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        return target[0] if isinstance(target, list) else str(target).split(".", 1)[0]
    return None


def as_list(value: Any) -> list[Any]:
    """A scalar as a one-item list; a list unchanged."""
    return value if isinstance(value, list) else [value]


def iam_statements(node: Any) -> Iterator[dict[str, Any]]:
    """Every IAM policy statement anywhere under node (function Policies, IAM resources, ...)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Statement":
                yield from (statement for statement in as_list(value) if isinstance(statement, dict))
            else:
                yield from iam_statements(value)
    elif isinstance(node, list):
        for item in node:
            yield from iam_statements(item)


def test_cfn_lint_passes() -> None:
    """cfn-lint (the one installed for this interpreter) reports no error and no warning."""
    runner = "import sys; from cfnlint.runner import main; sys.exit(main())"
    result = subprocess.run(
        [sys.executable, "-c", runner, str(TEMPLATE)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_runs_python312_with_the_dialogue_layer(template: dict[str, Any], name: str) -> None:
    """Every function keeps its fixed code location and handler, runs python3.12 and uses the layer."""
    props = function_properties(template, name)
    assert props["CodeUri"] == FUNCTIONS[name]["CodeUri"]
    assert props["Handler"] == FUNCTIONS[name]["Handler"]
    assert props["Runtime"] == "python3.12"
    assert {"Ref": "DialogueLayer"} in props["Layers"]


def test_layer_is_built_by_its_makefile_with_the_domain_pack(template: dict[str, Any]) -> None:
    """The layer is a makefile build for the functions' runtime and architecture that ships every desk."""
    layer = template["Resources"]["DialogueLayer"]
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Properties"]["ContentUri"] == "layers/dialogue/"
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    assert "python3.12" in layer["Properties"]["CompatibleRuntimes"]
    for name in FUNCTIONS:
        architectures = function_properties(template, name)["Architectures"]
        assert set(architectures) <= set(layer["Properties"]["CompatibleArchitectures"])
    makefile = (ROOT / layer["Properties"]["ContentUri"] / "Makefile").read_text()
    assert re.search(r"^build-DialogueLayer:", makefile, re.MULTILINE)
    assert "$(wildcard $(DATA_DIR)/*/domain.toml)" in makefile
    assert '$(ARTIFACTS_DIR)/python"' in makefile


def test_screen_queue_visibility_is_six_times_the_function_timeout(template: dict[str, Any]) -> None:
    """A message stays hidden long enough for Lambda's retries of the batch holding it."""
    timeout = function_properties(template, "ScreenReplyFunction")["Timeout"]
    visibility = template["Resources"]["ScreenQueue"]["Properties"]["VisibilityTimeout"]
    assert visibility == 6 * timeout


def test_every_work_queue_redrives_to_a_dead_letter_queue(template: dict[str, Any]) -> None:
    """Each queue is either a DLQ (some queue redrives to it) or redrives to a DLQ after 5 receives."""
    queues = resources_of_type(template, "AWS::SQS::Queue")
    redrives = {
        name: queue["Properties"]["RedrivePolicy"]
        for name, queue in queues.items()
        if "RedrivePolicy" in queue.get("Properties", {})
    }
    dead_letter_queues = {referenced_id(policy["deadLetterTargetArn"]) for policy in redrives.values()}
    work_queues = set(queues) - dead_letter_queues - FAILURE_DESTINATIONS
    assert work_queues == {"RealizeQueue", "ScreenQueue"}
    for name in work_queues:
        assert name in redrives, f"{name} has no RedrivePolicy"
        target = referenced_id(redrives[name]["deadLetterTargetArn"])
        assert target in queues, f"{name} redrives to {target}, which is no queue of this template"
        assert target not in redrives, f"{name} redrives to {target}, which is no DLQ"
        assert redrives[name]["maxReceiveCount"] == 5


def test_dead_letter_queues_keep_messages_fourteen_days(template: dict[str, Any]) -> None:
    """Poison messages stay long enough to be inspected and redriven."""
    for name in ("RealizeDeadLetterQueue", "ScreenDeadLetterQueue", *FAILURE_DESTINATIONS):
        assert template["Resources"][name]["Properties"]["MessageRetentionPeriod"] == DEAD_LETTER_RETENTION_S


def _resolver_routes(module: str) -> set[tuple[str, str]]:
    """(method, path) of every route a function's resolver declares, from its OpenAPI document."""
    import importlib

    schema = importlib.import_module(module).app.get_openapi_schema()
    return {
        (method.upper(), path) for path, item in schema.paths.items() for method in item.model_dump(exclude_none=True)
    }


def test_http_api_routes(template: dict[str, Any]) -> None:
    """ConversationApi serves the resident's routes through TurnApiFunction, public, and the staff routes
    through StaffApiFunction, each behind the StaffJwt authorizer: the same routes as each resolver
    declares and devstack serves."""
    from devstack.events import STAFF_ROUTES, TURN_ROUTES

    assert template["Resources"]["ConversationApi"]["Type"] == "AWS::Serverless::HttpApi"
    routes: dict[str, set[tuple[str, str]]] = {name: set() for name in FUNCTIONS}
    for name in FUNCTIONS:
        for event in function_properties(template, name).get("Events", {}).values():
            if event["Type"] == "HttpApi":
                assert referenced_id(event["Properties"]["ApiId"]) == "ConversationApi"
                route = (event["Properties"]["Method"], event["Properties"]["Path"])
                routes[name].add(route)
                authorizer = event["Properties"].get("Auth", {}).get("Authorizer")
                assert authorizer == ("StaffJwt" if route[1].startswith("/staff/") else None), route
    assert routes["TurnApiFunction"] == set(TURN_ROUTES) == _resolver_routes("turn_api")
    assert routes["StaffApiFunction"] == set(STAFF_ROUTES) == _resolver_routes("staff_api")
    assert not routes["DispatchTurnFunction"] and not routes["ScreenReplyFunction"]


def test_staff_sign_in_is_cognito_with_the_group_the_function_checks(template: dict[str, Any]) -> None:
    """Admin-created users only; the desk-staff group the staff function requires; managed login; a public
    client for the authorization-code flow (with PKCE: no secret); the JWT authorizer trusts that pool
    and that client only."""
    from dialogue.settings import Settings

    resources = template["Resources"]
    pool = resources["StaffUserPool"]["Properties"]
    assert pool["AdminCreateUserConfig"] == {"AllowAdminCreateUserOnly": True}
    group = resources["StaffGroup"]["Properties"]
    assert group["GroupName"] == Settings.model_fields["staff_group"].default == "desk-staff"
    assert referenced_id(group["UserPoolId"]) == "StaffUserPool"
    assert referenced_id(function_environment(template, "StaffApiFunction")["STAFF_GROUP"]) == "StaffGroup"
    domain = resources["StaffSignInDomain"]["Properties"]
    assert domain["ManagedLoginVersion"] == 2 and referenced_id(domain["UserPoolId"]) == "StaffUserPool"
    client = resources["StaffConsoleClient"]["Properties"]
    assert client["GenerateSecret"] is False
    # The code flow once a return address is given (test_localhost_sign_in_only_when_a_parameter_asks).
    assert client["AllowedOAuthFlows"] == {"Fn::If": ["HasStaffSignIn", ["code"], {"Ref": "AWS::NoValue"}]}
    assert client["AllowedOAuthFlowsUserPoolClient"] == {"Fn::If": ["HasStaffSignIn", True, False]}
    assert client["SupportedIdentityProviders"] == ["COGNITO"]
    authorizer = resources["ConversationApi"]["Properties"]["Auth"]["Authorizers"]["StaffJwt"]
    assert authorizer["IdentitySource"] == "$request.header.Authorization"
    assert "${StaffUserPool}" in authorizer["JwtConfiguration"]["issuer"]["Fn::Sub"]
    assert [referenced_id(a) for a in authorizer["JwtConfiguration"]["audience"]] == ["StaffConsoleClient"]
    assert "DefaultAuthorizer" not in resources["ConversationApi"]["Properties"]["Auth"]  # residents are public


def test_the_staff_function_lists_from_the_queue_index_and_never_changes_an_audit_item(
    template: dict[str, Any],
) -> None:
    from dialogue.aws.table import OPEN_QUEUE_INDEX, QUEUE_INDEX

    statements = list(iam_statements(function_properties(template, "StaffApiFunction").get("Policies", [])))
    on_index = [
        s for s in statements
        if any("Fn::Sub" in r and "/index/" in r["Fn::Sub"] for r in as_list(s["Resource"]))
    ]  # fmt: skip
    assert [(s["Effect"], s["Action"]) for s in on_index] == [("Allow", ["dynamodb:Query"])]
    indexes = {r["Fn::Sub"].rsplit("/index/", 1)[1] for r in as_list(on_index[0]["Resource"])}
    assert indexes == {QUEUE_INDEX, OPEN_QUEUE_INDEX}
    assert not any("dynamodb:Scan" in as_list(s["Action"]) for s in statements)


def iam_decision(statements: list[dict[str, Any]], action: str, resource: str, leading_key: str) -> str:
    """What IAM decides for one DynamoDB request on the conversation table ("table") or one of its indexes
    ("index/NAME") under one partition key: "deny" (an explicit Deny matches, whatever allows it),
    "allow", or "implicit deny". It reads the conditions these roles use, and fails on any other."""

    def on(resource_value: Any) -> bool:
        if referenced_id(resource_value) == "ConversationTable":
            return resource == "table"
        sub = resource_value.get("Fn::Sub", "") if isinstance(resource_value, dict) else ""
        return sub.startswith("${ConversationTable.Arn}/") and sub.split("/", 1)[1] == resource

    def holds(condition: dict[str, Any]) -> bool:
        for operator, tests in condition.items():
            ((key, patterns),) = tests.items()
            assert key == "dynamodb:LeadingKeys", f"the evaluator does not read {key}"
            quantifier, test = operator.split(":")
            assert quantifier in ("ForAnyValue", "ForAllValues") and test in ("StringEquals", "StringLike"), operator
            like = test == "StringLike"
            if not any(fnmatch.fnmatchcase(leading_key, p) if like else leading_key == p for p in as_list(patterns)):
                return False  # one key: ForAnyValue and ForAllValues both ask whether it matches
        return True

    matching = [
        s["Effect"]
        for s in statements
        if any(fnmatch.fnmatchcase(action, a) for a in as_list(s["Action"]))
        and any(on(r) for r in as_list(s["Resource"]))
        and holds(s.get("Condition", {}))
    ]
    return "deny" if "Deny" in matching else "allow" if "Allow" in matching else "implicit deny"


@pytest.mark.parametrize(
    ("action", "resource", "leading_key", "decision"),
    [
        # An audit link is put once, read back, and never changed or deleted, though the role updates items.
        ("dynamodb:PutItem", "table", "AUDIT#c1", "allow"),
        ("dynamodb:Query", "table", "AUDIT#c1", "allow"),
        ("dynamodb:UpdateItem", "table", "AUDIT#c1", "deny"),
        ("dynamodb:DeleteItem", "table", "AUDIT#c1", "deny"),
        # A decision updates the turn; staff never delete one, nor query a conversation or scan the table.
        ("dynamodb:UpdateItem", "table", "CONV#c1", "allow"),
        ("dynamodb:DeleteItem", "table", "CONV#c1", "implicit deny"),
        ("dynamodb:Query", "table", "CONV#c1", "implicit deny"),
        ("dynamodb:Scan", "table", "CONV#c1", "implicit deny"),
        # The figures are one partition; the queues are their two indexes.
        ("dynamodb:Query", "table", "STATS", "allow"),
        ("dynamodb:Query", "index/queue-index", "review", "allow"),
        ("dynamodb:Query", "index/open-queue-index", "handoff", "allow"),
        ("dynamodb:Query", "index/pending-turn-index", "pending", "implicit deny"),
    ],
)
def test_what_the_staff_role_may_do_on_the_table(
    template: dict[str, Any], action: str, resource: str, leading_key: str, decision: str
) -> None:
    statements = list(iam_statements(function_properties(template, "StaffApiFunction").get("Policies", [])))
    assert iam_decision(statements, action, resource, leading_key) == decision


def test_the_staff_function_queries_the_table_for_the_figures_partition_alone(template: dict[str, Any]) -> None:
    """The figures' last days are one Query on the table (dialogue.aws.figures.desk_counters): the role may
    query the table itself only under the STATS leading key (or another statement's own leading keys)."""
    from dialogue.aws.figures import STATS_PK

    statements = list(iam_statements(function_properties(template, "StaffApiFunction").get("Policies", [])))
    (stats,) = [s for s in statements if s.get("Sid") == "ReadStats"]
    assert (stats["Effect"], stats["Action"]) == ("Allow", ["dynamodb:Query"])
    assert stats["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [STATS_PK]}}

    def the_table(resource: Any) -> bool:
        return isinstance(resource, dict) and resource.get("Fn::GetAtt", [""])[0] == "ConversationTable"

    on_table = [
        s
        for s in statements
        if "dynamodb:Query" in as_list(s["Action"]) and any(the_table(r) for r in as_list(s["Resource"]))
    ]
    assert stats in on_table
    for statement in on_table:
        ((operator, keys),) = statement["Condition"].items()
        assert operator.startswith("ForAllValues:") and list(keys) == ["dynamodb:LeadingKeys"]


@pytest.mark.parametrize("function", ["TurnApiFunction", "ScreenReplyFunction", "SweepTurnsFunction"])
def test_the_resident_side_roles_reach_conversation_partitions_only(template: dict[str, Any], function: str) -> None:
    """The turn and screen functions may touch CONV# partitions alone: an audit item (AUDIT#) is beyond
    them, whatever their code does, so only the staff function writes the audit."""
    statements = list(iam_statements(function_properties(template, function).get("Policies", [])))

    def on_conversations(resource: Any) -> bool:
        return isinstance(resource, dict) and resource.get("Fn::GetAtt", [""])[0] == "ConversationTable"

    on_table = [s for s in statements if any(on_conversations(r) for r in as_list(s["Resource"]))]
    assert on_table, function
    audit_copy_repair = {  # the sweeper's alone: the pending-copy markers read and cleared, audit links read
        (("dynamodb:DeleteItem", "dynamodb:Query"), "ForAllValues:StringEquals", "AUDITCOPY#pending"),
        (("dynamodb:Query",), "ForAllValues:StringLike", "AUDIT#*"),
    }
    for statement in on_table:
        assert statement["Effect"] == "Allow"
        assert not {"dynamodb:Scan", "dynamodb:BatchWriteItem"} & set(as_list(statement["Action"]))
        if statement["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["CONV#*"]}}:
            continue
        assert function == "SweepTurnsFunction", statement
        ((operator, keys),) = statement["Condition"].items()
        (leading,) = keys["dynamodb:LeadingKeys"]
        assert (tuple(sorted(as_list(statement["Action"]))), operator, leading) in audit_copy_repair, statement


def test_the_tables_are_the_ones_devstack_tests_run_on(template: dict[str, Any]) -> None:
    """Keys, key types, TTL attribute and stream of the table are those devstack creates on moto, so every
    moto test runs against the deployed shape."""
    import boto3
    from moto import mock_aws

    from devstack.stack import TABLE_NAME, create_resources

    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        create_resources(dynamodb, boto3.client("sqs", region_name="us-east-1"))
        local = {
            name: (
                dynamodb.describe_table(TableName=table)["Table"],
                dynamodb.describe_time_to_live(TableName=table)["TimeToLiveDescription"]["AttributeName"],
            )
            for name, table in (("ConversationTable", TABLE_NAME),)
        }
    for name, (table, ttl_attribute) in local.items():
        deployed = template["Resources"][name]["Properties"]
        assert deployed["KeySchema"] == table["KeySchema"], name
        assert sorted(map(str, deployed["AttributeDefinitions"])) == sorted(map(str, table["AttributeDefinitions"]))
        assert deployed["TimeToLiveSpecification"] == {"AttributeName": ttl_attribute, "Enabled": True}, name
        local_indexes = [
            {key: index[key] for key in ("IndexName", "KeySchema", "Projection")}
            for index in table.get("GlobalSecondaryIndexes", [])
        ]
        assert deployed.get("GlobalSecondaryIndexes", []) == local_indexes, name
        view = table.get("StreamSpecification", {}).get("StreamViewType")
        assert deployed.get("StreamSpecification", {}).get("StreamViewType") == view, name


def test_no_iam_statement_uses_a_wildcard_action(template: dict[str, Any]) -> None:
    """No statement grants "*", "service:*" or "service:Prefix*", and none uses NotAction."""
    for statement in iam_statements(template):
        assert "NotAction" not in statement, statement
        for action in as_list(statement.get("Action", [])):
            assert isinstance(action, str), statement
            assert "*" not in action, statement


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_policies_are_statements_or_scoped_templates(template: dict[str, Any], name: str) -> None:
    """Policies are inline statements or resource-scoped SAM policy templates, never managed policies."""
    for policy in function_properties(template, name).get("Policies", []):
        assert isinstance(policy, dict), f"{name} uses the policy {policy!r}"
        if "Statement" in policy:
            continue
        ((template_name, parameters),) = policy.items()
        assert template_name in SCOPED_POLICY_TEMPLATES, policy
        assert parameters, policy
        assert all(str(value) != "*" for value in parameters.values()), policy


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_environment_keeps_bodies_out_of_logs(template: dict[str, Any], name: str) -> None:
    """Powertools never logs the incoming event nor traces the response, and names the service."""
    env = function_environment(template, name)
    assert env["POWERTOOLS_LOGGER_LOG_EVENT"] == "false"
    assert env["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"
    assert env["POWERTOOLS_SERVICE_NAME"] == SERVICE_NAMES[name]
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == DESK_NAMESPACE_SUB
    assert env["DOMAIN_PACK_DIR"] == {"Fn::Sub": "/opt/data/${DomainPack}"}
    assert REQUIRED_ENV[name] <= set(env)


def test_the_desk_is_a_parameter_every_deployable_reads(template: dict[str, Any]) -> None:
    """One parameter picks the desk for the functions and the realizer; its default is the configured desk."""
    import tomllib

    parameter = template["Parameters"]["DomainPack"]
    default = tomllib.loads((ROOT / "data" / "packs.toml").read_text())["default"]
    assert parameter["Default"] == default
    assert re.fullmatch(parameter["AllowedPattern"], default)
    assert not re.fullmatch(parameter["AllowedPattern"], "../etc")
    for desk in (ROOT / "data").glob("*/domain.toml"):
        assert re.fullmatch(parameter["AllowedPattern"], desk.parent.name)
    (container,) = template["Resources"]["RealizerTaskDefinition"]["Properties"]["ContainerDefinitions"]
    env = {entry["Name"]: entry["Value"] for entry in container["Environment"]}
    assert env["DOMAIN_PACK_DIR"] == {"Fn::Sub": "/opt/realizer/data/${DomainPack}"}
    assert template["Outputs"]["DomainPack"]["Value"] == {"Ref": "DomainPack"}


def test_the_deployed_stack_screens_with_the_desk_profile_by_default(template: dict[str, Any]) -> None:
    parameter = template["Parameters"]["ScreenProfile"]
    assert parameter["Default"] == "desk"
    assert set(parameter["AllowedValues"]) == {"desk", "lesson"}
    assert function_environment(template, "ScreenReplyFunction")["SCREEN_PROFILE"] == {"Ref": "ScreenProfile"}


# --- checks cfn-lint cannot make inside SAM resources, and the GPU realizer's wiring ---------------

LAMBDA_RUNTIME = "python3.12"
# Actions that support no resource-level permissions, so "*" is their only resource.
RESOURCELESS_ACTIONS = {"ecr:GetAuthorizationToken", "ecs:DiscoverPollEndpoint"}
# Actions allowed on "*" only with a condition that pins them to this stack's cluster.
CONDITIONED_ACTIONS = {"ecs:Poll", "ecs:StartTelemetrySession"}
# The desk's own metrics' namespace: the stack's name in it, so two desks in one account and region
# neither mix their figures nor set off each other's alarms (issue 42, item 4).
DESK_NAMESPACE = "EnrollmentDesk/${AWS::StackName}"
DESK_NAMESPACE_SUB = {"Fn::Sub": DESK_NAMESPACE}


def namespace_of(value: Any) -> str:
    """A metric's namespace as text: AWS's as they are, the desk's own as its Fn::Sub's text."""
    if isinstance(value, dict) and set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
        return str(value["Fn::Sub"])
    assert isinstance(value, str), value
    return value


# CloudWatch metrics the scaling policies and alarms may use, by namespace: a misspelt metric name
# deploys cleanly and never gets a datapoint, so the alarm or policy silently never acts.
KNOWN_METRICS = {
    "AWS/SQS": {
        "ApproximateNumberOfMessagesVisible",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateAgeOfOldestMessage",
        # Counters, each minute's sums: the idle and not-serving alarms read activity (issue 42).
        "NumberOfMessagesSent",
        "NumberOfMessagesReceived",
        "NumberOfEmptyReceives",
    },
    "ECS/ContainerInsights": {"RunningTaskCount", "DesiredTaskCount"},
    "AWS/Lambda": {"Errors", "Throttles"},
    "AWS/ApiGateway": {"Count", "4xx", "5xx"},
    # The group's MetricsCollection.
    "AWS/AutoScaling": {"GroupDesiredCapacity", "GroupInServiceInstances", "GroupPendingInstances"},
    # The metrics the functions emit (Powertools, EMF): every add_metric(name="...") in their code and
    # their layer's (the staff store counts a failed audit copy).
    DESK_NAMESPACE: {
        name
        for path in [*(ROOT / "functions").rglob("*.py"), *(ROOT / "layers" / "dialogue" / "dialogue").rglob("*.py")]
        for name in re.findall(r'add_metric\(name="(\w+)"', path.read_text())
    },
}
DYNAMODB_ACTIONS = {
    "get_item": "dynamodb:GetItem",
    "put_item": "dynamodb:PutItem",
    "update_item": "dynamodb:UpdateItem",
    "delete_item": "dynamodb:DeleteItem",
    "query": "dynamodb:Query",
    "scan": "dynamodb:Scan",
    "batch_get_item": "dynamodb:BatchGetItem",
    "batch_write_item": "dynamodb:BatchWriteItem",
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
    "Get": "dynamodb:GetItem",
}
REQUIRED_OUTPUTS = {
    "PagesUrl",
    "ConversationTableName",
    "RealizeQueueUrl",
    "ScreenQueueUrl",
    "RealizeDeadLetterQueueUrl",
    "ScreenDeadLetterQueueUrl",
    "DispatchFailureQueueUrl",
    "RealizerClusterName",
    "RealizerRepositoryUri",
    "GpuAutoScalingGroupName",
    "DashboardUrl",
    "StaffUserPoolId",
    "StaffConsoleClientId",
    "StaffSignInUrl",
    "StaffTokenIssuer",
}


def only_resource(template: dict[str, Any], resource_type: str) -> tuple[str, dict[str, Any]]:
    """The logical id and properties of the template's one resource of this type."""
    found = resources_of_type(template, resource_type)
    assert len(found) == 1, f"expected one {resource_type}, found {sorted(found)}"
    ((name, resource),) = found.items()
    return name, resource.get("Properties", {})


def realizer_container(template: dict[str, Any]) -> dict[str, Any]:
    _, task = only_resource(template, "AWS::ECS::TaskDefinition")
    (container,) = task["ContainerDefinitions"]
    return container


def statements_of(resource: dict[str, Any]) -> list[dict[str, Any]]:
    """The permission statements of an IAM role (not its trust policy)."""
    policies = resource["Properties"].get("Policies", [])
    return [statement for policy in policies for statement in iam_statements(policy["PolicyDocument"])]


def metric_stats(node: Any) -> Iterator[dict[str, Any]]:
    """Every CloudWatch metric (Namespace, MetricName, Dimensions) named anywhere under node."""
    if isinstance(node, dict):
        if "MetricName" in node and "Namespace" in node:
            yield node
        for value in node.values():
            yield from metric_stats(value)
    elif isinstance(node, list):
        for item in node:
            yield from metric_stats(item)


def dimension(metric: dict[str, Any], name: str) -> Any:
    (value,) = (d["Value"] for d in metric.get("Dimensions", []) if d["Name"] == name)
    return value


def test_every_function_runs_the_lambda_runtime(template: dict[str, Any]) -> None:
    """No function of any kind runs another runtime than python3.12, which `sam build` targets."""
    functions = {
        **resources_of_type(template, "AWS::Serverless::Function"),
        **resources_of_type(template, "AWS::Lambda::Function"),
    }
    assert set(functions) == set(FUNCTIONS)
    for name in functions:
        assert function_properties(template, name)["Runtime"] == LAMBDA_RUNTIME, name


def test_every_queue_and_stream_event_source_reports_partial_batch_failures(template: dict[str, Any]) -> None:
    """A failed record is retried alone: every SQS and stream event source (a SAM event or an explicit
    event source mapping) has ReportBatchItemFailures."""
    for name in FUNCTIONS:
        for event_id, event in function_properties(template, name).get("Events", {}).items():
            if event["Type"] in ("SQS", "DynamoDB"):
                assert event["Properties"].get("FunctionResponseTypes") == ["ReportBatchItemFailures"], event_id
    mappings = resources_of_type(template, "AWS::Lambda::EventSourceMapping")
    assert set(mappings) == {"ScreenReplyEventSource", "DispatchTurnFunctionPendingTurns"}
    for mapping_id, mapping in mappings.items():
        assert mapping["Properties"].get("FunctionResponseTypes") == ["ReportBatchItemFailures"], mapping_id


def test_the_screen_function_may_poll_its_own_queue_and_no_other(template: dict[str, Any]) -> None:
    """No function has a SAM SQS event (it attaches AWSLambdaSQSQueueExecutionRole: every queue of the
    account). The screen queue reaches the screen function's live alias through an explicit mapping, and
    the function's own statement grants what the mapping polls with, on that queue alone."""
    for name in FUNCTIONS:
        kinds = {event["Type"] for event in function_properties(template, name).get("Events", {}).values()}
        assert "SQS" not in kinds, name
    mapping = template["Resources"]["ScreenReplyEventSource"]["Properties"]
    assert referenced_id(mapping["EventSourceArn"]) == "ScreenQueue"
    assert mapping["FunctionName"] == {"Ref": "ScreenReplyFunction.Alias"}
    assert (mapping["BatchSize"], mapping["ScalingConfig"]["MaximumConcurrency"]) == (10, 5)
    statements = list(iam_statements(function_properties(template, "ScreenReplyFunction")["Policies"]))
    on_queues = [s for s in statements if any(str(a).startswith("sqs:") for a in as_list(s["Action"]))]
    (poll,) = on_queues
    assert poll["Effect"] == "Allow" and referenced_id(poll["Resource"]) == "ScreenQueue"
    assert {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"} <= set(poll["Action"])


def test_dead_letter_queues_outlive_their_sources(template: dict[str, Any]) -> None:
    """SQS keeps a message's first enqueue time in the DLQ, so the DLQ must keep messages longer."""
    queues = resources_of_type(template, "AWS::SQS::Queue")
    for name, queue in queues.items():
        redrive = queue["Properties"].get("RedrivePolicy")
        if redrive:
            dead_letter = queues[referenced_id(redrive["deadLetterTargetArn"])]["Properties"]
            assert dead_letter["MessageRetentionPeriod"] > queue["Properties"]["MessageRetentionPeriod"], name


def test_every_queue_is_encrypted(template: dict[str, Any]) -> None:
    for name, queue in resources_of_type(template, "AWS::SQS::Queue").items():
        props = queue["Properties"]
        assert props.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in props, name


def test_realize_queue_fits_the_worker_and_the_deadline(template: dict[str, Any]) -> None:
    """The realizer long-polls 20 s. A job whose worker died comes back after the visibility timeout,
    at most half the default reply deadline, so another worker can still answer it in time; a worker
    extends the jobs it is still working on every half timeout (its heartbeat), through a stop too."""
    props = template["Resources"]["RealizeQueue"]["Properties"]
    assert props["ReceiveMessageWaitTimeSeconds"] == 20
    assert 2 * props["VisibilityTimeout"] <= template["Parameters"]["ReplyDeadlineSeconds"]["Default"]


def test_devstack_queues_are_the_templates(template: dict[str, Any]) -> None:
    """The local stack's queues time out as the deployed ones do, so its fault tests mean the same."""
    from devstack.stack import REALIZE_VISIBILITY_TIMEOUT, SCREEN_VISIBILITY_TIMEOUT, STREAM_BATCH_SIZE

    resources = template["Resources"]
    assert resources["RealizeQueue"]["Properties"]["VisibilityTimeout"] == REALIZE_VISIBILITY_TIMEOUT
    assert resources["ScreenQueue"]["Properties"]["VisibilityTimeout"] == SCREEN_VISIBILITY_TIMEOUT
    assert resources["DispatchTurnFunctionPendingTurns"]["Properties"]["BatchSize"] == STREAM_BATCH_SIZE


def test_reply_deadline_fits_an_sqs_delay(template: dict[str, Any]) -> None:
    """The deadline is a delayed SQS message: SQS delays 900 s at most, and so does the settings model."""
    from dialogue.dispatch import MAX_SQS_DELAY_SECONDS
    from dialogue.settings import Settings

    parameter = template["Parameters"]["ReplyDeadlineSeconds"]
    assert parameter["MaxValue"] <= MAX_SQS_DELAY_SECONDS
    Settings(table_name="conversations", reply_deadline_seconds=MAX_SQS_DELAY_SECONDS)
    with pytest.raises(ValueError):
        Settings(table_name="conversations", reply_deadline_seconds=MAX_SQS_DELAY_SECONDS + 1)


def test_pending_turns_reach_the_dispatch_function_through_the_table_stream(template: dict[str, Any]) -> None:
    """The outbox: the table streams new images; the dispatch function reads them filtered to pending
    TURN inserts (the same pattern dialogue.dispatch and devstack apply), reports failed records,
    splits a failing batch, and sends what keeps failing to a queue an alarm watches."""
    from dialogue.aws.turns import PENDING_TURN_INSERTS

    table = template["Resources"]["ConversationTable"]["Properties"]
    assert table["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    # An explicit mapping (tests/deploy/test_gpu_capacity.py checks its scoped stream policy).
    assert "Events" not in function_properties(template, "DispatchTurnFunction")
    props = template["Resources"]["DispatchTurnFunctionPendingTurns"]["Properties"]
    assert props["EventSourceArn"] == {"Fn::GetAtt": ["ConversationTable", "StreamArn"]}
    assert props["FunctionName"] == {"Ref": "DispatchTurnFunction.Alias"}
    assert props["StartingPosition"] == "TRIM_HORIZON"
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["BisectBatchOnFunctionError"] is True
    ((pattern,),) = [[json.loads(f["Pattern"]) for f in props["FilterCriteria"]["Filters"]]]
    assert pattern == PENDING_TURN_INSERTS
    assert referenced_id(props["DestinationConfig"]["OnFailure"]["Destination"]) == "DispatchFailureQueue"
    # Only the dispatch function sends jobs: the turn API's one write is its transaction.
    senders = {
        name
        for name in FUNCTIONS
        for statement in iam_statements(function_properties(template, name).get("Policies", []))
        if "sqs:SendMessage" in as_list(statement["Action"])
        and "RealizeQueue"
        in {referenced_id(r) for r in as_list(statement["Resource"])}
        | set(json.dumps(statement["Resource"]).split('"'))
    }
    assert senders == {"DispatchTurnFunction"}


def test_tables_are_on_demand_recoverable_encrypted_and_expire(template: dict[str, Any]) -> None:
    expected_ttl = {"ConversationTable": "expires_at"}
    tables = resources_of_type(template, "AWS::DynamoDB::Table")
    assert set(tables) == set(expected_ttl)
    for name, table in tables.items():
        props = table["Properties"]
        assert props["BillingMode"] == "PAY_PER_REQUEST", name
        assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}, name
        assert props["SSESpecification"]["SSEEnabled"] is True, name
        assert props["TimeToLiveSpecification"] == {"AttributeName": expected_ttl[name], "Enabled": True}, name


def test_turn_function_gets_one_table_and_the_reply_deadline(template: dict[str, Any]) -> None:
    """The turn API's only table is the conversation table: its idempotency record is the REQUEST item
    written in the turn's transaction, not a second table."""
    env = function_environment(template, "TurnApiFunction")
    tables = {
        referenced_id(resource)
        for statement in iam_statements(function_properties(template, "TurnApiFunction").get("Policies", []))
        for resource in as_list(statement["Resource"])
        if referenced_id(resource) in resources_of_type(template, "AWS::DynamoDB::Table")
    }
    assert tables == {"ConversationTable"}
    assert "IDEMPOTENCY_TABLE_NAME" not in env
    assert referenced_id(env["REPLY_DEADLINE_SECONDS"]) == "ReplyDeadlineSeconds"
    assert "REALIZE_QUEUE_URL" not in env, "the turn API sends nothing"
    dispatch = function_environment(template, "DispatchTurnFunction")
    # This stack's realize queue unless it is on another stack's (test_a_desk_on_a_shared_realizer_...).
    condition, _shared, own = dispatch["REALIZE_QUEUE_URL"]["Fn::If"]
    assert condition == "UsesSharedRealizer" and referenced_id(own) == "RealizeQueue"
    assert referenced_id(dispatch["SCREEN_QUEUE_URL"]) == "ScreenQueue"
    assert referenced_id(dispatch["REPLY_DEADLINE_SECONDS"]) == "ReplyDeadlineSeconds"


def test_http_api_is_throttled_and_logs_no_bodies(template: dict[str, Any]) -> None:
    """The stage is throttled; the access log is one JSON object of request metadata, to a log group
    with retention, and names no variable that could carry a body or a header."""
    props = template["Resources"]["ConversationApi"]["Properties"]
    assert props["DefaultRouteSettings"]["ThrottlingRateLimit"] > 0
    assert props["DefaultRouteSettings"]["ThrottlingBurstLimit"] > 0
    settings = props["AccessLogSettings"]
    log_group = template["Resources"][referenced_id(settings["DestinationArn"])]
    assert log_group["Type"] == "AWS::Logs::LogGroup"
    assert "RetentionInDays" in log_group["Properties"]
    variables = re.findall(r"\$context\.([\w.]+)", settings["Format"])
    assert "requestId" in variables
    assert not [v for v in variables if re.search(r"body|header|authorizer|path|querystring", v, re.IGNORECASE)]
    assert isinstance(json.loads(settings["Format"]), dict)


def test_every_function_has_a_log_group_with_retention(template: dict[str, Any]) -> None:
    log_groups = resources_of_type(template, "AWS::Logs::LogGroup").values()
    for name in FUNCTIONS:
        names = [group["Properties"].get("LogGroupName") for group in log_groups]
        assert {"Fn::Sub": f"/aws/lambda/${{{name}}}"} in names, name
    assert all("RetentionInDays" in group["Properties"] for group in log_groups)


def test_every_role_names_its_actions(template: dict[str, Any]) -> None:
    """Roles carry inline statements only (no managed policy whose actions this file cannot see), and
    a statement on every resource ("*") holds only actions that support no resource or are conditioned."""
    for name, role in resources_of_type(template, "AWS::IAM::Role").items():
        assert "ManagedPolicyArns" not in role["Properties"], name
        for statement in statements_of(role):
            assert statement["Effect"] == "Allow"
            actions = set(as_list(statement["Action"]))
            if as_list(statement["Resource"]) == ["*"]:
                if "Condition" in statement:
                    assert actions <= CONDITIONED_ACTIONS, (name, statement)
                else:
                    assert actions <= RESOURCELESS_ACTIONS, (name, statement)


def test_realizer_task_role_is_least_privilege(template: dict[str, Any]) -> None:
    """The task may take jobs from the realize queue and send replies to the screen queue, nothing else
    (and, as a shared realizer, to the desks' listed: test_a_shared_realizer_answers_only_to_...)."""
    _truth, resolve = _shaped(template)
    grants = {
        (str(statement["Resource"]).split(".")[0], action)
        for statement in resolve(statements_of(template["Resources"]["RealizerTaskRole"]))
        for action in as_list(statement["Action"])
    }
    assert grants == {
        ("RealizeQueue", "sqs:ReceiveMessage"),
        ("RealizeQueue", "sqs:DeleteMessage"),
        ("RealizeQueue", "sqs:ChangeMessageVisibility"),
        ("RealizeQueue", "sqs:GetQueueAttributes"),
        ("ScreenQueue", "sqs:SendMessage"),
    }


def test_functions_may_do_what_the_store_does(template: dict[str, Any]) -> None:
    """Each DynamoDB call the store makes is granted on the conversation table by some function's
    policy: a call nobody may make deploys cleanly and fails only in AWS."""
    import inspect

    from dialogue.aws import audit, figures, queues, replies, stores, table, turns

    # The modules of every concern the stores are made of.
    modules = {inspect.getsourcefile(module) for module in (audit, figures, queues, replies, stores, table, turns)}
    source = "".join(Path(str(module)).read_text() for module in sorted(map(str, modules)))
    calls = set(re.findall(r'_call\(\s*"(\w+)"', source)) | set(re.findall(r"_client\.(\w+)\(", source))
    calls |= set(re.findall(r'\{\s*"(Put|Update|Delete|ConditionCheck|Get)"\s*:', source))
    calls -= {"transact_write_items", "transact_get_items"}
    needed = {DYNAMODB_ACTIONS[call] for call in calls}
    granted = {
        action
        for name in FUNCTIONS
        for statement in iam_statements(function_properties(template, name).get("Policies", []))
        if statement["Effect"] == "Allow"
        and (referenced_id(statement["Resource"]) == "ConversationTable" or "Fn::Sub" in statement["Resource"])
        for action in as_list(statement["Action"])
    }
    assert needed and needed <= granted, needed - granted


def test_realizer_runs_on_a_gpu_capacity_provider(template: dict[str, Any]) -> None:
    """Cluster with Container Insights, the ECS GPU AMI from SSM, an ASG from zero that ECS scales and
    protects, the capacity provider associated with the cluster and used by the service."""
    cluster_id, cluster = only_resource(template, "AWS::ECS::Cluster")
    assert {"Name": "containerInsights", "Value": "enabled"} in cluster["ClusterSettings"]

    ami = template["Parameters"]["GpuAmiId"]
    assert ami["Type"] == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"
    assert ami["Default"] == "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id"
    template_id, launch = only_resource(template, "AWS::EC2::LaunchTemplate")
    data = launch["LaunchTemplateData"]
    assert referenced_id(data["ImageId"]) == "GpuAmiId"
    assert "InstanceType" not in data  # the group's mixed-instances overrides name the types
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    (volume,) = data["BlockDeviceMappings"]
    assert volume["Ebs"]["VolumeType"] == "gp3" and volume["Ebs"]["Throughput"] >= 500
    assert volume["Ebs"]["Iops"] >= 4 * volume["Ebs"]["Throughput"]  # gp3 allows 0.25 MiB/s per IOPS
    user_data = data["UserData"]["Fn::Base64"]["Fn::Sub"]
    assert "ECS_CLUSTER=${" + cluster_id + "}" in user_data
    assert "ECS_ENABLE_GPU_SUPPORT=true" in user_data

    group_id, group = only_resource(template, "AWS::AutoScaling::AutoScalingGroup")
    assert str(group["MinSize"]) == "0"
    assert group["NewInstancesProtectedFromScaleIn"] is True
    assert "LaunchTemplate" not in group
    mixed = group["MixedInstancesPolicy"]
    assert referenced_id(mixed["LaunchTemplate"]["LaunchTemplateSpecification"]["LaunchTemplateId"]) == template_id
    # One to three types (test_one_to_three_gpu_types_make_that_many_overrides): the first always.
    assert mixed["LaunchTemplate"]["Overrides"][0] == {"InstanceType": {"Fn::Select": [0, {"Ref": "GpuInstanceTypes"}]}}
    assert mixed["InstancesDistribution"]["OnDemandAllocationStrategy"] == "prioritized"
    types = template["Parameters"]["GpuInstanceTypes"]
    assert types["Type"] == "CommaDelimitedList" and len(types["Default"].split(",")) == 3
    assert len(set(types["Default"].split(","))) == 3 and set(types["Default"].split(",")) <= set(
        types["AllowedValues"]
    )
    # One instance of headroom over RealizerMaxTasks, for a deploy that starts the new task first.
    assert group["MaxSize"] == {"Fn::FindInMap": ["GpuHeadroom", {"Ref": "RealizerMaxTasks"}, "Instances"]}
    tasks = template["Parameters"]["RealizerMaxTasks"]
    headroom = template["Mappings"]["GpuHeadroom"]
    assert {int(k): v["Instances"] for k, v in headroom.items()} == {
        n: n + 1 for n in range(tasks["MinValue"], tasks["MaxValue"] + 1)
    }
    assert referenced_id(group["VPCZoneIdentifier"]) == "VpcSubnetIds"

    provider_id, provider = only_resource(template, "AWS::ECS::CapacityProvider")
    asg_provider = provider["AutoScalingGroupProvider"]
    assert referenced_id(asg_provider["AutoScalingGroupArn"]) == group_id
    assert asg_provider["ManagedScaling"]["Status"] == "ENABLED"
    assert asg_provider["ManagedTerminationProtection"] == "ENABLED"

    association_id, association = only_resource(template, "AWS::ECS::ClusterCapacityProviderAssociations")
    assert referenced_id(association["Cluster"]) == cluster_id
    assert [referenced_id(p) for p in association["CapacityProviders"]] == [provider_id]

    service_id, service = only_resource(template, "AWS::ECS::Service")
    assert "LaunchType" not in service
    assert [referenced_id(s["CapacityProvider"]) for s in service["CapacityProviderStrategy"]] == [provider_id]
    assert template["Resources"][service_id]["DependsOn"] == association_id
    assert referenced_id(service["Cluster"]) == cluster_id


NO_VALUE = object()


def evaluate(node: Any, parameters: dict[str, Any], conditions: dict[str, Any]) -> Any:
    """CloudFormation's intrinsic functions as the GPU group uses them (Ref, Fn::Join, Fn::Split,
    Fn::Select, Fn::If and the condition functions), with the parameters given; AWS::NoValue drops a list
    item, and Fn::Select past a list's end fails as it fails a deploy."""
    if isinstance(node, list):
        items = [evaluate(item, parameters, conditions) for item in node]
        return [item for item in items if item is not NO_VALUE]
    if not isinstance(node, dict):
        return node
    if len(node) == 1:
        ((function, argument),) = node.items()
        if function == "Ref":
            return NO_VALUE if argument == "AWS::NoValue" else parameters[argument]
        if function == "Condition":
            return evaluate(conditions[argument], parameters, conditions)
        if function == "Fn::If":
            name, then, otherwise = argument
            chosen = then if evaluate(conditions[name], parameters, conditions) else otherwise
            return evaluate(chosen, parameters, conditions)
        if function in ("Fn::Join", "Fn::Split", "Fn::Select", "Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or"):
            values = evaluate(argument, parameters, conditions)
            if function == "Fn::Join":
                return values[0].join(values[1])
            if function == "Fn::Split":
                return values[1].split(values[0])
            if function == "Fn::Select":
                index, items = values
                if int(index) >= len(items):
                    raise IndexError(f"Fn::Select cannot select nonexistent value at index {index}")
                return items[int(index)]
            if function == "Fn::Equals":
                return values[0] == values[1]
            if function == "Fn::Not":
                return not values[0]
            return all(values) if function == "Fn::And" else any(values)
    return {key: evaluate(value, parameters, conditions) for key, value in node.items()}


@pytest.mark.parametrize(
    "types", [["g6.xlarge"], ["g5.xlarge", "g5.2xlarge"], ["g6.xlarge", "g5.xlarge", "g6e.xlarge"]]
)
def test_one_to_three_gpu_types_make_that_many_overrides(template: dict[str, Any], types: list[str]) -> None:
    """A region may offer one or two of the types: GpuInstanceTypes takes one to three, and the group's
    overrides name exactly those, in order, without selecting past the list's end."""
    _, group = only_resource(template, "AWS::AutoScaling::AutoScalingGroup")
    overrides = group["MixedInstancesPolicy"]["LaunchTemplate"]["Overrides"]
    resolved = evaluate(overrides, {"GpuInstanceTypes": types}, template["Conditions"])
    assert resolved == [{"InstanceType": name} for name in types]
    parameter = template["Parameters"]["GpuInstanceTypes"]
    assert set(types) <= set(parameter["AllowedValues"])
    assert "One to three" in parameter["Description"]


def test_realizer_task_asks_for_a_gpu_and_the_queues(template: dict[str, Any]) -> None:
    _, task = only_resource(template, "AWS::ECS::TaskDefinition")
    assert task["RequiresCompatibilities"] == ["EC2"]
    assert referenced_id(task["TaskRoleArn"]) == "RealizerTaskRole"
    assert referenced_id(task["ExecutionRoleArn"]) == "RealizerExecutionRole"
    container = realizer_container(template)
    assert container["ResourceRequirements"] == [{"Type": "GPU", "Value": "1"}]
    assert container["Image"] == {"Fn::Sub": "${RealizerRepository.RepositoryUri}@${RealizerImageDigest}"}
    env = {variable["Name"]: variable["Value"] for variable in container["Environment"]}
    assert referenced_id(env["REALIZE_QUEUE_URL"]) == "RealizeQueue"
    assert referenced_id(env["SCREEN_QUEUE_URL"]) == "ScreenQueue"
    assert env["REALIZER_ENGINE"] == "vllm"
    logging = container["LogConfiguration"]
    assert logging["LogDriver"] == "awslogs"
    assert referenced_id(logging["Options"]["awslogs-group"]) == "RealizerLogGroup"
    assert container["StopTimeout"] >= 60


def test_realizer_scales_on_backlog_per_task_and_wakes_from_zero(template: dict[str, Any]) -> None:
    target_id, target = only_resource(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert target["ScalableDimension"] == "ecs:service:DesiredCount"
    assert referenced_id(target["MinCapacity"]) == "RealizerMinTasks"
    assert referenced_id(target["MaxCapacity"]) == "RealizerMaxTasks"
    assert "RealizerService.Name" in str(target["ResourceId"])

    policies = resources_of_type(template, "AWS::ApplicationAutoScaling::ScalingPolicy")
    for policy in policies.values():
        assert referenced_id(policy["Properties"]["ScalingTargetId"]) == target_id
    tracking = [p["Properties"] for p in policies.values() if p["Properties"]["PolicyType"] == "TargetTrackingScaling"]
    (tracking_policy,) = tracking
    queries = tracking_policy["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]["Metrics"]
    by_id = {query["Id"]: query for query in queries}
    (returned,) = [query for query in queries if query.get("ReturnData")]
    numerator, denominator = (part.strip() for part in returned["Expression"].split("/"))
    visible = by_id[numerator]["MetricStat"]["Metric"]
    running = by_id[denominator]["MetricStat"]["Metric"]
    assert (visible["Namespace"], visible["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert referenced_id(dimension(visible, "QueueName")) == "RealizeQueue"
    assert (running["Namespace"], running["MetricName"]) == ("ECS/ContainerInsights", "RunningTaskCount")

    alarms = resources_of_type(template, "AWS::CloudWatch::Alarm")
    steps = {name: p["Properties"] for name, p in policies.items() if p["Properties"]["PolicyType"] == "StepScaling"}
    wake = [
        (name, step)
        for name, step in steps.items()
        if step["StepScalingPolicyConfiguration"]["AdjustmentType"] == "ExactCapacity"
        and [a["ScalingAdjustment"] for a in step["StepScalingPolicyConfiguration"]["StepAdjustments"]] == [1]
    ]
    ((wake_id, _),) = wake
    (wake_alarm,) = [a["Properties"] for a in alarms.values() if {"Ref": wake_id} in a["Properties"]["AlarmActions"]]
    watched = [
        (m["MetricName"], referenced_id(dimension(m, "QueueName")))
        for m in metric_stats(wake_alarm)
        if m["Namespace"] == "AWS/SQS"
    ]
    assert watched == [("ApproximateNumberOfMessagesVisible", "RealizeQueue")]


def test_alarms_watch_both_dead_letter_queues_and_a_realizer_that_does_not_serve(template: dict[str, Any]) -> None:
    watched = set()
    for alarm in resources_of_type(template, "AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        if "MetricName" in props and props["Namespace"] == "AWS/SQS":
            watched.add((props["MetricName"], referenced_id(dimension(props, "QueueName"))))
            assert referenced_id(props["AlarmActions"][0]) == "AlarmTopic"
    assert ("ApproximateNumberOfMessagesVisible", "RealizeDeadLetterQueue") in watched
    assert ("ApproximateNumberOfMessagesVisible", "ScreenDeadLetterQueue") in watched
    assert ("ApproximateNumberOfMessagesVisible", "DispatchFailureQueue") in watched
    # A realize job lives 120 s (issue 42), so its age tells nothing: RealizerNotServingAlarm watches the
    # realizer instead (tests/deploy/test_gpu_capacity.py).
    assert ("ApproximateAgeOfOldestMessage", "RealizeQueue") not in watched
    assert "RealizerNotServingAlarm" in template["Resources"]


def test_an_alarm_sees_a_turn_read_pending_past_its_deadline(template: dict[str, Any]) -> None:
    alarms = [alarm["Properties"] for alarm in resources_of_type(template, "AWS::CloudWatch::Alarm").values()]
    (alarm,) = [a for a in alarms if a.get("MetricName") == "TurnsPendingPastDeadline"]
    assert (alarm["Namespace"], dimension(alarm, "service")) == (DESK_NAMESPACE_SUB, "turn_api")
    assert referenced_id(alarm["AlarmActions"][0]) == "AlarmTopic"


def test_metric_names_exist(template: dict[str, Any]) -> None:
    metrics = list(metric_stats(template["Resources"]))
    assert metrics
    for metric in metrics:
        assert metric["MetricName"] in KNOWN_METRICS[namespace_of(metric["Namespace"])], metric


def test_every_parameter_is_in_the_deploy_guide_and_the_outputs_exist(template: dict[str, Any]) -> None:
    """The guide's parameter table names exactly the template's parameters, with their defaults, and the
    outputs the guide and env.json rely on exist."""
    guide = (ROOT / "docs" / "DEPLOY.md").read_text()
    table = guide[guide.index("| Parameter | Default | What it sets |") :].split("\n\n")[0]
    documented = dict(re.findall(r"^\| `([A-Z][A-Za-z]+)` \| ([^|]+) \|", table, flags=re.MULTILINE))
    assert set(documented) == set(template["Parameters"])
    for name, parameter in template["Parameters"].items():
        if "Default" in parameter and parameter["Default"] not in ("", None) and not name.endswith("AmiId"):
            assert f"`{parameter['Default']}`" in documented[name], name
    assert set(template["Outputs"]) >= REQUIRED_OUTPUTS


def test_every_checkov_suppression_gives_a_reason(template: dict[str, Any]) -> None:
    """Each skipped checkov check carries a one-sentence reason in the resource's metadata."""
    skips = [
        (name, skip)
        for name, resource in template["Resources"].items()
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    ]
    assert skips
    for name, skip in skips:
        assert re.fullmatch(r"CKV_AWS_\d+", skip["id"]), (name, skip)
        assert re.fullmatch(r"\S[^\n]{20,}\.", skip["comment"]), (name, skip)


# --- sam build -------------------------------------------------------------------------------------


def sam_executable() -> Path | None:
    """SAM CLI from $SAM_CLI, the deploy tools' venv (`make build` installs it), or PATH."""
    for candidate in (os.environ.get("SAM_CLI"), ROOT / ".venv-deploy" / "bin" / "sam", shutil.which("sam")):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


@pytest.fixture(scope="module")
def sam_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`sam build` (no container) into a temporary folder; skipped where SAM CLI is not installed, except in CI."""
    sam = sam_executable()
    if sam is None:
        if os.environ.get("CI"):
            pytest.fail("SAM CLI is not installed: `make template-checks` installs it into .venv-deploy")
        pytest.skip("SAM CLI is not installed (make build installs it into .venv-deploy)")
    build_dir = tmp_path_factory.mktemp("sam") / "build"
    # SAM's python3.12 builder and the layer's Makefile want a python3.12 / python3 on PATH: the
    # tools' venv has both.
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "PATH": f"{sam.parent}{os.pathsep}{os.environ['PATH']}"}
    result = run_command(
        [str(sam), "build", "--template-file", str(TEMPLATE), "--build-dir", str(build_dir), "--region", "us-east-1"],
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return build_dir


def test_sam_build_layer_holds_the_package_its_dependencies_and_the_pack(sam_build: Path) -> None:
    layer = sam_build / "DialogueLayer"
    assert (layer / "python" / "dialogue" / "pack" / "schema.py").is_file()
    assert (layer / "python" / "dialogue" / "aws" / "stores.py").is_file()  # the adapters, a subpackage
    assert (layer / "python" / "dialogue" / "screens.py").is_file()
    assert (layer / "python" / "pydantic_settings").is_dir()
    assert (layer / "python" / "aws_lambda_powertools").is_dir()
    assert (layer / "python" / "pydantic").is_dir()
    # Tracer() imports the X-Ray SDK at module load; the python3.12 runtime does not ship it.
    assert (layer / "python" / "aws_xray_sdk").is_dir()
    desks = sorted(path.parent.name for path in (ROOT / "data").glob("*/domain.toml"))
    assert len(desks) >= 2, desks
    for desk in desks:
        runs_on = [
            "domain.toml",
            *(["examples.toml"] if (ROOT / "data" / desk / "examples.toml").exists() else []),
            "handbook.csv",
        ]
        assert sorted(path.name for path in (layer / "data" / desk).iterdir()) == runs_on
    assert not (layer / "python" / "python").exists()
    # Built for the functions' architecture (arm64), not the build machine's.
    (core,) = (layer / "python" / "pydantic_core").glob("_pydantic_core.*.so")
    assert "aarch64" in core.name


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_sam_build_function_holds_its_handler(sam_build: Path, name: str) -> None:
    module = FUNCTIONS[name]["Handler"].split(".", 1)[0]
    assert (sam_build / name / f"{module}.py").is_file()
    built, _ = decode(str(sam_build / "template.yaml"))
    assert built["Resources"][name]["Properties"]["CodeUri"] == name


def test_each_function_may_make_its_own_store_calls_and_no_more(template: dict[str, Any]) -> None:
    """Per function, exactly the conversation-table actions its code path needs: the turn API reads (a
    conversation's messages by a Query on its partition) and writes one transaction per turn: puts, and
    the update of the open hand-off item a turn joins (reads never write); the screen function updates a
    TURN and puts its REPLY; the staff function reads items and writes claims, decisions, messages and
    audit items in transactions, and queries audit partitions (an item's trail); the dispatch function
    touches no table."""
    needed = {
        # and it updates the open hand-off item a turn joins (dialogue.handoffs)
        "TurnApiFunction": {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem"},
        "StaffApiFunction": {
            "dynamodb:GetItem",
            "dynamodb:BatchGetItem",
            "dynamodb:UpdateItem",
            "dynamodb:PutItem",
            "dynamodb:ConditionCheckItem",
            "dynamodb:Query",
            # a pending audit copy's marker, once its copy is written (its partition only)
            "dynamodb:DeleteItem",
        },
        "ScreenReplyFunction": {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
        "DispatchTurnFunction": set(),
        # It finalizes as the screen function does (an Update and a Put in a transaction), and repairs the
        # audit's pending copies: their markers queried and removed, a marker's links queried.
        "SweepTurnsFunction": {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:DeleteItem"},
    }
    for name, actions in needed.items():
        granted = {
            action
            for statement in iam_statements(function_properties(template, name).get("Policies", []))
            if referenced_id(statement["Resource"]) == "ConversationTable"
            and statement["Effect"] == "Allow"
            # the dispatch function's stream reads (its mapping's) are on the stream, not the table
            and statement["Resource"] != {"Fn::GetAtt": ["ConversationTable", "StreamArn"]}
            for action in as_list(statement["Action"])
        }
        assert granted == actions, (name, granted ^ actions)


def test_the_pages_are_a_private_bucket_behind_cloudfront_which_also_fronts_both_apis(template: dict[str, Any]) -> None:
    """One origin for the pages and the APIs (no CORS): the bucket is private and read only through the
    distribution's origin access control; /conversations* and /staff/* go to the HTTP API uncached, with
    every viewer header but Host (so a staff token reaches the JWT authorizer)."""
    resources = template["Resources"]
    bucket = resources["PagesBucket"]["Properties"]
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    (allow, tls_only) = resources["PagesBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert allow["Principal"] == {"Service": "cloudfront.amazonaws.com"} and allow["Action"] == "s3:GetObject"
    assert "${PagesDistribution}" in allow["Condition"]["StringEquals"]["AWS:SourceArn"]["Fn::Sub"]
    assert tls_only["Effect"] == "Deny" and tls_only["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    config = resources["PagesDistribution"]["Properties"]["DistributionConfig"]
    origins = {origin["Id"]: origin for origin in config["Origins"]}
    assert referenced_id(origins["pages"]["OriginAccessControlId"]) == "PagesOriginAccessControl"
    assert "${ConversationApi}" in origins["api"]["DomainName"]["Fn::Sub"]
    assert origins["api"]["OriginPath"] == {"Fn::Sub": "/${Stage}"}
    caching_disabled, all_viewer_except_host = (
        "4135ea2d-6df8-44a3-9df3-4b5a84be39ad",
        "b689b0a8-53d0-40ab-baf2-68738e2966ac",
    )
    behaviors = {behavior["PathPattern"]: behavior for behavior in config["CacheBehaviors"]}
    assert set(behaviors) == {"/conversations*", "/staff/*"}
    for behavior in behaviors.values():
        assert behavior["TargetOriginId"] == "api" and behavior["ViewerProtocolPolicy"] == "https-only"
        assert (behavior["CachePolicyId"], behavior["OriginRequestPolicyId"]) == (
            caching_disabled,
            all_viewer_except_host,
        )
        assert "POST" in behavior["AllowedMethods"]
    assert config["DefaultCacheBehavior"]["TargetOriginId"] == "pages"
    assert config["DefaultCacheBehavior"]["ViewerProtocolPolicy"] == "redirect-to-https"
    headers = resources["PagesSecurityHeaders"]["Properties"]["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    policy = headers["ContentSecurityPolicy"]["ContentSecurityPolicy"]["Fn::Sub"]
    assert "script-src 'self'" in policy and "amazoncognito.com" in policy and "frame-ancestors 'none'" in policy


def test_the_served_pages_are_the_published_ones() -> None:
    """devstack serves web/ at the paths make publish-pages writes, so the browser tests test what ships."""
    import importlib.util

    from devstack.pages import PAGES

    spec = importlib.util.spec_from_file_location("web_publish", ROOT / "web" / "publish.py")
    assert spec is not None and spec.loader is not None
    publish = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(publish)
    assert {f"/{key}": path for key, path in publish.PAGES.items()} == {
        route: ROOT / "web" / relative for route, relative in PAGES.items()
    }


def test_the_sweeper_runs_every_five_minutes_on_the_pending_turn_index_and_is_alarmed(template: dict[str, Any]) -> None:
    """EventBridge Scheduler runs the sweeper at the interval devstack simulates; it queries only the
    pending-turn index, which the table declares as devstack does; any turn it finalizes raises an alarm."""
    from devstack.stack import SWEEP_INTERVAL
    from dialogue.aws.table import PENDING_TURN, PENDING_TURN_INDEX

    props = function_properties(template, "SweepTurnsFunction")
    (event,) = props["Events"].values()
    assert event["Type"] == "ScheduleV2"
    assert event["Properties"]["ScheduleExpression"] == f"rate({SWEEP_INTERVAL // 60} minutes)"
    statements = list(iam_statements(props["Policies"]))
    (query,) = [s for s in statements if "dynamodb:Query" in as_list(s["Action"]) and "index" in str(s["Resource"])]
    assert query["Resource"] == {"Fn::Sub": f"${{ConversationTable.Arn}}/index/{PENDING_TURN_INDEX}"}
    indexes = {
        index["IndexName"]: [key["AttributeName"] for key in index["KeySchema"]]
        for index in template["Resources"]["ConversationTable"]["Properties"]["GlobalSecondaryIndexes"]
    }
    assert indexes[PENDING_TURN_INDEX] == [PENDING_TURN, "created_at"]
    alarm = template["Resources"]["StuckTurnsFinalizedAlarm"]["Properties"]
    assert (alarm["MetricName"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
        "StuckTurnsFinalized",
        0,
        "GreaterThanThreshold",
    )
    assert dimension(alarm, "service") == SERVICE_NAMES["SweepTurnsFunction"]


def test_turns_that_outlived_the_pack_and_turns_the_sweeper_failed_on_are_alarmed(template: dict[str, Any]) -> None:
    """Every function that gives a turn the generic fallback for a pack change counts it, and one alarm
    sums them all; a turn the sweeper fails on (and goes past) raises an alarm of its own."""

    sources = {
        SERVICE_NAMES[name]: (ROOT / function["CodeUri"] / f"{function['Handler'].split('.')[0]}.py").read_text()
        for name, function in FUNCTIONS.items()
    }

    def emitters(metric: str) -> set[str]:
        return {service for service, source in sources.items() if f'add_metric(name="{metric}"' in source}

    assert emitters("StaleTurnsFinalized") == {"screen_reply", "sweep_turns"}
    alarm = template["Resources"]["StaleTurnsFinalizedAlarm"]["Properties"]
    stats = {query["Id"]: query["MetricStat"]["Metric"] for query in alarm["Metrics"] if "MetricStat" in query}
    assert {(namespace_of(m["Namespace"]), m["MetricName"]) for m in stats.values()} == {
        (DESK_NAMESPACE, "StaleTurnsFinalized")
    }
    assert {dimension(m, "service") for m in stats.values()} == emitters("StaleTurnsFinalized")
    (returned,) = [query for query in alarm["Metrics"] if query.get("ReturnData")]
    assert set(re.findall(r"\bFILL\((\w+), 0\)", returned["Expression"])) == set(stats)
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold")

    assert emitters("TurnsNotSwept") == {"sweep_turns"}
    failed = template["Resources"]["TurnsNotSweptAlarm"]["Properties"]
    assert (failed["Namespace"], failed["MetricName"], dimension(failed, "service")) == (
        DESK_NAMESPACE_SUB,
        "TurnsNotSwept",
        "sweep_turns",
    )
    assert (failed["Threshold"], failed["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    for props in (alarm, failed):
        assert referenced_id(props["AlarmActions"][0]) == "AlarmTopic"


# --- issue 25: what a failed first create leaves, staff sign-in, key and names ----------------------


def test_the_stateful_resources_outlive_a_stack_delete_but_not_a_failed_first_create(template: dict[str, Any]) -> None:
    """The table and the staff pool are kept when the stack is deleted, but a first create that fails and
    rolls back removes them (RetainExceptOnCreate); a replacement keeps the old one (UpdateReplacePolicy
    has no RetainExceptOnCreate). The guide says so, not that they "outlive a redeploy"."""
    for name in ("ConversationTable", "StaffUserPool"):
        resource = template["Resources"][name]
        assert resource["DeletionPolicy"] == "RetainExceptOnCreate", name
        assert resource["UpdateReplacePolicy"] == "Retain", name
    guide = (ROOT / "docs" / "DEPLOY.md").read_text()
    assert "outlive a redeploy" not in guide
    assert "RetainExceptOnCreate" in guide


def test_staff_sign_in_requires_an_authenticator_code_and_an_administrator_to_recover(
    template: dict[str, Any],
) -> None:
    pool = template["Resources"]["StaffUserPool"]["Properties"]
    assert pool["MfaConfiguration"] == "ON"
    assert pool["EnabledMfas"] == ["SOFTWARE_TOKEN_MFA"]
    # No self-service recovery: not by e-mail alone (nor by a phone alone).
    assert pool["AccountRecoverySetting"] == {"RecoveryMechanisms": [{"Name": "admin_only", "Priority": 1}]}


def test_localhost_sign_in_only_when_a_parameter_asks(template: dict[str, Any]) -> None:
    """The console's return addresses are StaffConsoleUrls (empty by default) and localhost only when
    StaffConsoleOnLocalhost is true (false by default); with neither, the client has no OAuth flow
    (Cognito refuses the code flow without a return address)."""
    parameters = template["Parameters"]
    assert parameters["StaffConsoleUrls"]["Default"] == ""
    assert "localhost" not in json.dumps(parameters["StaffConsoleUrls"]["Default"])
    assert parameters["StaffConsoleOnLocalhost"]["Default"] == "false"
    assert set(parameters["StaffConsoleOnLocalhost"]["AllowedValues"]) == {"true", "false"}
    conditions = template["Conditions"]
    assert conditions["AllowsLocalhostSignIn"] == {"Fn::Equals": [{"Ref": "StaffConsoleOnLocalhost"}, "true"]}
    assert conditions["HasStaffSignIn"] == {
        "Fn::Or": [{"Condition": "HasStaffConsoleUrls"}, {"Condition": "AllowsLocalhostSignIn"}]
    }
    client = template["Resources"]["StaffConsoleClient"]["Properties"]
    for key in ("CallbackURLs", "LogoutURLs"):
        condition, with_urls, without_urls = client[key]["Fn::If"]
        assert condition == "HasStaffConsoleUrls"
        local, both, urls_only = with_urls["Fn::If"]
        assert local == "AllowsLocalhostSignIn" and urls_only == {"Ref": "StaffConsoleUrls"}
        assert "http://localhost:3000/console" in json.dumps(both) and "StaffConsoleUrls" in json.dumps(both)
        assert without_urls == {
            "Fn::If": ["AllowsLocalhostSignIn", ["http://localhost:3000/console"], {"Ref": "AWS::NoValue"}]
        }
    # localhost appears nowhere else in the template's resources.
    elsewhere = {name: res for name, res in template["Resources"].items() if name != "StaffConsoleClient"}
    assert "localhost" not in json.dumps(elsewhere)


def test_the_console_client_allows_the_flows_managed_login_needs(template: dict[str, Any]) -> None:
    """Managed login signs in with SRP or choice-based sign-in; tokens are renewed; no password-in-the-clear,
    admin or custom flow."""
    flows = set(template["Resources"]["StaffConsoleClient"]["Properties"]["ExplicitAuthFlows"])
    assert "ALLOW_REFRESH_TOKEN_AUTH" in flows
    assert flows & {"ALLOW_USER_SRP_AUTH", "ALLOW_USER_AUTH"}
    assert flows <= {"ALLOW_USER_SRP_AUTH", "ALLOW_USER_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"}
    assert template["Resources"]["StaffUserPool"]["Properties"]["UserPoolTier"] != "LITE"  # ALLOW_USER_AUTH


def test_the_encryption_comments_name_the_key_the_tables_use(template: dict[str, Any]) -> None:
    """SSEEnabled true without a key id is the AWS managed key (aws/dynamodb), not the AWS owned key (the
    default with SSE off): each table's checkov reason names the key it has."""
    for name, table in resources_of_type(template, "AWS::DynamoDB::Table").items():
        sse = table["Properties"]["SSESpecification"]
        (reason,) = [s["comment"] for s in table["Metadata"]["checkov"]["skip"] if s["id"] == "CKV_AWS_119"]
        if sse.get("SSEEnabled") is True and "KMSMasterKeyId" not in sse:
            assert "AWS managed key" in reason and "owned key" not in reason, name
        else:
            assert "AWS owned key" in reason and "managed key (" not in reason, name


# Resource types whose names are unique in the whole account, not per region.
ACCOUNT_WIDE_NAMES = {
    "AWS::Budgets::Budget": ("Budget", "BudgetName"),
    "AWS::CloudWatch::Dashboard": ("DashboardName",),
    "AWS::CloudFront::OriginAccessControl": ("OriginAccessControlConfig", "Name"),
    "AWS::CloudFront::ResponseHeadersPolicy": ("ResponseHeadersPolicyConfig", "Name"),
    "AWS::CloudFront::CachePolicy": ("CachePolicyConfig", "Name"),
    "AWS::CloudFront::OriginRequestPolicy": ("OriginRequestPolicyConfig", "Name"),
    "AWS::IAM::Role": ("RoleName",),
    "AWS::IAM::ManagedPolicy": ("ManagedPolicyName",),
    "AWS::IAM::InstanceProfile": ("InstanceProfileName",),
}


def test_account_wide_names_carry_the_region(template: dict[str, Any]) -> None:
    """A name unique in the account and built from the stack name also names the region, so the same
    stack name deploys in two regions of one account."""
    named = 0
    for resource_type, path in ACCOUNT_WIDE_NAMES.items():
        for name, resource in resources_of_type(template, resource_type).items():
            value: Any = resource.get("Properties", {})
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if value is None:
                continue  # CloudFormation generates a unique name
            named += 1
            text = json.dumps(value)
            assert "AWS::StackName" in text and "AWS::Region" in text, (name, value)
    assert named >= 4


SHARED_QUEUE_ARN = "arn:aws:sqs:eu-west-2:123456789012:realizer-RealizeQueue-AbC123"
DESK_SCREEN_ARNS = [
    "arn:aws:sqs:eu-west-2:123456789012:desk-a-ScreenQueue-1",
    "arn:aws:sqs:eu-west-2:123456789012:desk-b-ScreenQueue-2",
]


def _with_attributes_named(node: Any) -> Any:
    """Fn::GetAtt as "Resource.Attribute" strings, so `evaluate` can join them."""
    if isinstance(node, list):
        return [_with_attributes_named(item) for item in node]
    if isinstance(node, dict):
        if set(node) == {"Fn::GetAtt"}:
            target = node["Fn::GetAtt"]
            return ".".join(target) if isinstance(target, list) else str(target)
        return {key: _with_attributes_named(value) for key, value in node.items()}
    return node


def _shaped(template: dict[str, Any], **parameters: Any) -> tuple[dict[str, bool], Any]:
    """(each condition's value, a function evaluating a node) for a stack deployed with these parameters;
    every resource's Ref gives its logical id."""
    values: dict[str, Any] = {name: name for name in template["Resources"]}
    values.update({name: spec.get("Default", "") for name, spec in template["Parameters"].items()})
    values.update({"AWS::Region": "eu-west-2", "AWS::AccountId": "123456789012", "AWS::Partition": "aws"})
    values.update({"RealizerImageDigest": "sha256:" + "0" * 64, "SharedRealizerQueueArn": "", **parameters})
    values.setdefault("SharedRealizerReplyQueueArns", [""])
    conditions = template["Conditions"]
    truth = {name: bool(evaluate(conditions[name], values, conditions)) for name in conditions}
    return truth, lambda node: evaluate(_with_attributes_named(node), values, conditions)


def test_a_desk_on_a_shared_realizer_runs_none_and_sends_only_to_its_queue(template: dict[str, Any]) -> None:
    """Issue 42, item 3: with SharedRealizerQueueArn a desk sends its jobs to that queue alone (the URL
    built from the ARN), names its screen queue for the replies, and has no realizer service, scaling, wake
    call or off switch of its own, whatever the digest; without it, its own realizer as before."""
    resources = template["Resources"]
    for shared in (False, True):
        truth, resolve = _shaped(template, SharedRealizerQueueArn=SHARED_QUEUE_ARN if shared else "")
        assert truth["HasRealizer"] is not shared and truth["UsesSharedRealizer"] is shared
        env = resolve(function_environment(template, "DispatchTurnFunction"))
        statements = resolve(statements_of_function(template, "DispatchTurnFunction"))
        (send,) = [statement for statement in statements if statement.get("Sid") == "SendJobsAndDeadlines"]
        if shared:
            sub, names = env["REALIZE_QUEUE_URL"]["Fn::Sub"]
            url = sub.replace("${AWS::URLSuffix}", "amazonaws.com")
            for key in ("Region", "Account", "Name"):
                url = url.replace("${" + key + "}", names[key])
            assert url == "https://sqs.eu-west-2.amazonaws.com/123456789012/realizer-RealizeQueue-AbC123"
            assert env["SHARED_REALIZER"] == "true"
            assert send["Resource"] == [SHARED_QUEUE_ARN, "ScreenQueue.Arn"], "its jobs go to the shared queue only"
            assert env["REALIZER_CLUSTER"] is env["REALIZER_SERVICE"] is NO_VALUE, "no wake call of its own"
        else:
            assert env["REALIZE_QUEUE_URL"] == "RealizeQueue" and env["SHARED_REALIZER"] == "false"
            assert send["Resource"] == ["RealizeQueue.Arn", "ScreenQueue.Arn"]
            assert env["REALIZER_CLUSTER"] == "RealizerCluster"
        for name in (
            "RealizerService",
            "RealizerTaskDefinition",
            "RealizerScalableTarget",
            "RealizerWakeFromZeroAlarm",
            "RealizerIdleAlarm",
            "RealizerNotServingAlarm",
        ):
            assert truth[resources[name]["Condition"]] is not shared, name


def statements_of_function(template: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The inline policy statements of a SAM function."""
    return [
        statement
        for policy in function_properties(template, name).get("Policies", [])
        if isinstance(policy, dict)
        for statement in iam_statements(policy)
    ]


@pytest.mark.parametrize("desks", [[], DESK_SCREEN_ARNS])
def test_a_shared_realizer_answers_only_to_its_own_and_the_listed_reply_queues(
    template: dict[str, Any], desks: list[str]
) -> None:
    """The realizer's task role may send to its own screen queue and the desks' listed in
    SharedRealizerReplyQueueArns, nothing else; the worker gets the same list (REPLY_QUEUE_ARNS)."""
    truth, resolve = _shaped(template, SharedRealizerReplyQueueArns=desks or [""])
    assert truth["ServesOtherDesks"] is bool(desks)
    statements = resolve(statements_of(template["Resources"]["RealizerTaskRole"]))
    senders = [statement for statement in statements if "sqs:SendMessage" in as_list(statement["Action"])]
    assert [statement["Sid"] for statement in senders] == ["SendRealizedReplies"]
    assert as_list(senders[0]["Resource"]) == ["ScreenQueue.Arn", *desks]
    env = {item["Name"]: resolve(item["Value"]) for item in realizer_container(template)["Environment"]}
    assert env["REPLY_QUEUE_ARNS"] == ",".join(desks)
    outputs = template["Outputs"]
    assert referenced_id(outputs["RealizeQueueArn"]["Value"]) == "RealizeQueue"
    assert referenced_id(outputs["ScreenQueueArn"]["Value"]) == "ScreenQueue"
