"""What the system keeps: conversation state and per-turn records of slots, actions and flags."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from dialogue.actions import Action, HumanReview, ReplyScreen, ReplySource, Screen, TurnStatus
from dialogue.state import DialogueState


class ConversationRecord(BaseModel):
    """The STATE item: the current slots, a version for conditional writes, and the turn count."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    conversation_id: UUID
    state: DialogueState
    version: Annotated[int, Field(ge=0)]
    turn_count: Annotated[int, Field(ge=0)]
    created_at: datetime
    updated_at: datetime


class TurnRecord(BaseModel):
    """The TURN item: the retained record of one turn. It holds no text the user typed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    conversation_id: UUID
    turn_id: Annotated[int, Field(ge=1)]
    intent: str
    injection_screen: bool
    privileged_request: bool
    slots: dict[str, str]
    action: Action
    reply_source: ReplySource
    status: TurnStatus
    reply_screen: ReplyScreen
    human_review: HumanReview
    screens_fired: tuple[Screen, ...] = ()
    fallback_used: bool = False
    created_at: datetime
    finalized_at: datetime | None = None


class ScreenOutcome(BaseModel):
    """The screen function's verdict on one generated reply."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    screens_fired: tuple[Screen, ...]
    fallback_used: bool
    reply_screen: ReplyScreen
    human_review: HumanReview
    final_reply: str
