"""The conversation store the functions use, composed of the concerns it needs (dialogue.aws.factory
builds it, handing each concern what it needs).

`DynamoConversationStore` (the turn API, the screen function, the sweeper; the staff API's desk store
reads the conversations through one too): the turns (dialogue.aws.turns) and the replies and staff
messages (dialogue.aws.replies); it is the core's dialogue.ports.ConversationStore. The staff API's
store, dialogue.ports.DeskStore, is dialogue.aws.queues.DynamoDeskStore.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from dialogue.aws.replies import ReplyItems
from dialogue.aws.table import DynamoDBClient
from dialogue.aws.turns import TurnItems
from dialogue.ports import Committed, SealedContact, StaffMessage, TurnCommit
from dialogue.records import ConversationRecord, Draft, ScreenOutcome, TurnRecord


class DynamoConversationStore:
    """dialogue.ports.ConversationStore on one DynamoDB table with `pk`/`sk` keys and an `expires_at` TTL:
    its `turns` (STATE, TURN, REQUEST and CONTACT items) and its `replies` (REPLY items, staff messages)."""

    def __init__(self, turns: TurnItems, replies: ReplyItems) -> None:
        self.turns = turns
        self.replies = replies

    @classmethod
    def on_table(
        cls, client: DynamoDBClient, table_name: str, *, retention: timedelta, reply_retention: timedelta
    ) -> DynamoConversationStore:
        """The store on `table_name`, its items kept `retention` and replies not awaiting a check `reply_retention`."""
        return cls(
            TurnItems(client, table_name, retention=retention),
            ReplyItems(client, table_name, retention=retention, reply_retention=reply_retention),
        )

    # --- the turns ------------------------------------------------------------------------------------

    def create_conversation(self, record: ConversationRecord) -> None:
        self.turns.create_conversation(record)

    def load_conversation(self, conversation_id: UUID) -> ConversationRecord | None:
        return self.turns.load_conversation(conversation_id)

    def commit_turn(self, commit: TurnCommit) -> Committed:
        return self.turns.commit_turn(commit)

    def read_contact(self, conversation_id: UUID, now: datetime | None = None) -> SealedContact | None:
        return self.turns.read_contact(conversation_id, now)

    def turn_of_request(self, conversation_id: UUID, request_key: str) -> int | None:
        return self.turns.turn_of_request(conversation_id, request_key)

    def get_turn(self, conversation_id: UUID, turn_id: int) -> TurnRecord | None:
        return self.turns.get_turn(conversation_id, turn_id)

    def turn_item(self, turn: TurnRecord) -> dict[str, Any]:
        return self.turns.turn_item(turn)

    def overdue_turns(
        self, created_before: datetime, *, limit: int, after: str | None = None
    ) -> tuple[list[TurnRecord], str | None]:
        return self.turns.overdue_turns(created_before, limit=limit, after=after)

    # --- the replies and staff messages ---------------------------------------------------------------

    def get_reply(self, conversation_id: UUID, turn_id: int) -> str | None:
        return self.replies.get_reply(conversation_id, turn_id)

    def record_screened_reply(self, conversation_id: UUID, turn_id: int, outcome: ScreenOutcome, now: datetime) -> bool:
        return self.replies.record_screened_reply(conversation_id, turn_id, outcome, now)

    def staff_message_count(self, conversation_id: UUID) -> int:
        return self.replies.staff_message_count(conversation_id)

    def turns_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[tuple[TurnRecord, str | None]]:
        return self.replies.turns_backwards(conversation_id, last_turn)

    def staff_messages_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[StaffMessage]:
        return self.replies.staff_messages_backwards(conversation_id, last_turn)

    def drafts(self, turns: Sequence[TurnRecord]) -> dict[tuple[UUID, int], tuple[str | None, Draft | None]]:
        return self.replies.drafts(turns)
