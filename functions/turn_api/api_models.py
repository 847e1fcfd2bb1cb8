"""The turn API's request and response bodies, separate from the stored records."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from dialogue.actions import Action, HumanReview, ReplyScreen, ReplySource, TurnStatus

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
    screens_fired: list[str]
    fallback_used: bool


class ConversationDetail(BaseModel):
    conversation_id: UUID
    slots: dict[str, str]
    turn_count: int


class ErrorBody(BaseModel):
    """Every 4xx and 5xx body: a stable code and one sentence that never repeats the input."""

    error: str
    message: str
