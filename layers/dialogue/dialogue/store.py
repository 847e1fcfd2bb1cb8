"""The DynamoDB store: one STATE item per conversation, one TURN item per turn, one REPLY item per
generated reply. A turn is one transaction: the STATE put, conditional on the version read, and the
TURN put, conditional on the turn being new. Items hold slots, actions, flags and timestamps.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from dialogue.actions import screen_bits, screens_from_bits
from dialogue.errors import ConcurrentTurnConflict, StoreUnavailable
from dialogue.records import ConversationRecord, ScreenOutcome, TurnRecord
from dialogue.state import DialogueState

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
else:
    DynamoDBClient = Any

STATE_SK = "STATE"


class ConversationStore(Protocol):
    def create_conversation(self, record: ConversationRecord) -> None: ...

    def load_conversation(self, conversation_id: UUID) -> ConversationRecord | None: ...

    def commit_turn(self, before: ConversationRecord, after: DialogueState, turn: TurnRecord) -> None: ...

    def get_turn(self, conversation_id: UUID, turn_id: int) -> TurnRecord | None: ...

    def get_reply(self, conversation_id: UUID, turn_id: int) -> str | None: ...

    def record_screened_reply(
        self, conversation_id: UUID, turn_id: int, outcome: ScreenOutcome, now: datetime
    ) -> bool: ...


def partition_key(conversation_id: UUID) -> str:
    return f"CONV#{conversation_id}"


def turn_sort_key(turn_id: int) -> str:
    return f"TURN#{turn_id:06d}"


def reply_sort_key(turn_id: int) -> str:
    return f"{turn_sort_key(turn_id)}#REPLY"


def _epoch(moment: datetime) -> int:
    return int(moment.timestamp())


def _moment(epoch: Any) -> datetime:
    return datetime.fromtimestamp(int(epoch), UTC)


class DynamoConversationStore:
    """ConversationStore on one DynamoDB table with `pk`/`sk` keys and an `expires_at` TTL."""

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        *,
        retention: timedelta,
        reply_retention: timedelta,
    ) -> None:
        self._client = client
        self._table = table_name
        self._retention = retention
        self._reply_retention = reply_retention
        self._serializer = TypeSerializer()
        self._deserializer = TypeDeserializer()

    # --- mapping between records and items -------------------------------------------------------

    def _item(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {key: self._serializer.serialize(value) for key, value in values.items() if value is not None}

    def _plain(self, item: Mapping[str, Any]) -> dict[str, Any]:
        return {key: self._deserializer.deserialize(value) for key, value in item.items()}

    def _state_item(self, record: ConversationRecord) -> dict[str, Any]:
        return self._item(
            {
                "pk": partition_key(record.conversation_id),
                "sk": STATE_SK,
                "conversation_id": str(record.conversation_id),
                "slots": dict(record.state.slots),
                "version": record.version,
                "turn_count": record.turn_count,
                "created_at": record.created_at.isoformat(),
                "updated_at": record.updated_at.isoformat(),
                "expires_at": _epoch(record.updated_at + self._retention),
            }
        )

    def _turn_item(self, turn: TurnRecord) -> dict[str, Any]:
        """The TURN item, kept small: the ids live only in the keys, the times as epoch seconds and the
        screens that fired as one number (`screen_bits`, a bit per screen)."""
        values = turn.model_dump(
            mode="json", exclude={"conversation_id", "turn_id", "created_at", "finalized_at", "screens_fired"}
        )
        values["screen_bits"] = screen_bits(turn.screens_fired)
        return self._item(
            {
                "pk": partition_key(turn.conversation_id),
                "sk": turn_sort_key(turn.turn_id),
                **values,
                "created_at": _epoch(turn.created_at),
                "finalized_at": _epoch(turn.finalized_at) if turn.finalized_at else None,
                "expires_at": _epoch(turn.created_at + self._retention),
            }
        )

    # --- operations ------------------------------------------------------------------------------

    def create_conversation(self, record: ConversationRecord) -> None:
        self._call(
            "put_item",
            TableName=self._table,
            Item=self._state_item(record),
            ConditionExpression="attribute_not_exists(pk)",
        )

    def load_conversation(self, conversation_id: UUID) -> ConversationRecord | None:
        response = self._call(
            "get_item",
            TableName=self._table,
            Key=self._item({"pk": partition_key(conversation_id), "sk": STATE_SK}),
            ConsistentRead=True,
        )
        if "Item" not in response:
            return None
        plain = self._plain(response["Item"])
        return ConversationRecord(
            conversation_id=conversation_id,
            state=DialogueState(slots=plain["slots"]),
            version=int(plain["version"]),
            turn_count=int(plain["turn_count"]),
            created_at=plain["created_at"],
            updated_at=plain["updated_at"],
        )

    def commit_turn(self, before: ConversationRecord, after: DialogueState, turn: TurnRecord) -> None:
        updated = before.model_copy(
            update={
                "state": after,
                "version": before.version + 1,
                "turn_count": turn.turn_id,
                "updated_at": turn.created_at,
            }
        )
        try:
            self._client.transact_write_items(
                TransactItems=[
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
                            "Item": self._turn_item(turn),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                ]
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "TransactionCanceledException":
                raise ConcurrentTurnConflict() from None
            raise StoreUnavailable() from None
        except BotoCoreError:
            raise StoreUnavailable() from None

    def get_turn(self, conversation_id: UUID, turn_id: int) -> TurnRecord | None:
        response = self._call(
            "get_item",
            TableName=self._table,
            Key=self._item({"pk": partition_key(conversation_id), "sk": turn_sort_key(turn_id)}),
            ConsistentRead=True,
        )
        if "Item" not in response:
            return None
        plain = self._plain(response["Item"])
        for key in ("pk", "sk", "expires_at"):
            plain.pop(key, None)
        created = plain.pop("created_at")
        finalized = plain.pop("finalized_at", None)
        fired = screens_from_bits(int(plain.pop("screen_bits", 0)))
        return TurnRecord.model_validate(
            {
                **plain,
                "screens_fired": fired,
                "conversation_id": conversation_id,
                "turn_id": turn_id,
                "created_at": _moment(created),
                "finalized_at": _moment(finalized) if finalized is not None else None,
            }
        )

    def get_reply(self, conversation_id: UUID, turn_id: int) -> str | None:
        response = self._call(
            "get_item",
            TableName=self._table,
            Key=self._item({"pk": partition_key(conversation_id), "sk": reply_sort_key(turn_id)}),
            ConsistentRead=True,
        )
        if "Item" not in response:
            return None
        return str(self._plain(response["Item"])["reply"])

    def record_screened_reply(self, conversation_id: UUID, turn_id: int, outcome: ScreenOutcome, now: datetime) -> bool:
        """Finalize a pending turn with its screen flags and the reply to show.

        Returns False, writing nothing, when the turn was already final (a duplicate delivery).
        """
        key = self._item({"pk": partition_key(conversation_id), "sk": turn_sort_key(turn_id)})
        reply_item = self._item(
            {
                "pk": partition_key(conversation_id),
                "sk": reply_sort_key(turn_id),
                "reply": outcome.final_reply,
                "created_at": now.isoformat(),
                "expires_at": _epoch(now + self._reply_retention),
            }
        )
        try:
            self._client.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": self._table,
                            "Key": key,
                            "UpdateExpression": (
                                "SET #status = :final, reply_screen = :screen, human_review = :review, "
                                "screen_bits = :fired, fallback_used = :fallback, finalized_at = :now"
                            ),
                            "ConditionExpression": "#status = :pending",
                            "ExpressionAttributeNames": {"#status": "status"},
                            "ExpressionAttributeValues": self._item(
                                {
                                    ":final": "final",
                                    ":pending": "pending",
                                    ":screen": str(outcome.reply_screen),
                                    ":review": str(outcome.human_review),
                                    ":fired": screen_bits(outcome.screens_fired),
                                    ":fallback": outcome.fallback_used,
                                    ":now": _epoch(now),
                                }
                            ),
                        }
                    },
                    {
                        "Put": {
                            "TableName": self._table,
                            "Item": reply_item,
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                ]
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "TransactionCanceledException":
                return False
            raise StoreUnavailable() from None
        except BotoCoreError:
            raise StoreUnavailable() from None
        return True

    def _call(self, operation: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response: dict[str, Any] = getattr(self._client, operation)(**kwargs)
        except (ClientError, BotoCoreError):
            raise StoreUnavailable() from None
        return response
