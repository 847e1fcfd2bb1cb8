"""What the system keeps: conversation state and per-turn records of slots, actions and flags."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, get_args
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from dialogue.actions import Action, HandoffStatus, HumanReview, Queue, ReplyScreen, ReplySource, Screen, TurnStatus
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
    # The worded replies asked for in the current hour-long window, and when that window began.
    generated_since: datetime | None = None
    generated_count: Annotated[int, Field(ge=0)] = 0
    # The conversation's open hand-off item (its turn's number) until staff close it (dialogue.handoffs).
    open_handoff: Annotated[int, Field(ge=1)] | None = None


class HandoffAsk(BaseModel):
    """One turn left to a person, as its conversation's open hand-off item lists it: names, never text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn_id: Annotated[int, Field(ge=1)]
    action: Action
    intent: str
    topic: str | None = None
    at: datetime


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
    # The handbook topic a question asked about (a pack name), when it decided the action.
    topic: str | None = None
    # What the desk asked with this turn's reply, or still waits for: a request action or `confirm`.
    asked: str | None = None
    reply_source: ReplySource
    status: TurnStatus
    reply_screen: ReplyScreen
    human_review: HumanReview
    screens_fired: tuple[Screen, ...] = ()
    fallback_used: bool = False
    created_at: datetime
    finalized_at: datetime | None = None
    # The staff desk: the queue the turn waits in (a sparse index), its claim and its outcome.
    queue: Queue | None = None
    queued_at: datetime | None = None
    handoff_status: HandoffStatus | None = None
    # A turn that joined its conversation's open hand-off item: that item's turn (dialogue.handoffs).
    joined_to: Annotated[int, Field(ge=1)] | None = None
    # On an open hand-off item: the later turns that joined it, oldest first.
    joined: tuple[HandoffAsk, ...] = ()
    claimed_by: str | None = None
    # The claim holder's display name, for their colleagues (absent where the sign-in gives none).
    claimed_by_name: str | None = None
    claim_expires_at: datetime | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    decision_reason: str | None = None
    # A turn a member of staff wrote, correcting the record (dialogue.desk.corrected_record): their subject.
    # Absent on every resident's turn, so the retained record tells the two apart.
    corrected_by: str | None = None

    @property
    def opens_handoff(self) -> bool:
        """Whether this turn opened an item of the hand-off queue (its conversation's open item, from now)."""
        return self.queue is Queue.HANDOFF and self.handoff_status is HandoffStatus.OPEN

    def as_ask(self) -> HandoffAsk:
        return HandoffAsk(
            turn_id=self.turn_id, action=self.action, intent=self.intent, topic=self.topic, at=self.created_at
        )


class Draft(BaseModel):
    """What the model wrote for a turn, kept for the staff's review: model text built from state and
    handbook rows, never user text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    output_tokens: Annotated[int, Field(ge=0)] | None = None
    ended_by_eos: bool
    hit_token_cap: bool
    passage_ids: tuple[str, ...] = ()


class ScreenOutcome(BaseModel):
    """The screen function's verdict on one generated reply (with the draft it judged), or a deadline's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    screens_fired: tuple[Screen, ...]
    fallback_used: bool
    reply_screen: ReplyScreen
    human_review: HumanReview
    final_reply: str
    draft: Draft | None = None


def datetime_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of `model` that hold a datetime (optional or not), in their declared order."""
    return tuple(
        name
        for name, field in model.model_fields.items()
        if field.annotation is datetime or datetime in get_args(field.annotation)
    )


def desk_turn(
    before: ConversationRecord,
    state: DialogueState,
    *,
    intent: str,
    action: Action,
    now: datetime,
    **desk_fields: object,
) -> TurnRecord:
    """A turn the desk writes itself, with nothing the resident typed (a contact form left, a staff
    correction of the record): the next turn of `before`, with `state`'s slots and question, its reply the
    pack's fixed text for `action` (rebuilt from its slots when read), final at once. `desk_fields` are
    TurnRecord's staff-desk fields (a queue, a hand-off's status, `corrected_by`)."""
    return TurnRecord.model_validate(
        {
            "conversation_id": before.conversation_id,
            "turn_id": before.turn_count + 1,
            "intent": intent,
            "injection_screen": False,
            "privileged_request": False,
            "slots": dict(state.slots),
            "action": action,
            "asked": state.asked,
            "reply_source": ReplySource.FIXED,
            "status": TurnStatus.FINAL,
            "reply_screen": ReplyScreen.NOT_APPLICABLE,
            "human_review": HumanReview.NOT_APPLICABLE,
            "created_at": now,
            "finalized_at": now,
            **desk_fields,
        }
    )
