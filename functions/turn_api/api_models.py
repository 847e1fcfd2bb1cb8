"""The turn API's request and response bodies, separate from the stored records, and how each route
documents them (the OpenAPI responses the resolver publishes)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from dialogue.actions import Action, HumanReview, ReplyScreen, ReplySource, Screen, TurnStatus

MAX_TEXT_CHARS = 1000


class TurnRequest(BaseModel):
    """What the user typed. It is read by the understanding step and never stored or echoed."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, description="What the user typed.")]


class ConversationCreated(BaseModel):
    conversation_id: UUID


class TurnAccepted(BaseModel):
    """The answer to a posted turn: final with a fixed reply, or pending while a model words it."""

    conversation_id: UUID
    turn_id: int
    action: Action
    reply_source: ReplySource
    status: TurnStatus
    reply: str | None = None


class TurnAnswer(BaseModel):
    """A posted turn's HTTP answer, as an idempotent retry gets it back."""

    status_code: Literal[200, 202]
    body: TurnAccepted


class IdempotentTurn(BaseModel):
    """What identifies a posted turn for Powertools' idempotency: the conversation and the client's key.
    Never the text (the idempotency table holds a hash of these two)."""

    conversation_id: UUID
    idempotency_key: str


class TurnDetail(BaseModel):
    conversation_id: UUID
    turn_id: int
    intent: str
    injection_screen: bool
    privileged_request: bool
    action: Action
    slots: dict[str, str]
    reply_source: ReplySource
    status: TurnStatus
    reply: str | None = None
    reply_screen: ReplyScreen
    human_review: HumanReview
    screens_fired: list[Screen]
    fallback_used: bool


class ConversationDetail(BaseModel):
    conversation_id: UUID
    slots: dict[str, str]
    turn_count: int


ErrorCode = Literal[
    # Refusals of the dialogue core, by the error's class name (dialogue.errors).
    "ConversationNotFound",
    "TurnNotFound",
    "ConcurrentTurnConflict",
    "RetryInProgress",
    "TurnLimitReached",
    "InvalidIdempotencyKey",
    "StoreUnavailable",
    "QueueUnavailable",
    # Requests the resolver refuses before the core sees them.
    "invalid_conversation_id",
    "invalid_turn_id",
    "invalid_body",
    "missing_text",
    "invalid_text_length",
    "unexpected_field",
    "invalid_text_type",
    "invalid_request",
    "route_not_found",
]


class ErrorBody(BaseModel):
    """Every 4xx and 5xx body: a stable code and one sentence that never repeats the input."""

    model_config = ConfigDict(extra="forbid")

    error: ErrorCode
    message: str


# --- what each route documents ---------------------------------------------------------------------

_ERROR_DESCRIPTIONS = {
    400: 'Malformed request: an id that is not well formed, or a body that is not a JSON object holding exactly one string field, "text".',  # noqa: E501
    404: "No conversation or turn with that id, or no route for that method and path.",
    409: "Another turn changed the conversation first, a retry of this key is still running, or the "
    "conversation reached its turn limit.",
    422: "The request does not validate: on a posted turn, the text is empty or longer than the limit "
    "(any other malformed request is a 400).",
    503: "The store is unavailable for a moment; retry after `Retry-After` seconds.",
}
_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}}


def _json(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"model": model}}


def success(status: HTTPStatus, model: type[BaseModel], description: str) -> dict[int, Any]:
    return {int(status): {"description": description, "content": _json(model)}}


def errors(*statuses: int) -> dict[int, Any]:
    """The error responses a route can send, each in the ErrorBody shape: those named, and on every
    route 404 (a method no route has), 422 (Powertools documents its validation error on every
    validated route; this API sends validation errors in the ErrorBody shape) and 503. 409 and 503
    say when to retry."""
    documented: dict[int, Any] = {}
    for status in sorted({*statuses, 404, 422, 503}):
        response: dict[str, Any] = {"description": _ERROR_DESCRIPTIONS[status], "content": _json(ErrorBody)}
        if status in (409, 503):
            response["headers"] = _RETRY_AFTER
        documented[status] = response
    return documented
