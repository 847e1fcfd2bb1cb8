"""The conversation's STATE, TURN and REQUEST items: a turn as one transaction, and the turns' reads.

A turn is one transaction, the turn API's only write: the STATE put, conditional on the version
read; the TURN put, conditional on the turn being new; and, when the client sent an idempotency key,
a REQUEST item naming the turn, conditional on the key being unused. A retry whose first attempt
committed (however the client lost the answer) meets the REQUEST item and gets that turn, never a
second one. A pending TURN reaches the realize queue through the table's stream (the outbox: the
dispatch function, `is_pending_turn_insert` below and dialogue.dispatch).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from dialogue.actions import HandoffStatus, HumanReview, TurnStatus
from dialogue.aws.table import (
    CONDITION_FAILED,
    CONTACT_SK,
    OPEN_QUEUE,
    PENDING_TURN,
    PENDING_TURN_INDEX,
    PENDING_TURN_VALUE,
    REQUEST_LIFETIME,
    STATE_SK,
    TIMES,
    TRANSACTION_CONFLICT,
    TURN_PREFIX,
    DynamoDBClient,
    DynamoTable,
    code_at,
    partition_key,
    request_sort_key,
    store_errors,
    stored_time,
    ttl_epoch,
    turn_from_item,
    turn_sort_key,
)
from dialogue.errors import ConcurrentTurnConflict, HandoffItemGone, StoreUnavailable
from dialogue.ports import Committed, SealedContact, TurnCommit
from dialogue.records import ConversationRecord, HandoffAsk, TurnRecord
from dialogue.state import DialogueState

PENDING_TURN_INSERTS: dict[str, Any] = {
    "eventName": ["INSERT"],
    "dynamodb": {
        "Keys": {"sk": {"S": [{"prefix": TURN_PREFIX}]}},
        "NewImage": {"status": {"S": [str(TurnStatus.PENDING)]}},
    },
}
"""The event filter pattern of the dispatch function's stream mapping (template.yaml holds the same,
checked by a test): inserts of pending TURN items. Lambda drops every other stream record unseen."""


def is_pending_turn_insert(record: dict[str, Any]) -> bool:
    """What the filter lets through, checked again in code for a mapping deployed without it."""
    change = record.get("dynamodb", {})
    sort_key = change.get("Keys", {}).get("sk", {}).get("S", "")
    status = change.get("NewImage", {}).get("status", {}).get("S")
    return bool(
        record.get("eventName") == "INSERT" and sort_key.startswith(TURN_PREFIX) and status == TurnStatus.PENDING
    )


class TurnItems(DynamoTable):
    """The STATE, TURN, REQUEST and CONTACT items of a conversation, kept `retention` from their last write."""

    def __init__(self, client: DynamoDBClient, table_name: str, *, retention: timedelta) -> None:
        super().__init__(client, table_name)
        self._retention = retention

    @property
    def retention(self) -> timedelta:
        """How long the conversation's items are kept after their last write."""
        return self._retention

    def _state_item(self, record: ConversationRecord) -> dict[str, Any]:
        return self._item(
            {
                "pk": partition_key(record.conversation_id),
                "sk": STATE_SK,
                "conversation_id": str(record.conversation_id),
                "slots": dict(record.state.slots),
                # A question waiting for a slot, by its topic's name (a pack label), when one waits.
                "waiting_topic": record.state.waiting_topic,
                # What the desk asked last (a request action's name or `confirm`), when it asked something.
                "asked": record.state.asked,
                # The topic the desk's last answer raised a slot with (a pack name), for one turn.
                "answered_topic": record.state.answered_topic,
                "version": record.version,
                "turn_count": record.turn_count,
                "created_at": stored_time(record.created_at),
                "updated_at": stored_time(record.updated_at),
                "generated_since": stored_time(record.generated_since) if record.generated_since else None,
                "generated_count": record.generated_count or None,
                "open_handoff": record.open_handoff,
                "expires_at": ttl_epoch(record.updated_at + self._retention),
            }
        )

    def turn_item(self, turn: TurnRecord) -> dict[str, Any]:
        """The TURN item: the ids live only in the keys; the screens that fired are a set of their names,
        absent while none has; a turn in a staff queue has `queue` and `queued_at`, the keys of the
        table's sparse queue index, and `open_queue` while it waits for a person (the open-queue index);
        a pending turn has `pending_turn` (the pending-turn index) until its reply or fallback is stored."""
        values = turn.model_dump(mode="json", exclude={"conversation_id", "turn_id", "screens_fired", "joined", *TIMES})
        waiting = turn.human_review is HumanReview.PENDING or turn.handoff_status is HandoffStatus.OPEN
        times = {name: stored_time(moment) for name in TIMES if (moment := getattr(turn, name)) is not None}
        return self._item(
            {
                "pk": partition_key(turn.conversation_id),
                "sk": turn_sort_key(turn.turn_id),
                **values,
                **times,
                "screens_fired": {str(screen) for screen in turn.screens_fired} or None,
                "joined": [self._ask(ask) for ask in turn.joined] or None,
                OPEN_QUEUE: str(turn.queue) if turn.queue is not None and waiting else None,
                PENDING_TURN: PENDING_TURN_VALUE if turn.status is TurnStatus.PENDING else None,
                "expires_at": ttl_epoch(turn.created_at + self._retention),
            }
        )

    @staticmethod
    def _ask(ask: HandoffAsk) -> dict[str, Any]:
        """A later turn left to a person, as its conversation's open hand-off item lists it (dialogue.handoffs)."""
        return {**ask.model_dump(mode="json", exclude={"at"}, exclude_none=True), "at": stored_time(ask.at)}

    def _join(self, turn: TurnRecord) -> dict[str, Any]:
        """A transaction item that joins `turn` to its conversation's open hand-off item: the ask listed,
        the item moved to the top of the queue (`queued_at`) and kept a retention period from now; on the
        condition that the item is still there and open."""
        assert turn.joined_to is not None
        return {
            "Update": {
                "TableName": self._table,
                "Key": self._item({"pk": partition_key(turn.conversation_id), "sk": turn_sort_key(turn.joined_to)}),
                "UpdateExpression": "SET joined = list_append(if_not_exists(joined, :none), :ask), "
                "queued_at = :at, expires_at = :expires",
                "ConditionExpression": "handoff_status = :open",
                "ExpressionAttributeValues": self._item(
                    {
                        ":none": [],
                        ":ask": [self._ask(turn.as_ask())],
                        ":at": stored_time(turn.created_at),
                        ":expires": ttl_epoch(turn.created_at + self._retention),
                        ":open": str(HandoffStatus.OPEN),
                    }
                ),
            }
        }

    def _request_item(self, turn: TurnRecord, request_key: str) -> dict[str, Any]:
        return self._item(
            {
                "pk": partition_key(turn.conversation_id),
                "sk": request_sort_key(request_key),
                "turn_id": turn.turn_id,
                "expires_at": ttl_epoch(turn.created_at + REQUEST_LIFETIME),
            }
        )

    def _contact_item(self, turn: TurnRecord, contact: SealedContact) -> dict[str, Any]:
        """The CONTACT item: the resident's detail and note, sealed (dialogue.contact); one per conversation,
        a later form replacing it; deleted when the conversation's hand-off closes, or at its TTL."""
        return self._item(
            {
                "pk": partition_key(turn.conversation_id),
                "sk": CONTACT_SK,
                # The hand-off item that holds it: the one this turn opened or joined.
                "turn_id": turn.joined_to or turn.turn_id,
                "sealed": contact.sealed,
                "channel": contact.channel,
                "has_detail": contact.has_detail,
                "has_note": contact.has_note,
                "left_at": stored_time(contact.left_at),
                "expires_at": ttl_epoch(contact.expires_at),
            }
        )

    def _contact_key(self, conversation_id: UUID) -> dict[str, Any]:
        return self._item({"pk": partition_key(conversation_id), "sk": CONTACT_SK})

    def forget_contact(self, conversation_id: UUID, now: datetime) -> dict[str, Any]:
        """A transaction item that removes the CONTACT item's sealed bytes and expires what is left now (an
        update, not a delete: the staff function may delete nothing in a conversation's partition)."""
        return {
            "Update": {
                "TableName": self._table,
                "Key": self._contact_key(conversation_id),
                "UpdateExpression": "REMOVE sealed SET has_detail = :no, has_note = :no, expires_at = :now",
                "ExpressionAttributeValues": self._item({":no": False, ":now": ttl_epoch(now)}),
            }
        }

    def read_contact(self, conversation_id: UUID, now: datetime | None = None) -> SealedContact | None:
        """The conversation's CONTACT item; None when there is none, or when its TTL has passed (DynamoDB
        deletes expired items late: an expired one is never read)."""
        response = self._get(conversation_id, CONTACT_SK)
        if "Item" not in response or "sealed" not in response["Item"]:  # none, or forgotten at a close
            return None
        plain = self._plain(response["Item"])
        expires_at = datetime.fromtimestamp(int(plain["expires_at"]), UTC)
        if now is not None and expires_at <= now:
            return None
        sealed = plain["sealed"]
        return SealedContact(
            sealed=bytes(sealed.value if hasattr(sealed, "value") else sealed),
            channel=plain["channel"],
            has_detail=bool(plain["has_detail"]),
            has_note=bool(plain["has_note"]),
            left_at=datetime.fromisoformat(plain["left_at"]),
            expires_at=expires_at,
            turn_id=int(plain["turn_id"]),
        )

    def create_conversation(self, record: ConversationRecord) -> None:
        with store_errors():
            self._client.put_item(
                TableName=self._table, Item=self._state_item(record), ConditionExpression="attribute_not_exists(pk)"
            )

    def load_conversation(self, conversation_id: UUID) -> ConversationRecord | None:
        response = self._get(conversation_id, STATE_SK)
        if "Item" not in response:
            return None
        plain = self._plain(response["Item"])
        return ConversationRecord(
            conversation_id=conversation_id,
            state=DialogueState(
                slots=plain["slots"],
                waiting_topic=plain.get("waiting_topic"),
                asked=plain.get("asked"),
                answered_topic=plain.get("answered_topic"),
            ),
            version=int(plain["version"]),
            turn_count=int(plain["turn_count"]),
            created_at=plain["created_at"],
            updated_at=plain["updated_at"],
            generated_since=plain.get("generated_since"),
            generated_count=int(plain.get("generated_count", 0)),
            open_handoff=int(plain["open_handoff"]) if "open_handoff" in plain else None,
        )

    def commit_turn(self, commit: TurnCommit) -> Committed:
        """Write the turn and the new state in one transaction; say which turn answers it, and whether
        this call wrote it.

        That is the commit's turn, written, unless its `request_key` was already used in this conversation: then
        nothing is written, and the turn is the one the key made first (which may have the same id,
        when two requests with one key raced on one version). Raises
        ConcurrentTurnConflict when another turn changed the state first, HandoffItemGone when the turn
        would join an open hand-off item no longer in the table (dialogue.handoffs), and StoreUnavailable when
        DynamoDB failed or its answer was lost (then the turn may be stored: a retry with the same key
        finds it).
        """
        before, turn, request_key, contact = commit.before, commit.turn, commit.request_key, commit.contact
        updated = commit.record_after()
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": self._state_item(updated),
                    "ConditionExpression": "#version = :expected",
                    "ExpressionAttributeNames": {"#version": "version"},
                    "ExpressionAttributeValues": {":expected": {"N": str(before.version)}},
                }
            },
            {
                "Put": {
                    "TableName": self._table,
                    "Item": self.turn_item(turn),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        ]
        if request_key is not None:
            items.append(
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": self._request_item(turn, request_key),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            )
        if contact is not None:  # after the REQUEST item's place: its code is read at index 2
            items.append({"Put": {"TableName": self._table, "Item": self._contact_item(turn, contact)}})
        joins_at = None
        if turn.joined_to is not None:
            joins_at = len(items)
            items.append(self._join(turn))
        codes = self._write_transaction(items)
        if codes is None:
            return Committed(turn.turn_id, wrote=True)
        if request_key is not None and code_at(codes, 2) == CONDITION_FAILED:
            return Committed(self._turn_of_request(turn.conversation_id, request_key), wrote=False)
        if code_at(codes, 0) == CONDITION_FAILED or TRANSACTION_CONFLICT in codes:
            raise ConcurrentTurnConflict()
        if joins_at is not None and code_at(codes, joins_at) == CONDITION_FAILED:
            raise HandoffItemGone()
        raise StoreUnavailable()

    def _turn_of_request(self, conversation_id: UUID, request_key: str) -> int:
        turn_id = self.turn_of_request(conversation_id, request_key)
        if turn_id is None:  # expired between the write and this read: the client may send it again
            raise ConcurrentTurnConflict()
        return turn_id

    def turn_of_request(self, conversation_id: UUID, request_key: str) -> int | None:
        """The turn an idempotency key made in this conversation, or None when it made none (or expired)."""
        response = self._get(conversation_id, request_sort_key(request_key))
        return int(self._plain(response["Item"])["turn_id"]) if "Item" in response else None

    def get_turn(self, conversation_id: UUID, turn_id: int) -> TurnRecord | None:
        response = self._get(conversation_id, turn_sort_key(turn_id))
        if "Item" not in response:
            return None
        return turn_from_item(response["Item"])

    def overdue_turns(
        self, created_before: datetime, *, limit: int, after: str | None = None
    ) -> tuple[list[TurnRecord], str | None]:
        """A page of turns still pending that were created before `created_before`, oldest first, from
        the sparse pending-turn index (it holds only the turns in flight), and the cursor of the next
        page (None: no more). The index is eventually consistent: a turn finalized a moment ago may still
        be listed; finalizing it again is refused by its conditional write."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": PENDING_TURN_INDEX,
            "KeyConditionExpression": "#pending = :pending AND created_at < :before",
            "ExpressionAttributeNames": {"#pending": PENDING_TURN},
            "ExpressionAttributeValues": self._item(
                {":pending": PENDING_TURN_VALUE, ":before": stored_time(created_before)}
            ),
            "Limit": limit,
        }
        if after is not None:
            query["ExclusiveStartKey"] = json.loads(after)
        with store_errors():
            response = self._client.query(**query)
        last = response.get("LastEvaluatedKey")
        return [turn_from_item(item) for item in response.get("Items", [])], json.dumps(last) if last else None
