"""Builders for the events Lambda receives: API Gateway HTTP API (payload 2.0) and SQS batches.

The same builders write the sample files in events/ and drive the handlers in tests and devstack.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

TURN_ROUTES = (
    ("POST", "/conversations"),
    ("POST", "/conversations/{conversation_id}/turns"),
    ("GET", "/conversations/{conversation_id}/turns/{turn_id}"),
    ("GET", "/conversations/{conversation_id}/messages"),
    ("GET", "/conversations/{conversation_id}"),
    ("POST", "/conversations/{conversation_id}/contact"),
)
"""The turn API's routes (TurnApiFunction's events in template.yaml): public."""
STAFF_ROUTES = (
    ("GET", "/staff/reviews"),
    ("GET", "/staff/handoffs"),
    ("GET", "/staff/stats"),
    ("GET", "/staff/desk"),
    ("GET", "/staff/audit"),
    *(("GET", f"/staff/{queue}/{{conversation_id}}/{{turn_id}}") for queue in ("reviews", "handoffs")),
    *(("POST", f"/staff/{queue}/{{conversation_id}}/{{turn_id}}/{verb}") for queue in ("reviews", "handoffs")
      for verb in ("claim", "release")),
    ("POST", "/staff/reviews/{conversation_id}/{turn_id}/decision"),
    ("POST", "/staff/handoffs/{conversation_id}/{turn_id}/reply"),
    ("POST", "/staff/handoffs/{conversation_id}/{turn_id}/close"),
    ("POST", "/staff/handoffs/{conversation_id}/{turn_id}/contact"),
    *(("POST", f"/staff/{queue}/{{conversation_id}}/{{turn_id}}/slots") for queue in ("reviews", "handoffs")),
)  # fmt: skip
"""The staff API's routes (StaffApiFunction's events): each behind the JWT authorizer."""
ROUTES = TURN_ROUTES + STAFF_ROUTES

ORIGIN_VERIFY_HEADER = "x-origin-verify"  # dialogue.aws.api's: the header CloudFront adds
LOCAL_ORIGIN_VERIFY = "local-origin-verify-not-a-secret"
"""The X-Origin-Verify value of a local run: what `local_stack` accepts (ORIGIN_VERIFY, in place of the
deployed functions' secret), what events/env.json gives `sam local invoke`, and what `http_event` adds, as
CloudFront adds the stack's value in AWS. Nothing deployed accepts it."""


@dataclass(frozen=True)
class FakeLambdaContext:
    """The attributes Powertools reads from a Lambda context."""

    function_name: str = "local"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:local"
    aws_request_id: str = "00000000-0000-4000-8000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def _route_key(method: str, path: str) -> tuple[str, dict[str, str]]:
    """The route template a path matches, and its path parameters (as API Gateway fills them)."""
    for route_method, template in ROUTES:
        if route_method != method:
            continue
        pattern = "^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template) + "$"
        match = re.match(pattern, path)
        if match:
            return f"{method} {template}", match.groupdict()
    return f"{method} {path}", {}


def http_event(
    method: str,
    path: str,
    body: Any = None,
    *,
    raw_body: str | None = None,
    headers: dict[str, str] | None = None,
    query: str = "",
    json_content_type: bool = True,
    claims: dict[str, str] | None = None,
    origin_verify: str | None = LOCAL_ORIGIN_VERIFY,
) -> dict[str, Any]:
    """An HTTP API payload-2.0 event. `body` is sent as JSON; `raw_body` is sent as given.

    `query` is the raw query string (without `?`); `json_content_type=False` sends `headers` alone,
    as a real client's request arrives, instead of adding `content-type: application/json`. `claims`
    are a verified token's, as the JWT authorizer passes them on. `origin_verify` is the X-Origin-Verify
    value CloudFront would add (None: a request that came past CloudFront); `headers` may override it.
    """
    route_key, parameters = _route_key(method, path)
    text = raw_body if raw_body is not None else (json.dumps(body) if body is not None else None)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": query,
        "headers": {
            **({"content-type": "application/json"} if json_content_type else {}),
            **({ORIGIN_VERIFY_HEADER: origin_verify} if origin_verify is not None else {}),
            **(headers or {}),
        },
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": "localhost",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "devstack",
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route_key,
            "stage": "$default",
            "time": "29/Nov/2026:12:00:00 +0000",
            "timeEpoch": 1_795_953_600_000,
        },
        "isBase64Encoded": False,
    }
    if claims is not None:
        event["requestContext"]["authorizer"] = {"jwt": {"claims": claims, "scopes": None}}
    if parameters:
        event["pathParameters"] = parameters
    if query:
        event["queryStringParameters"] = {
            name: ",".join(values) for name, values in parse_qs(query, keep_blank_values=True).items()
        }
    if text is not None:
        event["body"] = text
    return event


def sqs_event(messages: list[dict[str, Any]], queue_arn: str) -> dict[str, Any]:
    """An SQS event source batch from messages as `receive_message(AttributeNames=["All"])` returns them."""
    region = queue_arn.split(":")[3]
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": message.get("Attributes", {}),
                "messageAttributes": {
                    name: {
                        "stringValue": value.get("StringValue"),
                        "binaryValue": value.get("BinaryValue"),
                        "stringListValues": [],
                        "binaryListValues": [],
                        "dataType": value["DataType"],
                    }
                    for name, value in message.get("MessageAttributes", {}).items()
                },
                "md5OfBody": message["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
            for message in messages
        ]
    }
