"""One open hand-off per conversation: a later turn left to a person joins it.

A conversation's first turn left to a person (a hand-off, an abstention, a refusal, a contact form) opens
an item of the staff's hand-off queue, and the STATE item names it (`open_handoff`) until staff close it.
A later turn left to a person in the same conversation opens no second item. It is written `joined` to
the open one, and in the same transaction that item:

- lists the ask (its action, intent and topic: names, never text), so its row and view say every reason;
- moves to the top of the queue: its `queued_at`, the queue indexes' sort key, becomes the ask's time
  (the first ask's time stays the item turn's `created_at`);
- is kept a retention period from the ask (its TTL), as long as the conversation it belongs to.

A close clears `open_handoff` and moves the STATE version on (dialogue.aws.queues), so a turn that read
the open item before the close is refused by its version condition and, sent again, opens a new item.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from dialogue.actions import HandoffStatus, Queue
from dialogue.errors import HandoffItemGone
from dialogue.ports import Committed, ConversationStore, TurnCommit
from dialogue.records import ConversationRecord, TurnRecord


def handoff_fields(before: ConversationRecord, now: datetime) -> dict[str, Any]:
    """TurnRecord's desk fields for a turn left to a person: a new item of the hand-off queue, or, while
    the conversation has one open, a turn joined to it."""
    if before.open_handoff is None:
        return {"queue": Queue.HANDOFF, "queued_at": now, "handoff_status": HandoffStatus.OPEN}
    return {"handoff_status": HandoffStatus.JOINED, "joined_to": before.open_handoff}


def commit(store: ConversationStore, commit: TurnCommit) -> tuple[Committed, TurnRecord]:
    """`store.commit_turn`, and the turn as written. A turn that would join an item gone from the table
    (its TTL passed while the STATE item still named it) opens a new item instead."""
    try:
        return store.commit_turn(commit), commit.turn
    except HandoffItemGone:
        before = commit.before.model_copy(update={"open_handoff": None})
        turn = commit.turn.model_copy(update={"joined_to": None, **handoff_fields(before, commit.turn.created_at)})
        return store.commit_turn(replace(commit, before=before, turn=turn)), turn
