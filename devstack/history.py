"""A long history, written fast: well-formed items put with BatchWriteItem rather than through the APIs.

For the read-count tests and benchmark P8. `desk_history` writes decided review items and closed
hand-offs as a decision or a close leaves them (in the queue index, out of the open-queue index), a
hundred turns to a conversation; `conversation_items` writes a whole conversation: its STATE item, its
turns (fixed-text, generated with their REPLY items, generated whose reply has expired, or pending),
its staff messages and their counter. TURN items come from the store's own `turn_item`, so they are the
items the APIs write.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID, uuid4

from dialogue.actions import (
    Action,
    HandoffStatus,
    HumanReview,
    Queue,
    ReplyScreen,
    ReplySource,
    Screen,
    TurnStatus,
)
from dialogue.aws.stores import DynamoConversationStore
from dialogue.aws.table import STAFF_COUNTER_SK, STATE_SK, message_sort_key, partition_key, reply_sort_key, stored_time
from dialogue.records import TurnRecord

TURNS_PER_CONVERSATION = 100
TurnKind = Literal["fixed", "generated", "expired", "pending"]
"""A turn as `conversation_items` writes it: fixed text (hand_off); generated and final, with its REPLY
item; generated and final, its REPLY item expired (gone); generated and still pending."""


def put_items(dynamodb: Any, table: str, items: Iterable[dict[str, Any]]) -> int:
    """Put `items` (DynamoDB JSON) with BatchWriteItem, 25 a call, until every one is written; how many."""
    written = 0
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        request: dict[str, Any] = {table: [{"PutRequest": {"Item": item}} for item in batch]}
        while request:
            request = dynamodb.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
        batch.clear()

    for item in items:
        batch.append(item)
        written += 1
        if len(batch) == 25:
            flush()
    if batch:
        flush()
    return written


def _record(conversation_id: UUID, turn_id: int, at: datetime, **fields: Any) -> TurnRecord:
    values: dict[str, Any] = {
        "conversation_id": conversation_id,
        "turn_id": turn_id,
        "intent": "program_interest",
        "injection_screen": False,
        "privileged_request": False,
        "slots": {},
        "created_at": at,
        **fields,
    }
    return TurnRecord.model_validate(values)


def _finished(conversation_id: UUID, turn_id: int, at: datetime, **fields: Any) -> TurnRecord:
    """A final turn, queued at `at` and finished with by staff ("history")."""
    return _record(
        conversation_id,
        turn_id,
        at,
        status=TurnStatus.FINAL,
        finalized_at=at,
        queued_at=at,
        decided_by="history",
        **fields,
    )


def decided_review(conversation_id: UUID, turn_id: int, at: datetime, number: int) -> TurnRecord:
    """A generated reply, screened (every third held) and decided by staff a minute after it was queued."""
    held = number % 3 == 0
    return _finished(
        conversation_id,
        turn_id,
        at,
        reply_screen=ReplyScreen.HELD if held else ReplyScreen.NOT_FLAGGED,
        screens_fired=(Screen.PROMISE_WORDS,) if held else (),
        fallback_used=held,
        human_review=(HumanReview.APPROVED, HumanReview.REJECTED, HumanReview.CORRECTED)[number % 3],
        decision_reason=None if number % 3 == 0 else "wrong_fact",
        decided_at=at + timedelta(minutes=1),
        action=Action.INFORM,
        reply_source=ReplySource.MODEL,
        queue=Queue.REVIEW,
    )


def closed_handoff(conversation_id: UUID, turn_id: int, at: datetime) -> TurnRecord:
    """A hand_off turn that staff answered and closed an hour after it was queued."""
    return _finished(
        conversation_id,
        turn_id,
        at,
        action=Action.HAND_OFF,
        reply_source=ReplySource.FIXED,
        reply_screen=ReplyScreen.NOT_APPLICABLE,
        human_review=HumanReview.NOT_APPLICABLE,
        decided_at=at + timedelta(hours=1),
        queue=Queue.HANDOFF,
        handoff_status=HandoffStatus.CLOSED,
    )


def desk_history(store: DynamoConversationStore, count: int, *, start: datetime) -> Iterator[dict[str, Any]]:
    """`count` TURN items the desk has finished with, half decided reviews and half closed hand-offs, queued
    a second apart from `start`, TURNS_PER_CONVERSATION to a conversation (which has no other items)."""
    conversation_id = uuid4()
    for number in range(count):
        turn_id = number % TURNS_PER_CONVERSATION + 1
        if turn_id == 1:
            conversation_id = uuid4()
        at = start + timedelta(seconds=number)
        if number % 2 == 0:
            yield store.turn_item(decided_review(conversation_id, turn_id, at, number // 2))
        else:
            yield store.turn_item(closed_handoff(conversation_id, turn_id, at))


@dataclass(frozen=True)
class StaffNote:
    """A staff message as `conversation_items` writes it: posted after turn `after_turn`."""

    after_turn: int
    text: str


def conversation_items(
    store: DynamoConversationStore,
    conversation_id: UUID,
    turns: Sequence[TurnKind],
    notes: Sequence[StaffNote],
    *,
    start: datetime,
) -> Iterator[dict[str, Any]]:
    """Every item of a conversation whose turns are `turns` (turn 1 first, a minute apart from `start`) and
    whose staff messages are `notes` (in the order posted: `after_turn` never decreases), as the APIs would
    have left them. The STATE item's slots are the stored form of none known (every slot absent)."""
    if any(later.after_turn < earlier.after_turn for earlier, later in itertools.pairwise(notes)):
        raise ValueError("staff messages are posted in turn order")
    pk = {"S": partition_key(conversation_id)}
    last = start + timedelta(minutes=len(turns))
    yield {
        "pk": pk,
        "sk": {"S": STATE_SK},
        "conversation_id": {"S": str(conversation_id)},
        "slots": {"M": {}},
        "version": {"N": str(len(turns))},
        "turn_count": {"N": str(len(turns))},
        "created_at": {"S": stored_time(start)},
        "updated_at": {"S": stored_time(last)},
    }
    for turn_id, kind in enumerate(turns, start=1):
        at = start + timedelta(minutes=turn_id)
        generated = kind != "fixed"
        final = kind != "pending"
        yield store.turn_item(
            _record(
                conversation_id,
                turn_id,
                at,
                action=Action.INFORM if generated else Action.HAND_OFF,
                reply_source=ReplySource.MODEL if generated else ReplySource.FIXED,
                status=TurnStatus.FINAL if final else TurnStatus.PENDING,
                reply_screen=ReplyScreen.NOT_FLAGGED if generated and final else ReplyScreen.NOT_APPLICABLE,
                human_review=HumanReview.NOT_APPLICABLE,
                finalized_at=at + timedelta(seconds=2) if final else None,
            )
        )
        if kind == "generated":
            yield {
                "pk": pk,
                "sk": {"S": reply_sort_key(turn_id)},
                "reply": {"S": f"Reply to turn {turn_id}."},
                "created_at": {"S": stored_time(at)},
            }
    for number, note in enumerate(notes, start=1):
        yield {
            "pk": pk,
            "sk": {"S": message_sort_key(note.after_turn, number)},
            "about_turn": {"N": str(max(note.after_turn, 1))},
            "text": {"S": note.text},
            "at": {"S": stored_time(start + timedelta(minutes=note.after_turn, seconds=30 + number))},
        }
    if notes:
        yield {"pk": pk, "sk": {"S": STAFF_COUNTER_SK}, "count": {"N": str(len(notes))}}
