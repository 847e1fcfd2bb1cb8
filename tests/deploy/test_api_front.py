"""The API's front door in the template: only CloudFront reaches the API (an origin-verify header the
stack generates and the turn and staff functions require, reading the secret by its ARN), a WAF web ACL
is always attached (the stack's own in us-east-1, ops/pages-waf.yaml's elsewhere, and a CloudFormation
rule refuses a deploy without one), no output hands out the execute-api endpoint, and every route has its
own throttle, the staff's apart from the residents'. The ACL's rules are run on sample requests by a small
evaluator: a staff API request without a bearer token is blocked first (so strangers never spend the
staff's route throttles), the limits per address and per staff token fit a desk's own traffic, and it
takes many addresses at those limits to use up any route. The distribution serves IPv4 only.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from cfnlint.decode import decode
from test_template import (
    FUNCTIONS,
    ROOT,
    TEMPLATE,
    as_list,
    function_environment,
    function_properties,
    iam_statements,
    referenced_id,
)

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


def test_the_turn_and_staff_functions_get_the_secrets_arn_never_its_value(template: dict[str, Any]) -> None:
    from dialogue.settings import Settings

    assert {"origin_verify_secret_arn", "origin_verify"} <= set(Settings.model_fields)
    for name in FUNCTIONS:
        environment = function_environment(template, name)
        statements = [
            statement
            for statement in iam_statements(function_properties(template, name).get("Policies", []))
            if any(str(action).startswith("secretsmanager:") for action in as_list(statement.get("Action", [])))
        ]
        if name in ("TurnApiFunction", "StaffApiFunction"):
            assert environment["ORIGIN_VERIFY_SECRET_ARN"] == {"Ref": "OriginVerifySecret"}, name
            # The plain local setting is declared (so `sam local invoke --env-vars` may set it) and empty.
            assert environment["ORIGIN_VERIFY"] == "", name
            # It may read that secret's value, and nothing else of Secrets Manager.
            (statement,) = statements
            assert statement["Effect"] == "Allow"
            assert as_list(statement["Action"]) == ["secretsmanager:GetSecretValue"]
            assert as_list(statement["Resource"]) == [{"Ref": "OriginVerifySecret"}]
        else:
            assert "ORIGIN_VERIFY_SECRET_ARN" not in environment and "ORIGIN_VERIFY" not in environment, name
            assert statements == [], name
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
    # Resolved in one place only, CloudFront's header: the functions read it from Secrets Manager by ARN.
    text = json.dumps(template)
    assert text.count("{{resolve:secretsmanager:") == 1
    assert text.count("{{resolve:secretsmanager:${OriginVerifySecret}:SecretString}}") == 1


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


# --- the ACL's rules, run on sample requests -------------------------------------------------------------
#
# A small evaluator of the statement types the ACL uses, as AWS WAF documents them: rules in priority
# order, the first Block ends the evaluation (so a blocked request is counted by no later rule), a
# rate-based rule counts the requests its scope-down matches per aggregation key (a request missing a
# custom key is not counted) and blocks a key's requests past its limit within the window.


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: tuple[tuple[str, str], ...] = ()
    ip: str = "198.51.100.7"

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key.lower() == name), None)


def bearer(token: str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbmEifQ.c2lnbmF0dXJl") -> tuple[tuple[str, str], ...]:
    return (("Authorization", f"Bearer {token}"),)


def _normalize_path(path: str) -> str:
    """WAF's NORMALIZE_PATH: repeated slashes collapsed, `.` and `..` segments resolved."""
    segments: list[str] = []
    for segment in re.sub("/+", "/", path).split("/")[1:]:
        if segment == "..":
            segments = segments[:-1]
        elif segment != ".":
            segments.append(segment)
    return "/" + "/".join(segments)


TRANSFORMS = {"NONE": lambda text: text, "URL_DECODE": unquote, "NORMALIZE_PATH": _normalize_path}


def _field(request: Request, field: dict[str, Any]) -> str | None:
    ((kind, options),) = field.items()
    if kind == "UriPath":
        return request.path
    if kind == "Method":
        return request.method
    if kind == "SingleHeader":
        assert options["Name"] == options["Name"].lower()  # WAF matches a single header's name in lower case
        return request.header(options["Name"])
    raise AssertionError(f"no evaluator for the field {kind}")


def _transformed(value: str, transformations: list[dict[str, Any]]) -> str:
    for step in sorted(transformations, key=lambda step: step["Priority"]):
        value = TRANSFORMS[step["Type"]](value)
    return value


def matches(statement: dict[str, Any], request: Request) -> bool:
    ((kind, body),) = statement.items()
    if kind == "AndStatement":
        return all(matches(part, request) for part in body["Statements"])
    if kind == "NotStatement":
        return not matches(body["Statement"], request)
    if kind in ("ByteMatchStatement", "RegexMatchStatement"):
        value = _field(request, body["FieldToMatch"])
        if value is None:  # a missing header matches nothing
            return False
        value = _transformed(value, body["TextTransformations"])
        if kind == "RegexMatchStatement":
            return re.search(body["RegexString"], value) is not None
        search, position = body["SearchString"], body["PositionalConstraint"]
        if position == "EXACTLY":
            return value == search
        if position == "STARTS_WITH":
            return value.startswith(search)
        raise AssertionError(f"no evaluator for {position}")
    raise AssertionError(f"no evaluator for {kind}")


class Acl:
    """The ACL's verdicts on a sequence of requests, all within one evaluation window."""

    def __init__(self, properties: dict[str, Any]) -> None:
        self.properties = properties
        self.rules = sorted(properties["Rules"], key=lambda rule: rule["Priority"])
        self.counts: Counter[tuple[str, str]] = Counter()

    def _key(self, statement: dict[str, Any], request: Request) -> str | None:
        if statement["AggregateKeyType"] == "IP":
            return request.ip
        assert statement["AggregateKeyType"] == "CUSTOM_KEYS"
        parts = []
        for key in statement["CustomKeys"]:
            ((kind, options),) = key.items()
            assert kind == "Header", kind
            value = request.header(options["Name"])
            if value is None:
                return None
            parts.append(_transformed(value, options["TextTransformations"]))
        return "|".join(parts)

    def verdict(self, request: Request) -> tuple[int, str | None]:
        """(status, the rule that blocked it): 200 and None for a request let through."""
        for rule in self.rules:
            statement = rule["Statement"]
            if "RateBasedStatement" in statement:
                rate = statement["RateBasedStatement"]
                scope = rate.get("ScopeDownStatement")
                if scope is not None and not matches(scope, request):
                    continue
                key = self._key(rate, request)
                if key is None:
                    continue
                self.counts[(rule["Name"], key)] += 1
                if self.counts[(rule["Name"], key)] <= rate["Limit"]:
                    continue
            elif not matches(statement, request):
                continue
            response = rule["Action"]["Block"]["CustomResponse"]
            return response["ResponseCode"], rule["Name"]
        assert self.properties["DefaultAction"] == {"Allow": {}}
        return 200, None

    def body(self, rule_name: str) -> dict[str, str]:
        (rule,) = [rule for rule in self.rules if rule["Name"] == rule_name]
        key = rule["Action"]["Block"]["CustomResponse"]["CustomResponseBodyKey"]
        answer: dict[str, str] = json.loads(self.properties["CustomResponseBodies"][key]["Content"])
        return answer


@pytest.fixture
def acl(template: dict[str, Any]) -> Acl:
    return Acl(acl_properties(template))


def test_the_first_rule_blocks_a_staff_api_request_without_a_bearer_token(template: dict[str, Any]) -> None:
    rules = sorted(acl_properties(template)["Rules"], key=lambda rule: rule["Priority"])
    first = rules[0]
    assert (first["Name"], first["Priority"]) == ("StaffWithoutBearer", 0)
    response = first["Action"]["Block"]["CustomResponse"]
    assert response["ResponseCode"] == 401
    assert response["ResponseHeaders"] == [{"Name": "WWW-Authenticate", "Value": "Bearer"}]
    # Its path is the one CloudFront sends to the API; the console page is elsewhere.
    behaviours = {behaviour["PathPattern"]: behaviour for behaviour in distribution_config(template)["CacheBehaviors"]}
    assert behaviours["/staff/*"]["TargetOriginId"] == "api"
    assert not [pattern for pattern in behaviours if pattern.startswith("/console")]
    # Every rule scoped to an API's paths names the path CloudFront sends to the API.
    api_paths = {
        pattern.rstrip("*") for pattern, behaviour in behaviours.items() if behaviour["TargetOriginId"] == "api"
    }
    assert api_paths == {"/staff/", "/conversations"}
    scoped = {
        rule["Name"]: {
            match["SearchString"]
            for match in _byte_matches(rule["Statement"])
            if match["FieldToMatch"] == {"UriPath": {}}
        }
        for rule in rules
    }
    assert scoped == {
        "StaffWithoutBearer": {"/staff/"},
        "StaffPerToken": {"/staff/"},
        "StaffPerAddress": {"/staff/"},
        "ResidentWritesPerAddress": {"/conversations"},
        "ResidentReadsPerAddress": {"/conversations"},
        "RequestsPerAddress": set(),
    }


def _byte_matches(node: Any) -> list[dict[str, Any]]:
    """Every ByteMatchStatement under a statement."""
    if isinstance(node, dict):
        found = [node["ByteMatchStatement"]] if "ByteMatchStatement" in node else []
        return found + [match for value in node.values() for match in _byte_matches(value)]
    if isinstance(node, list):
        return [match for value in node for match in _byte_matches(value)]
    return []


@pytest.mark.parametrize(
    ("request_", "status"),
    [
        (Request("GET", "/staff/reviews"), 401),
        (Request("POST", "/staff/handoffs/c/1/claim"), 401),
        (Request("GET", "/staff/stats", (("Authorization", "Basic YW5hOnNlY3JldA=="),)), 401),
        (Request("GET", "/staff/stats", (("Authorization", "Bearer not-a-jwt"),)), 401),
        (Request("GET", "/staff/stats", (("Authorization", "Bearer a.b.c extra"),)), 401),
        (Request("GET", "/staff/stats", (("Authorization", ""),)), 401),
        (Request("GET", "/%73taff/reviews"), 401),  # URL-encoded
        (Request("GET", "/./staff//reviews"), 401),  # not normalized
        (Request("GET", "/staff/reviews", bearer()), 200),
        (Request("POST", "/staff/reviews/c/1/decision", (("authorization", "Bearer x.y.z"),)), 200),
        # Not the staff API: the console page and its assets, the chat, the residents' API, the root.
        (Request("GET", "/console"), 200),
        (Request("GET", "/console/"), 200),
        (Request("GET", "/assets/console.js"), 200),
        (Request("GET", "/staff"), 200),  # no route: CloudFront sends it to the bucket
        (Request("GET", "/chat"), 200),
        (Request("GET", "/"), 200),
        (Request("POST", "/conversations"), 200),
        (Request("GET", "/conversations/c/messages"), 200),
    ],
    ids=lambda value: value if isinstance(value, int) else f"{value.method} {value.path} {value.headers}",
)
def test_what_the_acl_answers(acl: Acl, request_: Request, status: int) -> None:
    verdict, rule = acl.verdict(request_)
    assert verdict == status, rule
    if status == 401:
        assert rule == "StaffWithoutBearer"
        assert acl.body(rule) == {
            "error": "NotSignedIn",
            "message": "Sign in as desk staff: the request carries no bearer token.",
        }


def test_an_anonymous_flood_on_the_staff_api_spends_nothing_of_anyones(acl: Acl) -> None:
    # Given a stranger's address sending 10,000 staff requests without a token, at every staff route
    stranger = "203.0.113.66"
    for index in range(10_000):
        verdict, rule = acl.verdict(Request("POST", f"/staff/handoffs/c{index}/1/claim", ip=stranger))
        assert (verdict, rule) == (401, "StaffWithoutBearer")
    # Then none of it was counted (a blocked request reaches no later rule, nor API Gateway's throttles)
    assert not [key for key in acl.counts if key[1] == stranger]
    # and a member of staff, even one behind the same address, goes on
    assert acl.verdict(Request("GET", "/staff/reviews", bearer(), ip=stranger)) == (200, None)


def _console_five_minutes(acl: Acl, ip: str, token: str) -> list[int]:
    """One open console's 5 minutes (web/assets/console.js): three lists every 10 s, and 60 item reads and
    actions: 150 requests."""
    verdicts = []
    for _ in range(30):
        for path in ("/staff/handoffs", "/staff/reviews", "/staff/reviews"):
            verdicts.append(acl.verdict(Request("GET", path, bearer(token), ip=ip))[0])
    for index in range(30):
        verdicts.append(acl.verdict(Request("GET", f"/staff/handoffs/c{index}/1", bearer(token), ip=ip))[0])
        verdicts.append(acl.verdict(Request("POST", f"/staff/handoffs/c{index}/1/claim", bearer(token), ip=ip))[0])
    return verdicts


def test_a_desks_office_passes_and_a_made_up_token_flood_is_limited_per_address(acl: Acl) -> None:
    # Eight busy consoles behind one office address pass
    office = "192.0.2.10"
    for person in range(8):
        assert set(_console_five_minutes(acl, office, f"a.person{person}.s")) == {200}
    # A stranger sending made-up tokens (a new one each time) is stopped at the per-address limit
    limit = acl_rule(acl.properties, "StaffPerAddress")["Limit"]
    stranger = "203.0.113.9"
    verdicts = [
        acl.verdict(Request("GET", "/staff/stats", bearer(f"a.made{n}.up"), ip=stranger)) for n in range(limit + 5)
    ]
    assert {verdict for verdict, _ in verdicts[:limit]} == {200}
    assert set(verdicts[limit:]) == {(429, "StaffPerAddress")}
    # and another office, at its own limit, still goes on
    assert acl.verdict(Request("GET", "/staff/stats", bearer("a.person0.s"), ip="192.0.2.11")) == (200, None)


def test_one_token_is_limited_wherever_it_comes_from(acl: Acl) -> None:
    limit = acl_rule(acl.properties, "StaffPerToken")["Limit"]
    # two consoles signed in as one person fit
    assert set(
        _console_five_minutes(acl, "192.0.2.1", "a.ana.s") + _console_five_minutes(acl, "192.0.2.2", "a.ana.s")
    ) == {200}
    spread = [
        acl.verdict(Request("GET", "/staff/desk", bearer("a.ana.s"), ip=f"198.18.{n // 250}.{n % 250}"))
        for n in range(limit)
    ]
    assert set(spread) == {(429, "StaffPerToken")}  # 300 spent above, every address new


def test_residents_behind_one_address_pass_and_a_reader_flood_is_limited(acl: Acl) -> None:
    # Six busy chats behind one address, 5 minutes: 15 turns each, with their reads (web/assets/chat.js)
    shared = "192.0.2.50"
    for chat in range(6):
        for _turn in range(15):
            assert acl.verdict(Request("POST", f"/conversations/c{chat}/turns", ip=shared)) == (200, None)
            for _ in range(9):
                assert acl.verdict(Request("GET", f"/conversations/c{chat}/messages", ip=shared)) == (200, None)
    # One address reading as fast as it can is stopped at the read limit; its writes count apart
    reads = acl_rule(acl.properties, "ResidentReadsPerAddress")["Limit"]
    reader = "203.0.113.70"
    verdicts = [acl.verdict(Request("GET", "/conversations/c/messages", ip=reader)) for _ in range(reads + 1)]
    assert verdicts[-1] == (429, "ResidentReadsPerAddress") and set(verdicts[:-1]) == {(200, None)}
    writes = acl_rule(acl.properties, "ResidentWritesPerAddress")["Limit"]
    verdicts = [acl.verdict(Request("POST", "/conversations", ip=reader)) for _ in range(writes + 1)]
    assert verdicts[-1] == (429, "ResidentWritesPerAddress") and set(verdicts[:-1]) == {(200, None)}
    # and another address is untouched
    assert acl.verdict(Request("GET", "/conversations/c/messages", ip="203.0.113.71")) == (200, None)


def acl_rule(acl: dict[str, Any], name: str) -> dict[str, Any]:
    (rule,) = [rule for rule in acl["Rules"] if rule["Name"] == name]
    statement: dict[str, Any] = rule["Statement"].get("RateBasedStatement", rule["Statement"])
    return statement


def test_every_rate_rule_counts_per_address_or_per_token_and_answers_429(template: dict[str, Any]) -> None:
    acl = acl_properties(template)
    assert acl["Scope"] == "CLOUDFRONT"
    assert acl["DefaultAction"] == {"Allow": {}}
    rules = {rule["Name"]: rule for rule in acl["Rules"]}
    assert sorted(rules, key=lambda name: rules[name]["Priority"]) == [
        "StaffWithoutBearer",
        "StaffPerToken",
        "StaffPerAddress",
        "ResidentWritesPerAddress",
        "ResidentReadsPerAddress",
        "RequestsPerAddress",
    ]
    assert sorted(rule["Priority"] for rule in rules.values()) == list(range(len(rules)))
    for name, rule in rules.items():
        assert rule["VisibilityConfig"]["MetricName"] == name
        blocked = rule["Action"]["Block"]["CustomResponse"]
        assert blocked["CustomResponseBodyKey"] in acl["CustomResponseBodies"], name
        if name == "StaffWithoutBearer":
            continue
        statement = rule["Statement"]["RateBasedStatement"]
        assert statement["EvaluationWindowSec"] == 300, name
        assert 10 <= statement["Limit"] <= 5000, name
        assert blocked["ResponseCode"] == 429, name
        if name == "StaffPerToken":
            assert statement["AggregateKeyType"] == "CUSTOM_KEYS"
            ((kind, key),) = statement["CustomKeys"][0].items()
            assert (kind, key["Name"], len(statement["CustomKeys"])) == ("Header", "authorization", 1)
        else:
            assert statement["AggregateKeyType"] == "IP", name
    everything = rules["RequestsPerAddress"]["Statement"]["RateBasedStatement"]
    assert "ScopeDownStatement" not in everything
    writes = acl_rule(acl, "ResidentWritesPerAddress")
    matched = {
        (json.dumps(match["ByteMatchStatement"]["FieldToMatch"]), match["ByteMatchStatement"]["SearchString"])
        for match in writes["ScopeDownStatement"]["AndStatement"]["Statements"]
    }
    assert matched == {('{"Method": {}}', "POST"), ('{"UriPath": {}}', "/conversations")}
    for name in ("ResidentWritesPerAddress", "ResidentReadsPerAddress", "StaffPerAddress", "StaffPerToken"):
        assert acl_rule(acl, name)["Limit"] < everything["Limit"], name
    assert acl_rule(acl, "StaffPerToken")["Limit"] < acl_rule(acl, "StaffPerAddress")["Limit"]


def test_the_distribution_serves_ipv4_only(template: dict[str, Any]) -> None:
    """WAF's rate-based rules count single addresses and cannot group an IPv6 prefix: over IPv6, where a
    subscriber holds a /64, a per-address limit would limit no one."""
    assert distribution_config(template)["IPV6Enabled"] is False


def test_a_blocked_client_reads_one_sentence_in_the_apis_error_shape(template: dict[str, Any]) -> None:
    from dialogue.errors import ERRORS

    acl = acl_properties(template)
    for key, body in acl["CustomResponseBodies"].items():
        assert body["ContentType"] == "APPLICATION_JSON"
        answer = json.loads(body["Content"])
        assert set(answer) == {"error", "message"}
        assert answer["error"] == key
        assert re.fullmatch(r"[A-Z][^.]+\.", answer["message"])
    # The 401 is the APIs' own code for a request with no staff identity, with its status.
    for rule in acl["Rules"]:
        response = rule["Action"]["Block"]["CustomResponse"]
        code = response["CustomResponseBodyKey"]
        assert response["ResponseCode"] == (ERRORS[code].status if code in ERRORS else 429), rule["Name"]
    assert "NotSignedIn" in ERRORS


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


def test_it_takes_many_addresses_at_the_wafs_limits_to_use_up_any_route(template: dict[str, Any]) -> None:
    """API Gateway counts a request against its route before the JWT authorizer looks at it, and for every
    client together. A route's budget is the WAF's to protect: an address at the WAF's limit for that
    route's requests (per second) must be a small share of it. The staff's routes, which requests with
    made-up tokens reach, need the most addresses."""
    api = template["Resources"]["ConversationApi"]["Properties"]
    acl = acl_properties(template)

    def per_second(rule: str) -> float:
        statement = acl_rule(acl, rule)
        return float(statement["Limit"]) / float(statement["EvaluationWindowSec"])

    needed = {}
    for key, limits in api["RouteSettings"].items():
        method, path = key.split(" ", 1)
        if path.startswith("/staff/"):
            rule = "StaffPerAddress"
        else:
            rule = "ResidentWritesPerAddress" if method == "POST" else "ResidentReadsPerAddress"
        needed[key] = limits["ThrottlingRateLimit"] / per_second(rule)
    staff = {key: count for key, count in needed.items() if " /staff/" in key}
    residents = {key: count for key, count in needed.items() if key not in staff}
    assert min(staff.values()) >= 20, staff
    assert min(residents.values()) >= 10, residents
    # Each figure the template's comments give is the one computed here.
    text = TEMPLATE.read_text()
    assert "20 addresses, all sending made-up tokens to one route" in text
    assert round(needed["POST /conversations/{conversation_id}/turns"]) == 60 and "60 addresses" in text
    assert round(needed["GET /conversations/{conversation_id}/messages"]) == 20 and "20 addresses" in text


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


# `sam local invoke` (docs/DEPLOY.md, step 5) reads the template without CloudFormation, so nothing gives
# the functions a real secret's ARN; with `--env-vars events/env.json` they get the deliberate local
# setting (no ARN, the local value the sample events carry), and without it every request is refused.
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
overrides = json.loads(open(sys.argv[2]).read())
provider = SamFunctionProvider(stacks)
values = {}
for name in ("TurnApiFunction", "StaffApiFunction"):
    function = provider.get(name)
    for label, override in (("plain", {}), ("env.json", overrides[name])):
        variables = EnvironmentVariables(
            function.name, function.memory, function.timeout, function.handler,
            variables=function.environment["Variables"], override_values=override,
        ).resolve()
        values[f"{name} {label}"] = {key: variables[key] for key in ("ORIGIN_VERIFY_SECRET_ARN", "ORIGIN_VERIFY")}
print(json.dumps(values))
"""


def test_sam_local_invoke_takes_the_sample_events_with_env_json_and_refuses_them_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from moto import mock_aws

    from devstack.events import LOCAL_ORIGIN_VERIFY
    from dialogue.aws.api import unverified_origin
    from dialogue.aws.factory import reset_caches

    values = run_in_deploy_tools(SAM_LOCAL_SCRIPT, str(TEMPLATE), str(ROOT / "events" / "env.json"))
    sample = json.loads((ROOT / "events" / "api-create-conversation.json").read_text())
    staff_sample = json.loads((ROOT / "events" / "staff-stats.json").read_text())
    assert sample["headers"]["x-origin-verify"] == staff_sample["headers"]["x-origin-verify"] == LOCAL_ORIGIN_VERIFY
    monkeypatch.setenv("TABLE_NAME", "a-table")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name, variables in values.items():
        if name.endswith("env.json"):
            assert variables == {"ORIGIN_VERIFY_SECRET_ARN": "", "ORIGIN_VERIFY": LOCAL_ORIGIN_VERIFY}, name
        else:
            assert variables["ORIGIN_VERIFY"] == "", name
            assert not variables["ORIGIN_VERIFY_SECRET_ARN"].startswith("arn:"), name  # nothing resolved it
        for variable, value in variables.items():
            monkeypatch.setenv(variable, value)
        reset_caches()
        try:
            with mock_aws():  # no such secret here: unreadable, so refused
                verdicts = {unverified_origin(sample) is None, unverified_origin(staff_sample) is None}
        finally:
            reset_caches()
        assert verdicts == {name.endswith("env.json")}, name
