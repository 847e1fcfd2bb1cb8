"""The conversation table's layout, and what every part of the DynamoDB store shares.

One table, keys `pk`/`sk`, TTL `expires_at`. Under `CONV#<conversation id>`: one STATE item, one TURN
item per turn (`TURN#<turn:06d>`), one REPLY item per generated reply (`TURN#<turn:06d>#REPLY`), one
REQUEST item per idempotency key a client used (a hash of the key), the staff messages
(`MSG#<turn count:06d>#<n:06d>`), their STAFFMSG counter and, when the resident used the contact form, one
CONTACT item, sealed with the stack's KMS key (dialogue.contact). `AUDIT#<conversation id>` holds the staff
audit's hash chains (dialogue.aws.audit) and `STATS` the desk's counters (dialogue.aws.figures). Items
hold slots, actions, flags, timestamps and a hash of each key; the staff's own messages are the only text
in the clear.

The store is one object per concern, each built with what it needs: `TurnItems` (dialogue.aws.turns) and
`ReplyItems` (dialogue.aws.replies), which `DynamoConversationStore` (dialogue.aws.stores) is made of; the
desk's `AuditLinks` (dialogue.aws.audit) and `DeskFigures` (dialogue.aws.figures); and `DynamoDeskStore`,
the desk's queues and claims (dialogue.aws.queues), which is handed a conversation store, the audit and the
figures it writes with. Each reaches the table through `DynamoTable` (here: the client, item mapping,
reads, transactions), its only base class; dialogue.aws.factory builds them.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from uuid import UUID

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

from dialogue.actions import in_screen_order
from dialogue.errors import StoreUnavailable
from dialogue.records import TurnRecord, datetime_fields

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient as DynamoDBClient
    from mypy_boto3_dynamodb.type_defs import GetItemOutputTypeDef
else:
    DynamoDBClient = GetItemOutputTypeDef = Any


@contextlib.contextmanager
def store_errors() -> Iterator[None]:
    """DynamoDB failing, or its answer lost, as the one error callers handle: StoreUnavailable."""
    try:
        yield
    except (ClientError, BotoCoreError):
        raise StoreUnavailable() from None


STATE_SK = "STATE"
CONTACT_SK = "CONTACT"
"""The resident's contact form, sealed with the stack's key (dialogue.contact): the one item with their words."""
TURN_PREFIX = "TURN#"
MESSAGE_PREFIX = "MSG#"
STAFF_COUNTER_SK = "STAFFMSG"
"""The conversation's staff message counter: `count`, the number of the last staff message posted."""
REQUEST_PREFIX = "REQUEST#"
REQUEST_LIFETIME = timedelta(hours=24)
"""How long a REQUEST item keeps a key's turn: longer than any client retries (then its TTL removes it)."""

# The reasons DynamoDB gives for a cancelled transaction, one per item in order ("None": that item was fine).
CONDITION_FAILED = "ConditionalCheckFailed"
TRANSACTION_CONFLICT = "TransactionConflict"


def partition_key(conversation_id: UUID) -> str:
    return f"CONV#{conversation_id}"


def turn_sort_key(turn_id: int) -> str:
    return f"{TURN_PREFIX}{turn_id:06d}"


def reply_sort_key(turn_id: int) -> str:
    return f"{turn_sort_key(turn_id)}#REPLY"


def message_sort_key(turn_count: int, number: int) -> str:
    return f"{MESSAGE_PREFIX}{turn_count:06d}#{number:06d}"


def request_sort_key(request_key: str) -> str:
    """The REQUEST item's sort key for a client's idempotency key: a hash, so the key is not kept."""
    return REQUEST_PREFIX + hashlib.sha256(request_key.encode()).hexdigest()[:32]


def cancellation_codes(error: ClientError) -> list[str]:
    """Why DynamoDB cancelled a transaction: one code per item, in order."""
    reasons: list[dict[str, Any]] = error.response.get("CancellationReasons", [])  # type: ignore[assignment]
    return [str(reason.get("Code", "None")) for reason in reasons]


def code_at(codes: Sequence[str], index: int) -> str:
    return codes[index] if index < len(codes) else "None"


def ttl_epoch(moment: datetime) -> int:
    """A TTL attribute: DynamoDB expires items by epoch seconds."""
    return int(moment.timestamp())


def stored_time(moment: datetime) -> str:
    """Every time an item keeps, in one format: ISO 8601 in UTC, to the millisecond."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


TIMES = datetime_fields(TurnRecord)
"""A TurnRecord's times, each kept as `stored_time` (read from the model: a new time field is kept so too)."""
QUEUE_INDEX = "queue-index"
"""The table's sparse global secondary index: `queue` (partition) and `queued_at` (sort), on TURN items
that are or were in a staff queue (decided and closed ones included: the figures and the filters read
them)."""
OPEN_QUEUE_INDEX = "open-queue-index"
"""The sparse index of the work still to do: `open_queue` (partition) and `queued_at` (sort), on TURN items
whose review is pending or whose hand-off is open. A decision or a close removes `open_queue`, so the item
leaves it: a console tab's first page holds open items however many were decided before them."""
OPEN_QUEUE = "open_queue"
PENDING_TURN_INDEX = "pending-turn-index"
"""The sparse index of turns still waiting for their reply: `pending_turn` (partition, one value) and
`created_at` (sort), on TURN items while they are pending. Finalizing a turn removes `pending_turn`, so
the index holds only the replies in flight, and the sweeper (dialogue.sweep) reads the overdue ones
from its oldest end however many turns came before."""
PENDING_TURN = "pending_turn"
PENDING_TURN_VALUE = "pending"

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def turn_from_item(item: Mapping[str, Any]) -> TurnRecord:
    """A TURN item, in DynamoDB JSON as GetItem or the table's stream gives it, as a TurnRecord."""
    plain = {key: _deserializer.deserialize(value) for key, value in item.items()}
    sort_key = str(plain.pop("sk", ""))
    number = sort_key.removeprefix(TURN_PREFIX)
    if not sort_key.startswith(TURN_PREFIX) or not number.isdigit():
        raise ValueError("the item is not a TURN item")
    conversation_id = UUID(str(plain.pop("pk", "")).removeprefix("CONV#"))
    plain.pop("expires_at", None)
    plain.pop(OPEN_QUEUE, None)
    plain.pop(PENDING_TURN, None)
    fired = in_screen_order(plain.pop("screens_fired", ()))
    return TurnRecord.model_validate(
        {**plain, "screens_fired": fired, "conversation_id": conversation_id, "turn_id": int(number)}
    )


class DynamoTable:
    """The conversation table: its client and name, and the item mapping, reads and transactions every
    concern shares."""

    TAIL_PAGE = 4
    """Items a page of a backwards read holds after its first. The first holds what a poll needs: the last
    turn's TURN and REPLY items (2), or the last staff message (1)."""

    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self._client = client
        self._table = table_name

    @staticmethod
    def _item(values: Mapping[str, Any]) -> dict[str, Any]:
        return {key: _serializer.serialize(value) for key, value in values.items() if value is not None}

    @staticmethod
    def _plain(item: Mapping[str, Any]) -> dict[str, Any]:
        return {key: _deserializer.deserialize(value) for key, value in item.items()}

    def _items_backwards(
        self, conversation_id: UUID, prefix: str, last_key: str, first_page: int
    ) -> Iterator[dict[str, Any]]:
        """The partition's items from sort key `last_key` down to `prefix`, page by page as asked for: the
        first page `first_page` items (at most TAIL_PAGE), the next TAIL_PAGE."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :first AND :last",
            "ExpressionAttributeValues": self._item(
                {":pk": partition_key(conversation_id), ":first": prefix, ":last": last_key}
            ),
            "ScanIndexForward": False,
            "Limit": min(first_page, self.TAIL_PAGE),
            "ConsistentRead": True,
        }
        return self._query_pages(query, next_limit=self.TAIL_PAGE)

    def _query_pages(self, query: dict[str, Any], *, next_limit: int | None = None) -> Iterator[dict[str, Any]]:
        """A query's items, page after page as they are consumed (the pages after the first `next_limit`
        items each, when given)."""
        while True:
            with store_errors():
                response = self._client.query(**query)
            yield from response.get("Items", [])
            if "LastEvaluatedKey" not in response:
                return
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]
            if next_limit is not None:
                query["Limit"] = next_limit

    def _write_transaction(self, items: Sequence[Mapping[str, Any]]) -> list[str] | None:
        """Write `items` in one transaction: None when it committed, else why DynamoDB cancelled it, one
        code per item in order. StoreUnavailable when it failed any other way, or its answer was lost (then
        it may have committed)."""
        try:
            self._client.transact_write_items(TransactItems=list(items))  # type: ignore[arg-type]
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise StoreUnavailable() from None
            return cancellation_codes(error)
        except BotoCoreError:
            raise StoreUnavailable() from None
        return None

    def _get(self, conversation_id: UUID, sort_key: str) -> GetItemOutputTypeDef:
        """One item of the conversation, read consistently."""
        with store_errors():
            return self._client.get_item(
                TableName=self._table,
                Key=self._item({"pk": partition_key(conversation_id), "sk": sort_key}),
                ConsistentRead=True,
            )
