"""Only CloudFront reaches the API: the turn and staff functions refuse a request whose X-Origin-Verify
header does not hold an accepted value (a request sent straight to the execute-api endpoint, past
CloudFront and its WAF) with one fixed 403, before anything of it is read, stored or logged. Here the
accepted value is the local stack's ORIGIN_VERIFY, the deliberate local stand-in for the deployed
functions' secret (tests/integration/test_origin_secret.py); with no value set, every request is refused.
`devstack serve` plays CloudFront: it adds its own value to every API request."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from devstack.events import LOCAL_ORIGIN_VERIFY, FakeLambdaContext, http_event
from devstack.serve import Gateway
from devstack.stack import ORIGIN_VERIFY, ORIGIN_VERIFY_SECRET_ARN, LocalStack, local_stack
from dialogue.aws.api import ORIGIN_VERIFY_HEADER
from dialogue.aws.factory import reset_caches

VALUE = "Zx8mQ2vR7kLp4Tn9Wb3Yc6Hd1Jf5Gs0A"
MARKER = "Quokka-Sentinel-4471"  # in the refused requests' bodies, paths and headers; never in a log
REFUSED = {"error": "DirectAccessRefused", "message": "This API answers only at the desk's public address."}


@pytest.fixture
def guarded() -> Iterator[LocalStack]:
    """A local stack whose handlers require the origin-verify value, as the deployed functions do."""
    with local_stack(origin_verify=VALUE) as stack:
        yield stack


def through_cloudfront(**extra: str) -> dict[str, str]:
    return {ORIGIN_VERIFY_HEADER: VALUE, **extra}


WRONG_VALUES = {
    "missing": {},
    "empty": {ORIGIN_VERIFY_HEADER: ""},
    "wrong": {ORIGIN_VERIFY_HEADER: MARKER},
    "a prefix of the value": {ORIGIN_VERIFY_HEADER: VALUE[:-1]},
    "the value and more": {ORIGIN_VERIFY_HEADER: VALUE + "x"},
    "not ASCII": {ORIGIN_VERIFY_HEADER: "é" * len(VALUE)},
}


@pytest.mark.parametrize("headers", WRONG_VALUES.values(), ids=WRONG_VALUES.keys())
def test_a_turn_api_request_without_the_value_is_refused_and_nothing_is_stored(
    guarded: LocalStack, headers: dict[str, str]
) -> None:
    # Given a conversation, started through CloudFront
    created = guarded.call_api("POST", "/conversations", headers=through_cloudfront())
    assert created.status == 201
    conversation_id = created.body["conversation_id"]
    items_before = guarded.table_items()
    guarded.log_lines.clear()
    # When requests arrive without the value: a new conversation, a turn (with an idempotency key) and reads
    past = {"via_cloudfront": False}  # sent straight to the API: the header is only what `headers` holds
    refused = [
        guarded.call_api("POST", "/conversations", headers={**headers, "x-note": MARKER}, **past),
        guarded.call_api(
            "POST",
            f"/conversations/{conversation_id}/turns",
            {"text": f"{MARKER} wants the first course"},
            headers={**headers, "idempotency-key": MARKER},
            **past,
        ),
        guarded.call_api("GET", f"/conversations/{conversation_id}", headers=headers, **past),
        guarded.call_api("GET", f"/conversations/{conversation_id}/turns/1", headers=headers, **past),
        guarded.call_api("GET", f"/conversations/{MARKER}/messages", headers=headers, **past),
        guarded.call_api("GET", f"/{MARKER}", headers=headers, **past),
    ]
    # Then each gets the same 403, one sentence that echoes nothing
    for response in refused:
        assert (response.status, response.body) == (403, REFUSED)
        assert response.headers["content-type"] == "application/json"
    # and nothing was stored: no conversation, no turn, no REQUEST item
    assert guarded.table_items() == items_before
    # and the logs say a request was refused, and nothing of what it held
    assert any('"request refused"' in line and "DirectAccessRefused" in line for line in guarded.log_lines)
    assert not [line for line in guarded.log_lines if MARKER in line or VALUE in line]


def test_a_turn_api_request_with_the_value_goes_on(guarded: LocalStack) -> None:
    created = guarded.call_api("POST", "/conversations", headers=through_cloudfront())
    assert created.status == 201
    conversation_id = created.body["conversation_id"]
    turn = guarded.call_api(
        "POST", f"/conversations/{conversation_id}/turns", {"text": "hello"}, headers=through_cloudfront()
    )
    assert turn.status in (200, 202), turn.body
    read = guarded.call_api("GET", f"/conversations/{conversation_id}", headers=through_cloudfront())
    assert (read.status, read.body["turn_count"]) == (200, 1)
    # A hand-made event may spell the header's name in any case; API Gateway's is lower case.
    spelled = guarded.call_api("POST", "/conversations", headers={"X-Origin-Verify": VALUE})
    assert spelled.status == 201
    assert not [line for line in guarded.log_lines if VALUE in line]


@pytest.mark.parametrize("headers", WRONG_VALUES.values(), ids=WRONG_VALUES.keys())
def test_a_staff_api_request_without_the_value_is_refused_before_its_token_is_looked_at(
    guarded: LocalStack, headers: dict[str, str]
) -> None:
    import staff_api

    items_before = guarded.table_items()
    # A staff member's valid token does not help without the value
    member = guarded.call_staff_api("GET", "/staff/stats", headers=headers, via_cloudfront=False)
    assert (member.status, member.body) == (403, REFUSED)
    action = guarded.call_staff_api("POST", f"/staff/handoffs/{MARKER}/1/claim", headers=headers, via_cloudfront=False)
    assert (action.status, action.body) == (403, REFUSED)
    # nor does its absence change the answer: the origin is checked first (no 401 that tells a prober more)
    event = http_event("GET", "/staff/stats", headers=headers, claims=None, origin_verify=None)
    result = staff_api.lambda_handler(event, FakeLambdaContext(function_name="staff_api"))
    assert result["statusCode"] == 403
    assert guarded.table_items() == items_before
    assert not [line for line in guarded.log_lines if MARKER in line or VALUE in line]


def test_a_staff_api_request_with_the_value_goes_on(guarded: LocalStack) -> None:
    assert guarded.call_staff_api("GET", "/staff/stats", headers=through_cloudfront()).status == 200
    # and the staff group is still checked after it
    outsider = guarded.call_staff_api(
        "GET", "/staff/stats", token=guarded.issuer.token("bo", groups=()), headers=through_cloudfront()
    )
    assert (outsider.status, outsider.body["error"]) == (403, "NotStaff")


def test_the_local_stack_accepts_its_local_value_as_cloudfront_would_send_it(stack: LocalStack) -> None:
    """devstack's handler tests run with the local value set (ORIGIN_VERIFY), and call_api and
    call_staff_api add it as CloudFront adds the stack's; a request without it is refused all the same."""
    assert os.environ[ORIGIN_VERIFY] == LOCAL_ORIGIN_VERIFY and ORIGIN_VERIFY_SECRET_ARN not in os.environ
    assert stack.call_api("POST", "/conversations").status == 201
    assert stack.call_staff_api("GET", "/staff/stats").status == 200
    assert stack.call_api("POST", "/conversations", via_cloudfront=False).status == 403
    assert stack.call_staff_api("GET", "/staff/stats", via_cloudfront=False).status == 403


@pytest.mark.parametrize("setting", [None, ""], ids=["missing", "empty"])
def test_without_a_value_every_request_is_refused(setting: str | None) -> None:
    """No setting, or an empty one, accepts nothing: whatever the header holds, even empty, is refused."""
    with local_stack(origin_verify=setting) as stack:
        assert os.environ.get(ORIGIN_VERIFY) == setting
        for sent in (None, "", LOCAL_ORIGIN_VERIFY, "{{resolve:secretsmanager:OriginVerifySecret:SecretString}}"):
            headers = {} if sent is None else {ORIGIN_VERIFY_HEADER: sent}
            created = stack.call_api("POST", "/conversations", headers=headers, via_cloudfront=False)
            assert (created.status, created.body) == (403, REFUSED), sent
            listed = stack.call_staff_api("GET", "/staff/stats", headers=headers, via_cloudfront=False)
            assert (listed.status, listed.body) == (403, REFUSED), sent
        assert not [line for line in stack.log_lines if LOCAL_ORIGIN_VERIFY in line]


def test_the_setting_is_the_stacks_own_and_goes_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """local_stack sets its ORIGIN_VERIFY and no secret's ARN, and puts back what was there."""
    monkeypatch.setenv(ORIGIN_VERIFY, "left-over")
    monkeypatch.setenv(ORIGIN_VERIFY_SECRET_ARN, "arn:aws:secretsmanager:us-east-1:123456789012:secret:left-over")
    with local_stack() as stack:
        assert stack.call_api("POST", "/conversations").status == 201  # not the shell's value, nor its secret
    assert os.environ[ORIGIN_VERIFY] == "left-over"
    assert os.environ[ORIGIN_VERIFY_SECRET_ARN].endswith(":left-over")
    monkeypatch.delenv(ORIGIN_VERIFY)
    monkeypatch.delenv(ORIGIN_VERIFY_SECRET_ARN)
    reset_caches()


# --- devstack serve plays CloudFront ---------------------------------------------------------------------


def _request(gateway: Gateway, method: str, path: str, headers: list[tuple[str, str]] | None = None) -> Any:
    reply = gateway.handle(method, path, [("Content-Type", "application/json"), *(headers or [])], b"")
    return reply.status


def test_devstack_serve_adds_its_value_and_overrides_the_clients(guarded: LocalStack) -> None:
    # Given the gateway devstack serve runs, with the stack's value
    gateway = Gateway(guarded, origin_verify=VALUE)
    # Then a client's request goes through, whatever it sent in the header
    assert _request(gateway, "POST", "/conversations") == 201
    assert _request(gateway, "POST", "/conversations", [("X-Origin-Verify", MARKER)]) == 201
    token = guarded.staff_token()
    assert _request(gateway, "GET", "/staff/stats", [("Authorization", f"Bearer {token}")]) == 200
    # and a front that does not add it (as the execute-api endpoint does not, in AWS) is refused
    bypass = Gateway(guarded, origin_verify=None)
    assert _request(bypass, "POST", "/conversations") == 403
    assert _request(bypass, "GET", "/staff/stats", [("Authorization", f"Bearer {token}")]) == 403
