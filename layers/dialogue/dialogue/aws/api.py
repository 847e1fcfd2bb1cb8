"""What both HTTP APIs (the resident's turn API and the staff API) share: the error body and its codes
(read from dialogue.errors' one table), the OpenAPI responses each route documents, and the handlers that
turn refusals, validation errors and unknown routes into that one error shape.

Every 4xx and 5xx body is `{"error": "<code>", "message": "<one sentence>"}`: the code and its status,
whether to retry and its sentence are the one table's (dialogue.errors.ERRORS). A validation error's code
is chosen from where the problem is; no sentence is ever chosen from what was sent.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Literal

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError, ValidationException
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ConfigDict

from dialogue.aws.observability import logger, metrics
from dialogue.aws.origin import get_origin_values
from dialogue.errors import ERRORS, DialogueError, DirectAccessRefused, GeneratedTurnLimitReached

if TYPE_CHECKING:
    ErrorCode = str
else:
    ErrorCode = Literal[tuple(ERRORS)]
"""Every code the APIs send: the table's (dialogue.errors.ERRORS), never written out again. The OpenAPI
documents list them as the enum of ErrorBody's `error`."""


class ErrorBody(BaseModel):
    """Every 4xx and 5xx body: a stable code and one sentence that never repeats the input."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorCode
    message: str


def _headers(error: DialogueError | None, retry: bool) -> dict[str, str] | None:
    if isinstance(error, GeneratedTurnLimitReached):
        return {"Retry-After": str(error.retry_after)}
    return {"Retry-After": "1"} if retry else None


def error_response(code: ErrorCode, refusal: DialogueError | None = None) -> Response[Any]:
    """The answer for `code`: the table's status and sentence, and `Retry-After` where it says to retry."""
    kind = ERRORS[code]
    metrics.add_metric(name="RequestsRefused", unit=MetricUnit.Count, value=1)
    return Response(
        status_code=kind.status,
        content_type=content_types.APPLICATION_JSON,
        body=ErrorBody(error=code, message=kind.message).model_dump(),
        headers=_headers(refusal, kind.retry),
    )


def refusal_response(refusal: DialogueError) -> dict[str, Any]:
    """A payload-2.0 answer to a request refused before any route runs, in the ErrorBody shape."""
    code = type(refusal).__name__
    kind = ERRORS[code]
    logger.info("request refused", error=code, status=kind.status)
    metrics.add_metric(name="RequestsRefused", unit=MetricUnit.Count, value=1)
    body = ErrorBody(error=code, message=kind.message)
    return {
        "statusCode": kind.status,
        "headers": {"Content-Type": "application/json", **(_headers(refusal, kind.retry) or {})},
        "body": json.dumps(body.model_dump()),
        "isBase64Encoded": False,
    }


# --- the front door: only CloudFront reaches the API -----------------------------------------------

ORIGIN_VERIFY_HEADER = "x-origin-verify"
"""The header the pages' distribution adds to every request it forwards to the API (template.yaml's
PagesDistribution, OriginCustomHeaders), holding the stack's OriginVerifySecret. A request sent straight
to the execute-api endpoint, past CloudFront and its WAF, does not carry it."""


def unverified_origin(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The 403 answer to a request that did not come through CloudFront, or None to go on.

    Checked first, before a route, a token's group or a store is looked at: nothing from the request is
    read but this one header, compared in constant time with each accepted value (the secret's current
    and previous, dialogue.aws.origin), and nothing of it is logged. No setting, an empty one or a secret
    that cannot be read accepts no value: every request is refused.
    """
    headers = event.get("headers")
    sent = ""
    if isinstance(headers, Mapping):
        # API Gateway passes header names in lower case; a hand-made event may not.
        sent = next((str(value) for name, value in headers.items() if str(name).lower() == ORIGIN_VERIFY_HEADER), "")
    if sent and get_origin_values().accepts(sent):
        return None
    return refusal_response(DirectAccessRefused())


# --- what each route documents -------------------------------------------------------------------


def _json(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"model": model}}


_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}}
RETRY_STATUSES = frozenset(kind.status for kind in ERRORS.values() if kind.retry)
"""The statuses some code of the table answers with `Retry-After` (409, 429, 503)."""


def success(status: HTTPStatus, model: type[BaseModel], description: str) -> dict[int, Any]:
    return {int(status): {"description": description, "content": _json(model)}}


def error_responses(descriptions: Mapping[int, str]) -> Callable[..., dict[int, Any]]:
    """An API's `errors(*statuses)`: the error responses a route can send, each in the ErrorBody shape:
    those named, and on every route 404 (a method no route has), 422 (Powertools documents its
    validation error on every validated route; these APIs send validation errors in the ErrorBody shape)
    and 503. Those that a retryable code uses say when to retry."""

    def errors(*statuses: int) -> dict[int, Any]:
        documented: dict[int, Any] = {}
        for status in sorted({*statuses, 404, 422, 503}):
            response: dict[str, Any] = {"description": descriptions[status], "content": _json(ErrorBody)}
            if status in RETRY_STATUSES:
                response["headers"] = _RETRY_AFTER
            documented[status] = response
        return documented

    return errors


# --- the handlers ----------------------------------------------------------------------------------

ValidationCode = Callable[[list[dict[str, Any]]], ErrorCode]


def install_error_handlers(app: APIGatewayHttpResolver, validation_code: ValidationCode, names: Iterable[str]) -> None:
    """Answer every refusal, validation error and unknown route of `app` in the ErrorBody shape.

    `validation_code` names the first problem of a validation error (its sentence is the table's);
    `names` are the parameter and field names the API declares itself, the only ones a log line may carry
    (a client's unknown field name is input, so it is logged as "?").
    """
    known = frozenset({"body", "path", "query", "header", *names})

    @app.exception_handler(DialogueError)
    def handle_dialogue_error(error: DialogueError) -> Response[Any]:
        code = type(error).__name__
        logger.info("request refused", error=code, status=ERRORS[code].status)
        return error_response(code, error)

    @app.exception_handler([RequestValidationError, ValidationException])
    def handle_validation_error(error: ValidationException) -> Response[Any]:
        problems = list(error.errors())
        code = validation_code(problems)
        # Where and what kind, never the offending values, nor a name the client chose.
        logger.info(
            "request rejected", error=code, locations=[known_location(p.get("loc", ()), known) for p in problems]
        )
        return error_response(code)

    @app.not_found
    def handle_not_found(_: Exception) -> Response[Any]:
        return error_response("route_not_found")


def known_location(location: Iterable[Any], known: frozenset[str]) -> list[str]:
    """A validation error's location with every part the API does not name itself replaced by "?"."""
    return [str(part) if isinstance(part, int) or part in known else "?" for part in location]


def problem_at(problems: list[dict[str, Any]]) -> tuple[tuple[Any, ...], str]:
    """The first problem's location and kind (pydantic's error type)."""
    first = problems[0] if problems else {}
    return tuple(first.get("loc", ())), str(first.get("type", ""))


BODY_UNREADABLE = frozenset({"json_invalid", "unsupported_content_type", "model_attributes_type", "dict_type"})
"""Validation error kinds that mean the body was not a JSON object at all."""


def body_read_as_json(event: dict[str, Any]) -> dict[str, Any]:
    """The event with its body read as JSON, whatever content type it declares.

    Powertools parses form and multipart bodies by their content type, and raises ValueError on a
    multipart type without a boundary; json.loads raises RecursionError on deep nesting, ValueError
    on an integer over 4,300 digits, and the base64 body of a non-UTF-8 request fails to decode.
    Each of those was a 500 (found by the fuzz tests). A body that cannot be read is replaced by one
    that is not JSON, so the resolver refuses it as usual: 400 invalid_body.
    """
    headers = {name: value for name, value in (event.get("headers") or {}).items() if name.lower() != "content-type"}
    headers["content-type"] = content_types.APPLICATION_JSON
    body = event.get("body")
    if not body:
        return {**event, "headers": headers}
    try:
        text = base64.b64decode(body, validate=True).decode() if event.get("isBase64Encoded") else str(body)
        json.loads(text)
    except (ValueError, RecursionError):
        text = "{"
    return {**event, "headers": headers, "body": text, "isBase64Encoded": False}
