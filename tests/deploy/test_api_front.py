"""The API's front door in the template: only CloudFront reaches the API (an origin-verify header the
stack generates and the turn and staff functions require), a WAF web ACL with per-address rate limits is
always attached (the stack's own in us-east-1, ops/pages-waf.yaml's elsewhere, and a CloudFormation rule
refuses a deploy without one), no output hands out the execute-api endpoint, and every route has its own
throttle, the staff's apart from the residents'.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode
from test_template import FUNCTIONS, ROOT, TEMPLATE, function_environment, function_properties, referenced_id

from tests.deploy_tools import run_in_deploy_tools

WAF_TEMPLATE = ROOT / "ops" / "pages-waf.yaml"
ORIGIN_HEADER_VALUE = {"Fn::Sub": "{{resolve:secretsmanager:${OriginVerifySecret}:SecretString}}"}
# What GetAtt Arn gives for a CLOUDFRONT web ACL made by ops/pages-waf.yaml.
SAMPLE_ACL_ARN = (
    "arn:aws:wafv2:us-east-1:123456789012:global/webacl/desk-waf-pages/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
)


def _decoded(path: Path) -> dict[str, Any]:
    decoded, matches = decode(str(path))
    assert not matches, [str(match) for match in matches]
    return decoded


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return _decoded(TEMPLATE)


@pytest.fixture(scope="module")
def waf_template() -> dict[str, Any]:
    return _decoded(WAF_TEMPLATE)


def distribution_config(template: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = template["Resources"]["PagesDistribution"]["Properties"]["DistributionConfig"]
    return config


# --- the distribution's root ---------------------------------------------------------------------------


def test_the_root_address_serves_the_chat_page_make_publish_pages_uploads(template: dict[str, Any]) -> None:
    """`/` is the resident chat, not S3's 403 for a key that is not there: the root object is the page
    web/publish.py uploads as `chat`, whose assets are named from the root, so they load at `/` too."""
    from commands import load_script

    publisher = load_script("web/publish.py", "web_publish_root")
    root = distribution_config(template)["DefaultRootObject"]
    assert root == "chat" and root in publisher.PAGES
    page = publisher.PAGES[root].read_text()
    assets = re.findall(r'(?:src|href)="([^"#:]+)"', page)
    assert assets and all(asset.startswith("/") for asset in assets), assets


# --- only CloudFront reaches the API ------------------------------------------------------------------


def test_cloudfront_adds_the_origin_verify_header_on_the_api_origin_alone(template: dict[str, Any]) -> None:
    from dialogue.aws.api import ORIGIN_VERIFY_HEADER

    origins = {origin["Id"]: origin for origin in distribution_config(template)["Origins"]}
    (header,) = origins["api"]["OriginCustomHeaders"]
    assert header["HeaderName"].lower() == ORIGIN_VERIFY_HEADER
    assert header["HeaderValue"] == ORIGIN_HEADER_VALUE
    assert "OriginCustomHeaders" not in origins["pages"]  # the bucket needs no proof: OAC signs for it


def test_the_turn_and_staff_functions_get_the_value_and_no_other_function_does(template: dict[str, Any]) -> None:
    from dialogue.settings import Settings

    assert "origin_verify" in Settings.model_fields  # read from ORIGIN_VERIFY
    for name in FUNCTIONS:
        value = function_environment(template, name).get("ORIGIN_VERIFY")
        if name in ("TurnApiFunction", "StaffApiFunction"):
            assert value == ORIGIN_HEADER_VALUE, name
        else:
            assert value is None, name
    # The API's routes are all on those two functions (test_template.test_http_api_routes).
    routed = {
        name
        for name in FUNCTIONS
        for event in function_properties(template, name).get("Events", {}).values()
        if event["Type"] == "HttpApi"
    }
    assert routed == {"TurnApiFunction", "StaffApiFunction"}


def test_the_value_is_generated_by_the_stack_and_never_written_in_the_template(template: dict[str, Any]) -> None:
    secret = template["Resources"]["OriginVerifySecret"]
    assert secret["Type"] == "AWS::SecretsManager::Secret"
    properties = secret["Properties"]
    assert "SecretString" not in properties
    generated = properties["GenerateSecretString"]
    assert generated["PasswordLength"] >= 32
    assert generated["ExcludePunctuation"] is True  # letters and digits: a header value as it is
    assert "SecretStringTemplate" not in generated  # the whole string is the value, as the references read it
    # Resolved in exactly three places: CloudFront's header and the two functions' environments.
    text = json.dumps(template)
    assert text.count("{{resolve:secretsmanager:") == 3
    assert text.count("{{resolve:secretsmanager:${OriginVerifySecret}:SecretString}}") == 3


def test_no_output_hands_out_the_execute_api_endpoint(template: dict[str, Any]) -> None:
    outputs = template["Outputs"]
    assert "ApiUrl" not in outputs
    assert not [name for name, output in outputs.items() if "execute-api" in json.dumps(output["Value"])]
    assert outputs["PagesUrl"]["Value"] == {"Fn::Sub": "https://${PagesDistribution.DomainName}"}
    # The distribution is the only thing in the template that names the endpoint.
    named = [name for name, resource in template["Resources"].items() if "execute-api" in json.dumps(resource)]
    assert named == ["PagesDistribution"]


# --- a WAF web ACL is always attached -----------------------------------------------------------------


def evaluate(node: Any, parameters: dict[str, str], conditions: dict[str, Any]) -> Any:
    """A condition or rule expression's value for these parameter values (AWS::Region among them)."""
    if isinstance(node, dict) and len(node) == 1:
        ((function, argument),) = node.items()
        if function == "Ref":
            return parameters[argument]
        if function == "Condition":
            return evaluate(conditions[argument], parameters, conditions)
        if function == "Fn::Equals":
            left, right = (evaluate(part, parameters, conditions) for part in argument)
            return left == right
        if function == "Fn::Not":
            return not evaluate(argument[0], parameters, conditions)
        if function == "Fn::And":
            return all(evaluate(part, parameters, conditions) for part in argument)
        if function == "Fn::Or":
            return any(evaluate(part, parameters, conditions) for part in argument)
        raise AssertionError(f"no evaluator for {function}")
    return node


def failed_rules(template: dict[str, Any], parameters: dict[str, str]) -> list[str]:
    """The AssertDescription of each of the template's Rules that refuses these parameter values."""
    conditions = template.get("Conditions", {})
    refused = []
    for rule in template.get("Rules", {}).values():
        if "RuleCondition" in rule and not evaluate(rule["RuleCondition"], parameters, conditions):
            continue
        refused += [
            a["AssertDescription"] for a in rule["Assertions"] if not evaluate(a["Assert"], parameters, conditions)
        ]
    return refused


def attached_acl(template: dict[str, Any], parameters: dict[str, str]) -> str | None:
    """What the distribution's WebACLId resolves to: a parameter's value, `stack:<logical id>`, or None."""
    conditions = template["Conditions"]
    value = distribution_config(template).get("WebACLId")
    while isinstance(value, dict) and "Fn::If" in value:
        condition, when_true, when_false = value["Fn::If"]
        value = when_true if evaluate(conditions[condition], parameters, conditions) else when_false
    if value is None or value == {"Ref": "AWS::NoValue"}:
        return None
    if "Ref" in value:
        return parameters[value["Ref"]]
    (name, attribute) = value["Fn::GetAtt"]
    assert attribute == "Arn"
    resource = template["Resources"][name]
    assert resource["Type"] == "AWS::WAFv2::WebACL"
    assert evaluate(conditions[resource["Condition"]], parameters, conditions), "the ACL named is not created"
    return f"stack:{name}"


@pytest.mark.parametrize(
    ("region", "given", "expected"),
    [
        ("us-east-1", "", "stack:PagesWebAcl"),
        ("us-east-1", SAMPLE_ACL_ARN, SAMPLE_ACL_ARN),
        ("eu-west-2", SAMPLE_ACL_ARN, SAMPLE_ACL_ARN),
        ("ca-central-1", "", None),
    ],
)
def test_every_deploy_the_rules_allow_has_a_web_acl(
    template: dict[str, Any], region: str, given: str, expected: str | None
) -> None:
    parameters = {"AWS::Region": region, "PagesWebAclArn": given}
    refused = failed_rules(template, parameters)
    if expected is None:
        # Outside us-east-1 without an ACL the deploy is refused before anything is made, saying what to do.
        (description,) = refused
        assert "ops/pages-waf.yaml" in description and "PagesWebAclArn" in description
        assert "us-east-1" in description
        assert WAF_TEMPLATE.exists()
    else:
        assert refused == []
        assert attached_acl(template, parameters) == expected
    created = evaluate(template["Conditions"]["CreatesPagesWebAcl"], parameters, template["Conditions"])
    assert created == (expected == "stack:PagesWebAcl")


def test_the_given_arn_is_one_a_cloudfront_acl_in_us_east_1_has(template: dict[str, Any]) -> None:
    pattern = template["Parameters"]["PagesWebAclArn"]["AllowedPattern"]
    assert re.fullmatch(pattern, SAMPLE_ACL_ARN)
    assert re.fullmatch(pattern, "")
    assert not re.fullmatch(pattern, SAMPLE_ACL_ARN.replace("us-east-1", "eu-west-2"))
    assert not re.fullmatch(pattern, SAMPLE_ACL_ARN.replace(":global/", ":regional/"))


def acl_properties(template: dict[str, Any]) -> dict[str, Any]:
    (acl,) = [resource for resource in template["Resources"].values() if resource["Type"] == "AWS::WAFv2::WebACL"]
    return dict(acl["Properties"])


def test_the_acl_limits_each_address_and_the_writes_that_make_work_more(template: dict[str, Any]) -> None:
    acl = acl_properties(template)
    assert acl["Scope"] == "CLOUDFRONT"
    assert acl["DefaultAction"] == {"Allow": {}}
    rules = {rule["Name"]: rule for rule in acl["Rules"]}
    assert len({rule["Priority"] for rule in rules.values()}) == len(rules)
    for name, rule in rules.items():
        statement = rule["Statement"]["RateBasedStatement"]
        assert statement["AggregateKeyType"] == "IP", name
        assert statement["EvaluationWindowSec"] in (60, 120, 300, 600), name
        assert 10 <= statement["Limit"] <= 5000, name
        blocked = rule["Action"]["Block"]["CustomResponse"]
        assert blocked["ResponseCode"] == 429, name
        assert blocked["CustomResponseBodyKey"] in acl["CustomResponseBodies"], name
        assert rule["VisibilityConfig"]["MetricName"] == name
    writes = rules["ResidentWritesPerAddress"]["Statement"]["RateBasedStatement"]
    everything = rules["RequestsPerAddress"]["Statement"]["RateBasedStatement"]
    assert "ScopeDownStatement" not in everything
    matches = {
        (json.dumps(match["ByteMatchStatement"]["FieldToMatch"]), match["ByteMatchStatement"]["SearchString"])
        for match in writes["ScopeDownStatement"]["AndStatement"]["Statements"]
    }
    assert matches == {('{"Method": {}}', "POST"), ('{"UriPath": {}}', "/conversations")}
    assert writes["Limit"] < everything["Limit"]


def test_a_blocked_client_reads_one_sentence_in_the_apis_error_shape(template: dict[str, Any]) -> None:
    for body in acl_properties(template)["CustomResponseBodies"].values():
        assert body["ContentType"] == "APPLICATION_JSON"
        answer = json.loads(body["Content"])
        assert set(answer) == {"error", "message"}
        assert answer["error"].isidentifier()
        assert re.fullmatch(r"[A-Z][^.]+\.", answer["message"])


def test_the_us_east_1_template_makes_the_same_acl(template: dict[str, Any], waf_template: dict[str, Any]) -> None:
    ours, theirs = acl_properties(template), acl_properties(waf_template)
    assert ours.pop("Name") != theirs.pop("Name")  # each stack names its own
    assert ours == theirs
    assert waf_template["Outputs"]["WebAclArn"]["Value"] == {"Fn::GetAtt": ["PagesWebAcl", "Arn"]}
    # It refuses any region but us-east-1, where CloudFront takes it from.
    assert failed_rules(waf_template, {"AWS::Region": "us-east-1"}) == []
    (refusal,) = failed_rules(waf_template, {"AWS::Region": "eu-west-2"})
    assert "us-east-1" in refusal
    assert not waf_template.get("Parameters")


def test_cfn_lint_passes_on_the_waf_template() -> None:
    runner = "import sys; from cfnlint.runner import main; sys.exit(main())"
    result = subprocess.run(
        [sys.executable, "-c", runner, str(WAF_TEMPLATE)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- every route its own throttle -------------------------------------------------------------------------


def api_route_keys(template: dict[str, Any]) -> dict[str, str]:
    """`METHOD /path` of every ConversationApi route -> the function that serves it."""
    keys = {}
    for name in FUNCTIONS:
        for event in function_properties(template, name).get("Events", {}).values():
            if event["Type"] == "HttpApi" and referenced_id(event["Properties"]["ApiId"]) == "ConversationApi":
                keys[f"{event['Properties']['Method'].upper()} {event['Properties']['Path']}"] = name
    return keys


def test_every_route_has_its_own_throttle_and_the_staffs_are_apart(template: dict[str, Any]) -> None:
    from devstack.events import ROUTES

    api = template["Resources"]["ConversationApi"]["Properties"]
    settings = api["RouteSettings"]
    routes = api_route_keys(template)
    assert set(settings) == set(routes) == {f"{method} {path}" for method, path in ROUTES}
    for key, limits in settings.items():
        assert set(limits) == {"ThrottlingBurstLimit", "ThrottlingRateLimit"}, key
        assert 0 < limits["ThrottlingRateLimit"] <= limits["ThrottlingBurstLimit"], key
        staff = key.split(" ", 1)[1].startswith("/staff/")
        assert staff == (routes[key] == "StaffApiFunction"), key
    # What makes GPU work is held tighter than what reads it.
    turns = settings["POST /conversations/{conversation_id}/turns"]["ThrottlingRateLimit"]
    polls = settings["GET /conversations/{conversation_id}/turns/{turn_id}"]["ThrottlingRateLimit"]
    assert turns < polls
    # The stage default is for a route not named above; there is none, but it stays set.
    assert api["DefaultRouteSettings"]["ThrottlingRateLimit"] > 0


# SAM writes the route settings onto the stage it makes, and the routes from the events: the keys must be
# the routes' own for API Gateway to take them (a key naming no route fails the deploy).
SAM_SCRIPT = r"""
import json, sys
from cfnlint.decode import decode
from samtranslator.translator.transform import transform

template, _ = decode(sys.argv[1])
for resource in template["Resources"].values():
    if resource["Type"] == "AWS::Serverless::Function":
        resource["Properties"]["CodeUri"] = "s3://bucket/key"
    if resource["Type"] == "AWS::Serverless::LayerVersion":
        resource["Properties"]["ContentUri"] = "s3://bucket/key"

class NoManagedPolicies:
    def load(self):
        return {}

parameters = {"StaffSignInDomainPrefix": "x", "VpcId": "vpc-1", "VpcSubnetIds": "subnet-1"}
out = transform(template, parameters, NoManagedPolicies())
(stage,) = [r for r in out["Resources"].values() if r["Type"] == "AWS::ApiGatewayV2::Stage"]
paths = out["Resources"]["ConversationApi"]["Properties"]["Body"]["paths"]
print(json.dumps({
    "stage_routes": sorted(stage["Properties"].get("RouteSettings", {})),
    "api_routes": sorted(f"{method.upper()} {path}" for path, item in paths.items() for method in item),
    "rules": sorted(out.get("Rules", {})),
}))
"""


def test_sam_puts_each_routes_throttle_on_the_stage_under_the_routes_own_key(template: dict[str, Any]) -> None:
    transformed = run_in_deploy_tools(SAM_SCRIPT, str(TEMPLATE))
    assert transformed["stage_routes"] == transformed["api_routes"] == sorted(api_route_keys(template))
    assert transformed["rules"] == sorted(template["Rules"])  # the transform keeps the Rules section


# `sam local invoke` (docs/DEPLOY.md, step 5) reads the template without CloudFormation: the functions get
# the dynamic reference itself, unresolved, which must not refuse every sample event.
SAM_LOCAL_SCRIPT = r"""
import json, sys
from samcli.lib.providers.sam_function_provider import SamFunctionProvider
from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider
from samcli.local.lambdafn.env_vars import EnvironmentVariables

stacks, _ = SamLocalStackProvider.get_stacks(
    sys.argv[1],
    parameter_overrides={"StaffSignInDomainPrefix": "x", "VpcId": "vpc-1", "VpcSubnetIds": "subnet-1"},
    global_parameter_overrides={"AWS::Region": "us-east-1"},
)
provider = SamFunctionProvider(stacks)
values = {}
for name in ("TurnApiFunction", "StaffApiFunction"):
    function = provider.get(name)
    variables = EnvironmentVariables(
        function.name, function.memory, function.timeout, function.handler,
        variables=function.environment["Variables"],
    ).resolve()
    values[name] = variables["ORIGIN_VERIFY"]
print(json.dumps(values))
"""


def test_sam_local_invoke_is_not_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from dialogue.aws.api import unverified_origin
    from dialogue.settings import get_settings

    values = run_in_deploy_tools(SAM_LOCAL_SCRIPT, str(TEMPLATE))
    monkeypatch.setenv("TABLE_NAME", "a-table")
    for name, value in values.items():
        assert value.startswith("{{resolve:secretsmanager:"), name  # not the secret: nothing resolved it
        monkeypatch.setenv("ORIGIN_VERIFY", value)
        get_settings.cache_clear()
        try:
            assert unverified_origin({"headers": {}}) is None, name
        finally:
            get_settings.cache_clear()
