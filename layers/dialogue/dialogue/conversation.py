"""The turn logic: understand → update state → choose action → retain → queue for wording.

The user's text enters `take_turn`, is read by `understand`, and goes no further.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict

from dialogue.actions import Action, HumanReview, ReplyScreen, ReplySource, Screen, TurnStatus
from dialogue.errors import ConversationNotFound, TurnLimitReached, TurnNotFound
from dialogue.pack import DomainPack
from dialogue.policy import next_state
from dialogue.queues import RealizeJobPublisher
from dialogue.realize import build_realize_job
from dialogue.records import ConversationRecord, ScreenOutcome, TurnRecord
from dialogue.replies import fixed_reply
from dialogue.state import DialogueState
from dialogue.store import ConversationStore
from dialogue.understanding import understand


class TurnView(BaseModel):
    """A turn as the API shows it: the retained record plus the reply once there is one to show."""

    model_config = ConfigDict(frozen=True)

    turn: TurnRecord
    reply: str | None


def new_conversation(conversation_id: UUID, pack: DomainPack, now: datetime) -> ConversationRecord:
    """A conversation before its first turn: every slot unknown."""
    return ConversationRecord(
        conversation_id=conversation_id,
        state=DialogueState.new(pack.frame),
        version=0,
        turn_count=0,
        created_at=now,
        updated_at=now,
    )


def start_conversation(store: ConversationStore, pack: DomainPack, now: datetime) -> UUID:
    conversation_id = uuid4()
    store.create_conversation(new_conversation(conversation_id, pack, now))
    return conversation_id


def load_conversation(store: ConversationStore, conversation_id: UUID) -> ConversationRecord:
    record = store.load_conversation(conversation_id)
    if record is None:
        raise ConversationNotFound()
    return record


def take_turn(
    conversation_id: UUID,
    text: str,
    *,
    store: ConversationStore,
    publisher: RealizeJobPublisher,
    pack: DomainPack,
    now: datetime,
    max_turns: int,
) -> TurnView:
    """Apply one user turn. Fixed actions come back final with their reply; generated ones pending."""
    before = load_conversation(store, conversation_id)
    if before.turn_count >= max_turns:
        raise TurnLimitReached()
    understanding = understand(text, pack)
    state, action = next_state(before.state, understanding, pack)
    uses_model = action.uses_model
    turn = TurnRecord(
        conversation_id=conversation_id,
        turn_id=before.turn_count + 1,
        intent=understanding.intent,
        injection_screen=understanding.injection_screen,
        privileged_request=understanding.privileged_request,
        slots=dict(state.slots),
        action=action,
        reply_source=ReplySource.MODEL if uses_model else ReplySource.FIXED,
        status=TurnStatus.PENDING if uses_model else TurnStatus.FINAL,
        reply_screen=ReplyScreen.NOT_APPLICABLE,
        human_review=HumanReview.PENDING if uses_model else HumanReview.NOT_APPLICABLE,
        created_at=now,
        finalized_at=None if uses_model else now,
    )
    store.commit_turn(before, state, turn)
    if not uses_model:
        return TurnView(turn=turn, reply=fixed_reply(action, state, pack))
    publisher.publish(
        build_realize_job(
            conversation_id=conversation_id, turn_id=turn.turn_id, state=state, action=action, pack=pack, now=now
        )
    )
    return TurnView(turn=turn, reply=None)


def view_turn(
    store: ConversationStore,
    pack: DomainPack,
    conversation_id: UUID,
    turn_id: int,
    *,
    now: datetime,
    reply_deadline: timedelta,
) -> TurnView:
    """A stored turn with the reply to show: fixed text, or the screened reply once final.

    A generated reply still pending past the deadline is finalized here with the fixed fallback, so
    the user always gets a reply; a realization arriving later finds the turn final and is dropped.
    """
    load_conversation(store, conversation_id)
    turn = store.get_turn(conversation_id, turn_id)
    if turn is None:
        raise TurnNotFound()
    if turn.status is TurnStatus.PENDING and now - turn.created_at >= reply_deadline:
        state = DialogueState.from_slots(pack.frame, turn.slots)
        outcome = ScreenOutcome(
            screens_fired=(Screen.DEADLINE,),
            fallback_used=True,
            reply_screen=ReplyScreen.NOT_APPLICABLE,
            human_review=HumanReview.NOT_APPLICABLE,
            final_reply=fixed_reply(Action(turn.action), state, pack),
        )
        store.record_screened_reply(conversation_id, turn_id, outcome, now)
        # Whether this call or a just-arrived realization finalized it, show what is stored now.
        turn = store.get_turn(conversation_id, turn_id) or turn
    if turn.status is TurnStatus.PENDING:
        return TurnView(turn=turn, reply=None)
    if turn.reply_source is ReplySource.FIXED:
        state = DialogueState.from_slots(pack.frame, turn.slots)
        return TurnView(turn=turn, reply=fixed_reply(Action(turn.action), state, pack))
    return TurnView(turn=turn, reply=store.get_reply(conversation_id, turn_id))
