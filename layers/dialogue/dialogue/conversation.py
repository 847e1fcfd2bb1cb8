"""The turn logic: understand → update state → choose action → retain.

The user's text enters `take_turn`, is read by `understand`, and goes no further. The turn is one
DynamoDB transaction; a generated turn goes on to be worded from the table's stream
(dialogue.dispatch), and its screened reply or deadline fallback is stored by the screen function.
Reading a turn never writes.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Literal
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict

from dialogue import handoffs
from dialogue.actions import HANDED_OFF, Action, HumanReview, ReplyScreen, ReplySource, TurnStatus
from dialogue.contact import contact_reply
from dialogue.errors import (
    ConversationNotFound,
    GeneratedTurnLimitReached,
    StoreUnavailable,
    TurnLimitReached,
    TurnNotFound,
)
from dialogue.handoffs import handoff_fields
from dialogue.hours import next_opening
from dialogue.pack import DomainPack
from dialogue.policy import next_state, turn_topic
from dialogue.ports import ConversationStore, TurnCommit
from dialogue.records import ConversationRecord, TurnRecord
from dialogue.replies import fixed_reply
from dialogue.state import DialogueState
from dialogue.understanding import understand


class TurnView(BaseModel):
    """A turn as the API shows it: the retained record plus the reply once there is one to show."""

    model_config = ConfigDict(frozen=True)

    turn: TurnRecord
    reply: str | None
    # Stored slots a pack change no longer allows, read as unknown by this turn (counted by the turn API).
    unreadable: tuple[str, ...] = ()
    # The request was a retry of a key that had made this turn: answered from its REQUEST item, nothing written.
    retried: bool = False


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
    pack: DomainPack,
    now: datetime,
    max_turns: int,
    request_key: str | None = None,
    max_generated_per_hour: int | None = None,
) -> TurnView:
    """Apply one user turn. Fixed actions come back final with their reply; generated ones pending.

    With a `request_key` (the client's idempotency key), a key this conversation already used gets
    the turn it made, as that turn stands now, and nothing new is written. With
    `max_generated_per_hour`, a turn that would be worded by the model past that many in the
    conversation's current hour is refused (GeneratedTurnLimitReached) and nothing is written.
    A limit never refuses the retry of a key whose turn was written: that gets its turn.
    """
    before = load_conversation(store, conversation_id)
    if before.turn_count >= max_turns:
        answered = _answered_before(store, pack, conversation_id, request_key)
        if answered is None:
            raise TurnLimitReached()
        return answered
    # Read under today's pack: a slot value, waiting topic or question a pack change removed reads as unknown
    # or none.
    waiting = before.state.waiting_topic if pack.topic(before.state.waiting_topic) else None
    raising = pack.raising_topic(before.state.answered_topic)
    current, unreadable = DialogueState.read_stored(
        pack.frame, before.state.slots, waiting, before.state.asked, raising.name if raising else None
    )
    before = before.model_copy(update={"state": current})
    understanding = understand(text, pack, current.asked, answered_topic=current.answered_topic)
    state, action = next_state(before.state, understanding, pack)
    uses_model = action.uses_model
    if uses_model and max_generated_per_hour is not None:
        try:
            before = _count_generated(before, now, max_generated_per_hour)
        except GeneratedTurnLimitReached:
            answered = _answered_before(store, pack, conversation_id, request_key)
            if answered is None:
                raise
            return answered
    handed_off = action in HANDED_OFF
    turn = TurnRecord(
        conversation_id=conversation_id,
        turn_id=before.turn_count + 1,
        intent=understanding.intent,
        injection_screen=understanding.injection_screen,
        privileged_request=understanding.privileged_request,
        slots=dict(state.slots),
        action=action,
        topic=turn_topic(understanding, action, before.state),
        asked=state.asked,
        reply_source=ReplySource.MODEL if uses_model else ReplySource.FIXED,
        status=TurnStatus.PENDING if uses_model else TurnStatus.FINAL,
        reply_screen=ReplyScreen.NOT_APPLICABLE,
        human_review=HumanReview.PENDING if uses_model else HumanReview.NOT_APPLICABLE,
        created_at=now,
        finalized_at=None if uses_model else now,
        # A turn left to a person waits in the staff's hand-off queue, or joins the conversation's open item
        # there (dialogue.handoffs); a generated one joins the review queue once screened
        # (dialogue.aws.replies).
        **(handoff_fields(before, now) if handed_off else {}),
    )
    committed, turn = handoffs.commit(store, TurnCommit(before, state, turn, request_key=request_key))
    if not committed.wrote:  # the key's first request made the turn (even one racing this, with this id)
        earlier = _view_of_earlier(store, pack, conversation_id, committed.turn_id)
        if earlier is None:  # the REQUEST item names a turn that is gone: nothing sensible to answer
            raise StoreUnavailable()
        return earlier
    return TurnView(turn=turn, reply=_fixed_text(turn, pack), unreadable=unreadable)


def _answered_before(
    store: ConversationStore, pack: DomainPack, conversation_id: UUID, request_key: str | None
) -> TurnView | None:
    """A limit is about to refuse this request: a retry of a key whose turn was committed before gets that
    turn, as it stands now, and not the refusal. One read, on the refusal path only."""
    turn_id = None if request_key is None else store.turn_of_request(conversation_id, request_key)
    return None if turn_id is None else _view_of_earlier(store, pack, conversation_id, turn_id)


def _view_of_earlier(
    store: ConversationStore, pack: DomainPack, conversation_id: UUID, turn_id: int
) -> TurnView | None:
    """The turn an earlier request with the same key made, as it stands now (None: it is gone)."""
    turn = store.get_turn(conversation_id, turn_id)
    return None if turn is None else TurnView(turn=turn, reply=_fixed_text(turn, pack), retried=True)


GENERATED_WINDOW = timedelta(hours=1)


def _count_generated(record: ConversationRecord, now: datetime, cap: int) -> ConversationRecord:
    """The record with one more worded reply counted in its hour-long window (a new window once the last
    one has ended); GeneratedTurnLimitReached, saying when the window ends, when the cap is reached."""
    since, count = record.generated_since, record.generated_count
    if since is None or now - since >= GENERATED_WINDOW:
        since, count = now, 0
    if count >= cap:
        raise GeneratedTurnLimitReached(retry_after=math.ceil((since + GENERATED_WINDOW - now).total_seconds()))
    return record.model_copy(update={"generated_since": since, "generated_count": count + 1})


def person_answers_from(turn: TurnRecord, pack: DomainPack) -> datetime | None:
    """For a turn left to a person outside the desk's hours, the next opening (dialogue.hours); else None."""
    hours = pack.spec.hours
    if hours is None or turn.handoff_status is None:
        return None
    return next_opening(hours, turn.created_at)


def _fixed_text(turn: TurnRecord, pack: DomainPack) -> str | None:
    """The reply of a fixed-text turn, rebuilt from its stored slots; None for a generated turn."""
    if turn.reply_source is not ReplySource.FIXED:
        return None
    if (text := contact_reply(turn, pack)) is not None:  # the contact form's turns (dialogue.contact)
        return text
    state, _ = DialogueState.read_stored(pack.frame, turn.slots)
    return fixed_reply(Action(turn.action), state, pack, turn.topic if pack.topic(turn.topic) else None)


def view_turn(store: ConversationStore, pack: DomainPack, conversation_id: UUID, turn_id: int) -> TurnView:
    """A stored turn with the reply to show: fixed text, or the screened reply once final. Never writes:
    a pending turn is finalized by the screen function, with its reply or, at the deadline, the fallback."""
    load_conversation(store, conversation_id)
    turn = store.get_turn(conversation_id, turn_id)
    if turn is None:
        raise TurnNotFound()
    if turn.status is TurnStatus.PENDING:
        return TurnView(turn=turn, reply=None)
    if turn.reply_source is ReplySource.FIXED:
        return TurnView(turn=turn, reply=_fixed_text(turn, pack))
    return TurnView(turn=turn, reply=store.get_reply(conversation_id, turn_id))


EXPIRED_REPLY = "This reply is no longer kept."


class Message(BaseModel):
    """One message the resident is shown: the assistant's reply to a turn, or a staff message posted
    after a turn. Never the resident's own words (the page has them)."""

    index: int
    source: Literal["assistant", "staff"]
    turn_id: int  # the reply's turn; for a staff message, the last turn before it was posted
    about_turn: int | None = None  # a staff message's subject: the reply it corrects or the hand-off it answers
    text: str
    at: datetime
    # An assistant reply that left the conversation to a person (a hand-off queue item), and, when the
    # desk's hours (`[hours]`) were closed at that turn, when a person will answer: the next opening.
    to_person: bool = False
    next_opening: datetime | None = None


class MessagePage(BaseModel):
    messages: list[Message]
    next_after: int
    waiting: bool  # a reply is still being prepared: poll again


def messages(store: ConversationStore, pack: DomainPack, conversation_id: UUID, after: int) -> MessagePage:
    """The conversation's messages after the first `after`, in order.

    In order means: the reply to turn 1, the staff messages posted after turn 1, the reply to turn 2, and
    so on. The list stops before the first reply still being prepared, so it only ever grows at its end:
    a page that has seen `after` messages asks for the rest with `after` and misses none.

    Read from the end, so a poll costs the same in a long conversation as in a short one. With T turns
    and S staff messages (the STATE item's turn count and the STAFFMSG counter), the reply to turn t is
    message t + (the number of the last staff message posted before turn t), and staff message n, posted
    after turn a, is message a + n. Once every turn is final there are T + S messages, so a poll that has
    seen them all costs those two reads. Otherwise the turns and the staff messages are read backwards
    (a few items a page) and merged, newest first, down to message `after`: everything up to `after` was
    final when the client saw it and stays final. The numbering is the one the whole conversation gives.
    """
    turn_count = load_conversation(store, conversation_id).turn_count
    staff_count = store.staff_message_count(conversation_id)
    if after == turn_count + staff_count:  # all seen: every turn is final (an unseen one would be counted)
        return MessagePage(messages=[], next_after=after, waiting=False)
    turns = store.turns_backwards(conversation_id, turn_count) if turn_count else iter(())
    notes = store.staff_messages_backwards(conversation_id, turn_count) if staff_count else iter(())
    turn_head, note_head = next(turns, None), next(notes, None)
    newest_first: list[Message] = []
    last: int | None = None  # the index of the conversation's last message
    first_pending: int | None = None  # the index the first reply still being prepared will have
    while turn_head is not None or note_head is not None:
        if note_head is not None and (turn_head is None or note_head.after_turn >= turn_head[0].turn_id):
            index = note_head.after_turn + note_head.number
            message = Message(
                index=index,
                source="staff",
                turn_id=note_head.after_turn,
                about_turn=note_head.about_turn,
                text=note_head.text,
                at=note_head.at,
            )
            pending = False
        else:
            assert turn_head is not None
            turn, reply = turn_head
            index = turn.turn_id + (note_head.number if note_head is not None else 0)
            pending = turn.status is TurnStatus.PENDING
            text = _fixed_text(turn, pack) if turn.reply_source is ReplySource.FIXED else reply
            # A generated reply is kept REPLY_RETENTION_HOURS; after that its place stays, so indexes never shift.
            at = turn.finalized_at or turn.created_at
            message = Message(
                index=index,
                source="assistant",
                turn_id=turn.turn_id,
                text=text or EXPIRED_REPLY,
                at=at,
                to_person=turn.handoff_status is not None,
                next_opening=person_answers_from(turn, pack),
            )
        last = index if last is None else last
        if index <= after:
            break
        if pending:  # the list stops before it: what came after it waits
            newest_first.clear()
            first_pending = index
        else:
            newest_first.append(message)
        if index - 1 <= after:  # the messages before this one were seen: no need to read the next
            break
        if message.source == "staff":
            note_head = next(notes, None)
        else:
            turn_head = next(turns, None)
    if first_pending is not None:
        return MessagePage(messages=newest_first[::-1], next_after=first_pending - 1, waiting=True)
    return MessagePage(messages=newest_first[::-1], next_after=last or 0, waiting=False)
