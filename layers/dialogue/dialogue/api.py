"""What both HTTP APIs (the resident's turn API and the staff API) share: the error body and its codes,
which refusal maps to which status, the OpenAPI responses each route documents, and the handlers that
turn refusals, validation errors and unknown routes into that one error shape.

Every 4xx and 5xx body is `{"error": "<code>", "message": "<one sentence>"}`. The sentence is chosen
from the code (or, for a validation error, from where the problem is), never from what was sent.
"""

from __future__ import annotations

import base64
import hmac
import json
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any, Literal, cast

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError, ValidationException
from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel, ConfigDict

from dialogue.errors import (
    AlreadyDecided,
    ClaimedByOther,
    ClaimRequired,
    ConcurrentTurnConflict,
    ConversationNotFound,
    CorrectionRequired,
    DialogueError,
    DirectAccessRefused,
    GeneratedTurnLimitReached,
    HandoffClosed,
    InvalidDecision,
    InvalidIdempotencyKey,
    NoDraftToSend,
    NotInQueue,
    NotSignedIn,
    NotStaff,
    QueueUnavailable,
    RetryInProgress,
    StaffTextTooLong,
    StaffWriteConflict,
    StoreUnavailable,
    TurnLimitReached,
    TurnNotFound,
)
from dialogue.observability import logger, metrics
from dialogue.settings import get_settings

ErrorCode = Literal[
    # Refusals of the dialogue core and the staff desk, by the error's class name (dialogue.errors).
    "ConversationNotFound",
    "TurnNotFound",
    "ConcurrentTurnConflict",
    "RetryInProgress",
    "TurnLimitReached",
    "GeneratedTurnLimitReached",
    "InvalidIdempotencyKey",
    "StoreUnavailable",
    "QueueUnavailable",
    "NotInQueue",
    "ClaimedByOther",
    "ClaimRequired",
    "AlreadyDecided",
    "HandoffClosed",
    "InvalidDecision",
    "CorrectionRequired",
    "StaffWriteConflict",
    "NoDraftToSend",
    "StaffTextTooLong",
    "NotSignedIn",
    "NotStaff",
    "DirectAccessRefused",
    # Requests the resolvers refuse before the core sees them.
    "invalid_conversation_id",
    "invalid_turn_id",
    "invalid_body",
    "missing_text",
    "invalid_text_length",
    "unexpected_field",
    "invalid_text_type",
    "invalid_cursor",
    "invalid_decision",
    "invalid_query",
    "invalid_request",
    "route_not_found",
]


class ErrorBody(BaseModel):
    """Every 4xx and 5xx body: a stable code and one sentence that never repeats the input."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorCode
    message: str


ERROR_STATUS: Mapping[type[DialogueError], HTTPStatus] = {
    ConversationNotFound: HTTPStatus.NOT_FOUND,
    TurnNotFound: HTTPStatus.NOT_FOUND,
    NotInQueue: HTTPStatus.NOT_FOUND,
    ConcurrentTurnConflict: HTTPStatus.CONFLICT,
    RetryInProgress: HTTPStatus.CONFLICT,
    TurnLimitReached: HTTPStatus.CONFLICT,
    GeneratedTurnLimitReached: HTTPStatus.TOO_MANY_REQUESTS,
    ClaimedByOther: HTTPStatus.CONFLICT,
    ClaimRequired: HTTPStatus.CONFLICT,
    AlreadyDecided: HTTPStatus.CONFLICT,
    HandoffClosed: HTTPStatus.CONFLICT,
    InvalidIdempotencyKey: HTTPStatus.BAD_REQUEST,
    InvalidDecision: HTTPStatus.UNPROCESSABLE_ENTITY,
    CorrectionRequired: HTTPStatus.UNPROCESSABLE_ENTITY,
    StaffWriteConflict: HTTPStatus.CONFLICT,
    NoDraftToSend: HTTPStatus.UNPROCESSABLE_ENTITY,
    StaffTextTooLong: HTTPStatus.UNPROCESSABLE_ENTITY,
    NotSignedIn: HTTPStatus.UNAUTHORIZED,
    NotStaff: HTTPStatus.FORBIDDEN,
    DirectAccessRefused: HTTPStatus.FORBIDDEN,
    StoreUnavailable: HTTPStatus.SERVICE_UNAVAILABLE,
    QueueUnavailable: HTTPStatus.SERVICE_UNAVAILABLE,
}
RETRYABLE: tuple[type[DialogueError], ...] = (
    ConcurrentTurnConflict,
    StaffWriteConflict,
    RetryInProgress,
    StoreUnavailable,
    QueueUnavailable,
)
"""Refusals that may succeed if sent again: they carry `Retry-After`."""


def error_response(
    status: HTTPStatus, code: ErrorCode, message: str, headers: dict[str, str] | None = None
) -> Response[Any]:
    metrics.add_metric(name="RequestsRefused", unit=MetricUnit.Count, value=1)
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=ErrorBody(error=code, message=message).model_dump(),
        headers=headers,
    )


def refusal_response(refusal: DialogueError) -> dict[str, Any]:
    """A payload-2.0 answer to a request refused before any route runs, in the ErrorBody shape."""
    status = ERROR_STATUS[type(refusal)]
    logger.info("request refused", error=type(refusal).__name__, status=int(status))
    metrics.add_metric(name="RequestsRefused", unit=MetricUnit.Count, value=1)
    # Every DialogueError's class name is an ErrorCode (tests/unit/test_api_models.py checks it).
    body = ErrorBody(error=cast(ErrorCode, type(refusal).__name__), message=refusal.message)
    return {
        "statusCode": int(status),
        "headers": {"Content-Type": "application/json"},
        "body": json.dumps(body.model_dump()),
        "isBase64Encoded": False,
    }


# --- the front door: only CloudFront reaches the API -----------------------------------------------

ORIGIN_VERIFY_HEADER = "x-origin-verify"
"""The header the pages' distribution adds to every request it forwards to the API (template.yaml's
PagesDistribution, OriginCustomHeaders), holding the stack's OriginVerifySecret. A request sent straight
to the execute-api endpoint, past CloudFront and its WAF, does not carry it."""
UNRESOLVED_REFERENCE = "{{resolve:secretsmanager:"
"""How ORIGIN_VERIFY reads where nothing resolved the template's dynamic reference (sam local)."""


def unverified_origin(event: Mapping[str, Any]) -> dict[str, Any] | None:
    """The 403 answer to a request that did not come through CloudFront, or None to go on.

    Checked first, before a route, a token's group or a store is looked at: nothing from the request is
    read but this one header, compared in constant time, and nothing of it is logged. With no
    ORIGIN_VERIFY in the environment (devstack's handler tests) every request goes on, and so with the
    template's own unresolved `{{resolve:secretsmanager:...}}` reference: `sam local invoke` reads the
    template without CloudFormation, which resolves the reference in every deployed function (a deploy
    that cannot resolve it fails).
    """
    expected = get_settings().origin_verify.get_secret_value()
    if not expected or (expected.startswith(UNRESOLVED_REFERENCE) and expected.endswith("}}")):
        return None
    headers = event.get("headers")
    sent = ""
    if isinstance(headers, Mapping):
        # API Gateway passes header names in lower case; a hand-made event may not.
        sent = next((str(value) for name, value in headers.items() if str(name).lower() == ORIGIN_VERIFY_HEADER), "")
    if hmac.compare_digest(sent.encode(), expected.encode()):
        return None
    return refusal_response(DirectAccessRefused())


# --- what each route documents -------------------------------------------------------------------


def _json(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"model": model}}


_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}}


def success(status: HTTPStatus, model: type[BaseModel], description: str) -> dict[int, Any]:
    return {int(status): {"description": description, "content": _json(model)}}


def error_responses(descriptions: Mapping[int, str]) -> Callable[..., dict[int, Any]]:
    """An API's `errors(*statuses)`: the error responses a route can send, each in the ErrorBody shape:
    those named, and on every route 404 (a method no route has), 422 (Powertools documents its
    validation error on every validated route; these APIs send validation errors in the ErrorBody shape)
    and 503. 409 and 503 say when to retry."""

    def errors(*statuses: int) -> dict[int, Any]:
        documented: dict[int, Any] = {}
        for status in sorted({*statuses, 404, 422, 503}):
            response: dict[str, Any] = {"description": descriptions[status], "content": _json(ErrorBody)}
            if status in (409, 429, 503):
                response["headers"] = _RETRY_AFTER
            documented[status] = response
        return documented

    return errors


# --- the handlers ----------------------------------------------------------------------------------

ValidationMessage = Callable[[list[dict[str, Any]]], tuple[ErrorCode, str]]


def install_error_handlers(
    app: APIGatewayHttpResolver, validation_message: ValidationMessage, names: Iterable[str]
) -> None:
    """Answer every refusal, validation error and unknown route of `app` in the ErrorBody shape.

    `validation_message` words the first problem of a validation error; `names` are the parameter and
    field names the API declares itself, the only ones a log line may carry (a client's unknown field
    name is input, so it is logged as "?").
    """
    known = frozenset({"body", "path", "query", "header", *names})

    @app.exception_handler(DialogueError)
    def handle_dialogue_error(error: DialogueError) -> Response[Any]:
        status = ERROR_STATUS.get(type(error), HTTPStatus.INTERNAL_SERVER_ERROR)
        logger.info("request refused", error=type(error).__name__, status=int(status))
        headers = {"Retry-After": "1"} if isinstance(error, RETRYABLE) else None
        if isinstance(error, GeneratedTurnLimitReached):
            headers = {"Retry-After": str(error.retry_after)}
        # Every DialogueError's class name is an ErrorCode (tests/unit/test_api_models.py checks it).
        return error_response(status, cast(ErrorCode, type(error).__name__), error.message, headers)

    @app.exception_handler([RequestValidationError, ValidationException])
    def handle_validation_error(error: ValidationException) -> Response[Any]:
        problems = list(error.errors())
        code, message = validation_message(problems)
        # Where and what kind, never the offending values, nor a name the client chose.
        logger.info(
            "request rejected", error=code, locations=[known_location(p.get("loc", ()), known) for p in problems]
        )
        status = HTTPStatus.UNPROCESSABLE_ENTITY if code.endswith("length") else HTTPStatus.BAD_REQUEST
        return error_response(status, code, message)

    @app.not_found
    def handle_not_found(_: Exception) -> Response[Any]:
        return error_response(HTTPStatus.NOT_FOUND, "route_not_found", "No route matches that method and path.")


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
