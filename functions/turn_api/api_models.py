"""The turn API's request and response bodies, separate from the stored records, and how each route
documents them (the OpenAPI responses the resolver publishes)."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from dialogue.actions import Action, ReplySource, TurnStatus
from dialogue.aws.api import ErrorBody, ErrorCode, error_responses, success
from dialogue.conversation import MessagePage
from dialogue.errors import MAX_TURN_TEXT_CHARS

__all__ = ["ErrorBody", "ErrorCode", "MessagePage", "errors", "success"]

MAX_TEXT_CHARS = MAX_TURN_TEXT_CHARS
MAX_CONTACT_DETAIL_CHARS = 200  # the pack's own limits (`[contact]`) are at most these
MAX_CONTACT_NOTE_CHARS = 1000


class TurnRequest(BaseModel):
    """What the user typed. It is read by the understanding step and never stored or echoed."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    text: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, description="What the user typed.")]


class ContactRequest(BaseModel):
    """What a resident writes in the chat's contact form, for a person: sealed at once, never logged,
    never read by understanding, never echoed (dialogue.contact)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    detail: Annotated[
        str | None, Field(max_length=MAX_CONTACT_DETAIL_CHARS, description="The detail the chosen channel takes.")
    ] = None
    note: Annotated[str | None, Field(max_length=MAX_CONTACT_NOTE_CHARS, description="A note for staff.")] = None


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
    """A posted turn's HTTP answer (a retry with the turn's Idempotency-Key gets the same status code)."""

    status_code: Literal[200, 202]
    body: TurnAccepted


class TurnDetail(BaseModel):
    """A turn as its resident sees it: whether its reply is ready, and the reply once it is. The turn's
    flags (screens, labels, reviews) are audit data: they stay in storage and in the staff API."""

    turn_id: int
    status: TurnStatus
    reply: str | None = None


class ConversationDetail(BaseModel):
    conversation_id: UUID
    slots: dict[str, str]
    turn_count: int


# --- what each route documents ---------------------------------------------------------------------

errors = error_responses(
    {
        400: 'Malformed request: an id that is not well formed, or a body that is not a JSON object holding exactly one string field, "text".',  # noqa: E501
        404: "No conversation or turn with that id, or no route for that method and path.",
        409: "Another turn changed the conversation first, or the conversation reached its turn limit.",
        429: "The conversation asked for more worded replies in the last hour than the desk allows; send the "
        "turn again after `Retry-After` seconds.",
        422: "The request does not validate: on a posted turn, the text is empty or longer than the limit "
        "(any other malformed request is a 400).",
        503: "The store is unavailable for a moment; retry after `Retry-After` seconds.",
    }
)
