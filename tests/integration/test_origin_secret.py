"""The origin-verify secret, kept and rotated (dialogue.aws.origin, ops/rotate_origin_secret.py), on moto.

Deployed, the turn and staff functions get the secret's ARN (ORIGIN_VERIFY_SECRET_ARN), never its value.
They read its current and previous versions on their first request and accept either; a header that
matches neither makes them read again, at most once a minute. A secret that cannot be read refuses every
request. `make rotate-origin-secret` stores a new value, waits out that minute, then gives the value to
CloudFront: a request carrying the old value or the new one goes on throughout, and a third is refused.
"""

from __future__ import annotations

import io
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from devstack.events import LOCAL_ORIGIN_VERIFY
from devstack.stack import ORIGIN_VERIFY_SECRET_ARN, REGION, LocalStack, local_stack
from dialogue.aws import origin
from dialogue.aws.api import ORIGIN_VERIFY_HEADER
from dialogue.aws.factory import reset_caches
from dialogue.aws.origin import OriginValues

ROOT = Path(__file__).resolve().parents[2]
OLD = "OldValue4k2Hq8Lr1Vz7Pm3Xc9Tb5Nd0Wf6Gy2Ja8Qe4Ks1Uo"
THIRD = "ThirdValue7Rj2Wm5Xk8Pz1Lq4Tn9Vb3Hc6Gd0Fs5Ya2Ne8Ku"
REFUSED = {"error": "DirectAccessRefused", "message": "This API answers only at the desk's public address."}


class Clock:
    """dialogue.aws.origin's monotonic clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    moved = Clock()
    monkeypatch.setattr(origin, "monotonic", moved)
    return moved


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch, clock: Clock) -> Iterator[tuple[LocalStack, str]]:
    """A local stack whose functions are set as deployed: the secret's ARN, no local value."""
    with local_stack(origin_verify=None) as stack:
        secrets = boto3.client("secretsmanager", region_name=REGION)
        arn = secrets.create_secret(Name="desk-OriginVerifySecret", SecretString=OLD)["ARN"]
        monkeypatch.setenv(ORIGIN_VERIFY_SECRET_ARN, arn)
        reset_caches()
        yield stack, arn
        reset_caches()


def status(stack: LocalStack, value: str | None, staff: bool = False) -> int:
    headers = {} if value is None else {ORIGIN_VERIFY_HEADER: value}
    if staff:
        return stack.call_staff_api("GET", "/staff/stats", headers=headers, via_cloudfront=False).status
    return stack.call_api("POST", "/conversations", headers=headers, via_cloudfront=False).status


def test_the_functions_accept_the_secrets_value_and_nothing_else(deployed: tuple[LocalStack, str]) -> None:
    stack, _ = deployed
    assert status(stack, OLD) == 201
    assert status(stack, OLD, staff=True) == 200
    for wrong in (None, "", LOCAL_ORIGIN_VERIFY, THIRD, OLD[:-1], OLD + "x"):
        assert status(stack, wrong) == 403, wrong
        assert status(stack, wrong, staff=True) == 403, wrong
    # The local value is ignored once a secret is named, and neither value is ever logged.
    assert not [line for line in stack.log_lines if OLD in line or THIRD in line]


def test_a_secret_that_cannot_be_read_refuses_every_request(
    deployed: tuple[LocalStack, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stack, arn = deployed
    monkeypatch.setenv(ORIGIN_VERIFY_SECRET_ARN, arn.replace("OriginVerifySecret", "NoSuchSecret"))
    monkeypatch.setenv("ORIGIN_VERIFY", OLD)  # a local value does not stand in for a secret it cannot read
    reset_caches()
    for sent in (OLD, LOCAL_ORIGIN_VERIFY, THIRD):
        response = stack.call_api("POST", "/conversations", headers={ORIGIN_VERIFY_HEADER: sent}, via_cloudfront=False)
        assert (response.status, response.body) == (403, REFUSED)
    warnings = [line for line in stack.log_lines if "origin-verify secret unreadable" in line]
    assert warnings and all("ResourceNotFoundException" in line for line in warnings)
    assert not [line for line in stack.log_lines if OLD in line or THIRD in line]


def _distribution(cloudfront: Any, value: str) -> str:
    config = {
        "CallerReference": "desk",
        "Comment": "desk",
        "Enabled": True,
        "Origins": {
            "Quantity": 2,
            "Items": [
                {
                    "Id": "pages",
                    "DomainName": "pages.s3.us-east-1.amazonaws.com",
                    "S3OriginConfig": {"OriginAccessIdentity": ""},
                },
                {
                    "Id": "api",
                    "DomainName": "abc123.execute-api.us-east-1.amazonaws.com",
                    "OriginPath": "/prod",
                    "CustomHeaders": {
                        "Quantity": 1,
                        "Items": [{"HeaderName": "X-Origin-Verify", "HeaderValue": value}],
                    },
                    "CustomOriginConfig": {"HTTPPort": 80, "HTTPSPort": 443, "OriginProtocolPolicy": "https-only"},
                },
            ],
        },
        "DefaultCacheBehavior": {
            "TargetOriginId": "pages",
            "ViewerProtocolPolicy": "redirect-to-https",
            "CachePolicyId": "658327ea-f89d-4fab-a63d-7e88639e58f6",
        },
    }
    distribution_id: str = cloudfront.create_distribution(DistributionConfig=config)["Distribution"]["Id"]
    return distribution_id


def _cloudfront_value(cloudfront: Any, distribution_id: str) -> str:
    config = cloudfront.get_distribution_config(Id=distribution_id)["DistributionConfig"]
    (api,) = [item for item in config["Origins"]["Items"] if item["Id"] == "api"]
    (header,) = api["CustomHeaders"]["Items"]
    value: str = header["HeaderValue"]
    return value


def test_a_rotation_refuses_no_request_and_cloudfront_sends_the_new_value(
    deployed: tuple[LocalStack, str], clock: Clock
) -> None:
    from ops.rotate_origin_secret import REFRESH_WAIT_SECONDS, rotate

    stack, arn = deployed
    secrets = boto3.client("secretsmanager", region_name=REGION)
    cloudfront = boto3.client("cloudfront", region_name=REGION)
    distribution_id = _distribution(cloudfront, OLD)
    # Given a warm function that has read the secret, as CloudFront sends its value
    assert status(stack, OLD) == 201
    # When the operator rotates (a request with CloudFront's old value arrives at each step)
    out = io.StringIO()
    waited: list[float] = []

    def sleep(seconds: float) -> None:
        assert status(stack, OLD) == 201  # between storing the new value and giving it to CloudFront
        waited.append(seconds)
        clock.advance(seconds)

    rotate(secrets, cloudfront, arn, distribution_id, out=out, sleep=sleep, wait_delay=0, wait_attempts=5)
    # Then CloudFront sends the new value, the secret's current one, and the old one is its previous
    new = secrets.get_secret_value(SecretId=arn)["SecretString"]
    assert new != OLD and len(new) == 48 and new.isalnum()
    assert secrets.get_secret_value(SecretId=arn, VersionStage="AWSPREVIOUS")["SecretString"] == OLD
    assert _cloudfront_value(cloudfront, distribution_id) == new
    assert waited == [REFRESH_WAIT_SECONDS]
    # and the warm function takes the new value on its first request with it, and still the old one
    assert status(stack, new) == 201
    assert status(stack, OLD) == 201
    assert status(stack, new, staff=True) == 200
    assert status(stack, OLD, staff=True) == 200
    # but no third value
    assert status(stack, THIRD) == 403
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and all(line.startswith("rotate-origin-secret: ") for line in lines)
    assert "AWSCURRENT" in lines[0] and "deployed" in lines[-1]
    assert not [line for line in lines if new in line or OLD in line]
    assert not [line for line in stack.log_lines if new in line or OLD in line]


def test_a_rotation_stopped_before_cloudfront_is_finished_not_started_again(
    deployed: tuple[LocalStack, str], clock: Clock
) -> None:
    from ops.rotate_origin_secret import rotate

    _, arn = deployed
    secrets = boto3.client("secretsmanager", region_name=REGION)
    cloudfront = boto3.client("cloudfront", region_name=REGION)
    distribution_id = _distribution(cloudfront, OLD)
    secrets.put_secret_value(SecretId=arn, SecretString=THIRD)  # stored, but CloudFront never got it
    out = io.StringIO()
    rotate(secrets, cloudfront, arn, distribution_id, out=out, sleep=clock.advance, wait_delay=0, wait_attempts=5)
    # No new value: the one CloudFront sends stays accepted (AWSPREVIOUS), and CloudFront gets the current one
    assert secrets.get_secret_value(SecretId=arn)["SecretString"] == THIRD
    assert secrets.get_secret_value(SecretId=arn, VersionStage="AWSPREVIOUS")["SecretString"] == OLD
    assert _cloudfront_value(cloudfront, distribution_id) == THIRD
    assert "finishing it" in out.getvalue()


def test_the_command_names_what_it_could_not_find(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    from ops import rotate_origin_secret

    class Pages:
        def paginate(self, StackName: str) -> list[dict[str, Any]]:
            return [
                {"StackResourceSummaries": [{"LogicalResourceId": "PagesDistribution", "PhysicalResourceId": "E1"}]}
            ]

    class CloudFormation:
        def get_paginator(self, name: str) -> Pages:
            return Pages()

    class Session:
        def __init__(self, region_name: str | None = None) -> None:
            pass

        def client(self, name: str) -> Any:
            return CloudFormation() if name == "cloudformation" else object()

    monkeypatch.setattr(boto3, "Session", Session)
    assert rotate_origin_secret.main(["--stack", "desk"]) == 1
    error = capsys.readouterr().err.strip()
    assert (
        error
        == "rotate-origin-secret: the stack desk has no OriginVerifySecret: is it this project's stack, fully deployed?"
    )


# --- the cache: read once, again on a mismatch at most once a minute, and after a restore ----------------


def test_a_flood_of_wrong_headers_reads_the_secret_at_most_once_a_minute(clock: Clock) -> None:
    reads: list[float] = []
    held = ["first"]

    def read() -> tuple[str, ...]:
        reads.append(clock.now)
        return tuple(held)

    values = OriginValues(read)
    assert values.accepts("first") and len(reads) == 1  # the first request reads
    for _ in range(1000):
        assert not values.accepts("wrong")
    assert len(reads) == 1  # within the minute after a read, no wrong header reads again
    held[:] = ["second", "first"]  # a rotation
    clock.advance(origin.REFRESH_SECONDS)
    assert values.accepts("second") and len(reads) == 2  # the new value's first request reads again
    assert values.accepts("first") and len(reads) == 2
    clock.advance(origin.MAX_AGE_SECONDS)
    held[:] = ["third", "second"]  # another: "first" retired
    assert not values.accepts("first")  # values this old are read again on any request
    assert len(reads) == 3


def test_a_failed_read_keeps_what_was_read_and_with_nothing_read_refuses(clock: Clock) -> None:
    from botocore.exceptions import EndpointConnectionError

    failing = [False]

    def read() -> tuple[str, ...]:
        if failing[0]:
            raise EndpointConnectionError(endpoint_url="https://secretsmanager.us-east-1.amazonaws.com")
        return ("value",)

    values = OriginValues(read)
    assert values.accepts("value")
    failing[0] = True
    clock.advance(origin.MAX_AGE_SECONDS)
    assert values.accepts("value")  # a short outage refuses nothing that went through before
    never = OriginValues(read)
    assert not never.accepts("value") and not never.accepts("")


def test_snapstart_forgets_the_values_after_a_restore(monkeypatch: pytest.MonkeyPatch) -> None:
    """The handlers register forget_origin_values to run after each restore: a snapshot taken before a
    rotation holds nothing a restored environment trusts without reading again."""
    from dialogue import snapstart
    from dialogue.settings import get_settings

    before: list[Any] = []
    after: list[Any] = []
    fake = types.ModuleType("snapshot_restore_py")
    fake.register_before_snapshot = before.append  # type: ignore[attr-defined]
    fake.register_after_restore = after.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", fake)
    assert snapstart.register_snapshot_hooks(after_restore=(origin.forget_origin_values,)) is True
    assert before == [snapstart.prime] and after == [origin.forget_origin_values]
    for handler in ("turn_api", "staff_api"):
        source = (ROOT / "functions" / handler / f"{handler}.py").read_text()
        assert "register_snapshot_hooks(after_restore=(forget_origin_values,))" in source, handler
    monkeypatch.setenv("TABLE_NAME", "conversations")
    monkeypatch.setenv("ORIGIN_VERIFY", "before-the-snapshot")
    monkeypatch.delenv(ORIGIN_VERIFY_SECRET_ARN, raising=False)
    reset_caches()
    try:
        assert origin.get_origin_values().accepts("before-the-snapshot")
        after[0]()  # the restore
        assert origin.get_origin_values()._read_at is None  # read again on the next request
        get_settings.cache_clear()
    finally:
        reset_caches()
    assert os.environ["ORIGIN_VERIFY"] == "before-the-snapshot"
