"""Checks on the SAM template: cfn-lint clean, and the wiring the rest of the project relies on."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"

FUNCTIONS = {
    "TurnApiFunction": {"CodeUri": "functions/turn_api/", "Handler": "turn_api.lambda_handler"},
    "ScreenReplyFunction": {"CodeUri": "functions/screen_reply/", "Handler": "screen_reply.lambda_handler"},
}
SERVICE_NAMES = {"TurnApiFunction": "turn_api", "ScreenReplyFunction": "screen_reply"}
REQUIRED_ENV = {
    "TurnApiFunction": {"TABLE_NAME", "REALIZE_QUEUE_URL", "DOMAIN_PACK_DIR", "RETENTION_DAYS", "LOG_LEVEL"},
    "ScreenReplyFunction": {"TABLE_NAME", "DOMAIN_PACK_DIR", "REPLY_RETENTION_HOURS", "LOG_LEVEL"},
}
ROUTES = {
    ("POST", "/conversations"),
    ("POST", "/conversations/{conversation_id}/turns"),
    ("GET", "/conversations/{conversation_id}/turns/{turn_id}"),
    ("GET", "/conversations/{conversation_id}"),
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
    """Both functions keep their fixed code location and handler, run python3.12 and use the layer."""
    props = function_properties(template, name)
    assert props["CodeUri"] == FUNCTIONS[name]["CodeUri"]
    assert props["Handler"] == FUNCTIONS[name]["Handler"]
    assert props["Runtime"] == "python3.12"
    assert {"Ref": "DialogueLayer"} in props["Layers"]


def test_layer_is_built_by_its_makefile_with_the_domain_pack(template: dict[str, Any]) -> None:
    """The layer is a makefile build for the functions' runtime and architecture that ships data/riverton."""
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
    assert "data/riverton" in makefile
    assert '$(ARTIFACTS_DIR)/python"' in makefile


def test_screen_function_reports_partial_batch_failures(template: dict[str, Any]) -> None:
    """The screen function reads ScreenQueue in batches of 10 and reports failed records one by one."""
    events = function_properties(template, "ScreenReplyFunction")["Events"]
    sqs_events = [event["Properties"] for event in events.values() if event["Type"] == "SQS"]
    assert len(sqs_events) == 1
    (event,) = sqs_events
    assert referenced_id(event["Queue"]) == "ScreenQueue"
    assert event["BatchSize"] == 10
    assert "ReportBatchItemFailures" in event["FunctionResponseTypes"]


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
    work_queues = set(queues) - dead_letter_queues
    assert work_queues == {"RealizeQueue", "ScreenQueue"}
    for name in work_queues:
        assert name in redrives, f"{name} has no RedrivePolicy"
        target = referenced_id(redrives[name]["deadLetterTargetArn"])
        assert target in queues, f"{name} redrives to {target}, which is no queue of this template"
        assert target not in redrives, f"{name} redrives to {target}, which is no DLQ"
        assert redrives[name]["maxReceiveCount"] == 5


def test_dead_letter_queues_keep_messages_fourteen_days(template: dict[str, Any]) -> None:
    """Poison messages stay long enough to be inspected and redriven."""
    for name in ("RealizeDeadLetterQueue", "ScreenDeadLetterQueue"):
        assert template["Resources"][name]["Properties"]["MessageRetentionPeriod"] == DEAD_LETTER_RETENTION_S


def test_http_api_routes(template: dict[str, Any]) -> None:
    """ConversationApi serves exactly the four conversation routes, all through TurnApiFunction."""
    assert template["Resources"]["ConversationApi"]["Type"] == "AWS::Serverless::HttpApi"
    routes = set()
    for name in FUNCTIONS:
        for event in function_properties(template, name).get("Events", {}).values():
            if event["Type"] == "HttpApi":
                assert name == "TurnApiFunction"
                assert referenced_id(event["Properties"]["ApiId"]) == "ConversationApi"
                routes.add((event["Properties"]["Method"], event["Properties"]["Path"]))
    assert routes == ROUTES


def test_conversation_table_keys_and_ttl(template: dict[str, Any]) -> None:
    """The table is keyed by pk/sk strings and expires items through TTL on expires_at."""
    props = template["Resources"]["ConversationTable"]["Properties"]
    assert {(key["AttributeName"], key["KeyType"]) for key in props["KeySchema"]} == {
        ("pk", "HASH"),
        ("sk", "RANGE"),
    }
    assert {(a["AttributeName"], a["AttributeType"]) for a in props["AttributeDefinitions"]} == {
        ("pk", "S"),
        ("sk", "S"),
    }
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}


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
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "EnrollmentDesk"
    assert env["DOMAIN_PACK_DIR"] == "/opt/data/riverton"
    assert REQUIRED_ENV[name] <= set(env)
