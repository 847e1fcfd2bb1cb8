"""The DynamoDB store: one STATE item per conversation, one TURN item per turn, one REPLY item per
generated reply, and one REQUEST item per idempotency key a client used.

A turn is one transaction, the turn API's only write: the STATE put, conditional on the version
read; the TURN put, conditional on the turn being new; and, when the client sent an idempotency key,
a REQUEST item naming the turn, conditional on the key being unused. A retry whose first attempt
committed (however the client lost the answer) meets the REQUEST item and gets that turn, never a
second one. A pending TURN reaches the realize queue through the table's stream (the outbox:
dialogue.dispatch). Items hold slots, actions, flags, timestamps and a hash of each key.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, get_args
from uuid import UUID

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError
from pydantic import BaseModel, ConfigDict, Field

from dialogue.actions import HandoffStatus, HumanReview, Queue, ReplySource, TurnStatus, in_screen_order
from dialogue.errors import ConcurrentTurnConflict, StoreUnavailable
from dialogue.records import ConversationRecord, ScreenOutcome, TurnRecord
from dialogue.state import DialogueState

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
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


class ConversationStore(Protocol):
    def create_conversation(self, record: ConversationRecord) -> None: ...

    def load_conversation(self, conversation_id: UUID) -> ConversationRecord | None: ...

    def commit_turn(
        self, before: ConversationRecord, after: DialogueState, turn: TurnRecord, *, request_key: str | None = None
    ) -> Committed: ...

    def turn_of_request(self, conversation_id: UUID, request_key: str) -> int | None: ...

    def get_turn(self, conversation_id: UUID, turn_id: int) -> TurnRecord | None: ...

    def get_reply(self, conversation_id: UUID, turn_id: int) -> str | None: ...

    def thread(self, conversation_id: UUID) -> Thread: ...

    def staff_message_count(self, conversation_id: UUID) -> int: ...

    def turns_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[tuple[TurnRecord, str | None]]: ...

    def staff_messages_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[StaffMessage]: ...

    def record_screened_reply(
        self, conversation_id: UUID, turn_id: int, outcome: ScreenOutcome, now: datetime
    ) -> bool: ...


class Committed(NamedTuple):
    """What committing a turn did: the id of the turn that answers it, and whether this call wrote it
    (False: the request's key had made that turn first, perhaps in a request racing this one)."""

    turn_id: int
    wrote: bool


class StaffMessage(BaseModel):
    """A staff message as kept: after which turn it was posted, its number, the turn it answers (the
    reviewed reply a correction replaces, or the hand-off a reply answers), its text and time."""

    model_config = ConfigDict(frozen=True)

    after_turn: int
    number: int
    about_turn: int
    text: str
    at: datetime


class Thread(BaseModel):
    """A conversation's turns (in order), the generated turns' replies by turn id, and its staff messages."""

    turns: list[TurnRecord] = Field(default_factory=list)
    replies: dict[int, str] = Field(default_factory=dict)
    staff: list[StaffMessage] = Field(default_factory=list)


def partition_key(conversation_id: UUID) -> str:
    return f"CONV#{conversation_id}"


def turn_sort_key(turn_id: int) -> str:
    return f"{TURN_PREFIX}{turn_id:06d}"


def reply_sort_key(turn_id: int) -> str:
    return f"{turn_sort_key(turn_id)}#REPLY"


def request_sort_key(request_key: str) -> str:
    """The REQUEST item's sort key for a client's idempotency key: a hash, so the key is not kept."""
    return REQUEST_PREFIX + hashlib.sha256(request_key.encode()).hexdigest()[:32]


def cancellation_codes(error: ClientError) -> list[str]:
    """Why DynamoDB cancelled a transaction: one code per item, in order."""
    reasons: list[dict[str, Any]] = error.response.get("CancellationReasons", [])  # type: ignore[assignment]
    return [str(reason.get("Code", "None")) for reason in reasons]


def _code_at(codes: Sequence[str], index: int) -> str:
    return codes[index] if index < len(codes) else "None"


def ttl_epoch(moment: datetime) -> int:
    """A TTL attribute: DynamoDB expires items by epoch seconds."""
    return int(moment.timestamp())


def stored_time(moment: datetime) -> str:
    """Every time an item keeps, in one format: ISO 8601 in UTC, to the millisecond."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def datetime_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of `model` that hold a datetime (optional or not), in their declared order."""
    return tuple(
        name
        for name, field in model.model_fields.items()
        if field.annotation is datetime or datetime in get_args(field.annotation)
    )


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

    # --- mapping between records and items -------------------------------------------------------

    @staticmethod
    def _item(values: Mapping[str, Any]) -> dict[str, Any]:
        return {key: _serializer.serialize(value) for key, value in values.items() if value is not None}

    @staticmethod
    def _plain(item: Mapping[str, Any]) -> dict[str, Any]:
        return {key: _deserializer.deserialize(value) for key, value in item.items()}

    def _state_item(self, record: ConversationRecord) -> dict[str, Any]:
        return self._item(
            {
                "pk": partition_key(record.conversation_id),
                "sk": STATE_SK,
                "conversation_id": str(record.conversation_id),
                "slots": dict(record.state.slots),
                # A question waiting for a slot, by its topic's name (a pack label), when one waits.
                "waiting_topic": record.state.waiting_topic,
                "version": record.version,
                "turn_count": record.turn_count,
                "created_at": stored_time(record.created_at),
                "updated_at": stored_time(record.updated_at),
                "generated_since": stored_time(record.generated_since) if record.generated_since else None,
                "generated_count": record.generated_count or None,
                "expires_at": ttl_epoch(record.updated_at + self._retention),
            }
        )

    def turn_item(self, turn: TurnRecord) -> dict[str, Any]:
        """The TURN item: the ids live only in the keys; the screens that fired are a set of their names,
        absent while none has; a turn in a staff queue has `queue` and `queued_at`, the keys of the
        table's sparse queue index, and `open_queue` while it waits for a person (the open-queue index);
        a pending turn has `pending_turn` (the pending-turn index) until its reply or fallback is stored."""
        values = turn.model_dump(mode="json", exclude={"conversation_id", "turn_id", "screens_fired", *TIMES})
        waiting = turn.human_review is HumanReview.PENDING or turn.handoff_status is HandoffStatus.OPEN
        times = {name: stored_time(moment) for name in TIMES if (moment := getattr(turn, name)) is not None}
        return self._item(
            {
                "pk": partition_key(turn.conversation_id),
                "sk": turn_sort_key(turn.turn_id),
                **values,
                **times,
                "screens_fired": {str(screen) for screen in turn.screens_fired} or None,
                OPEN_QUEUE: str(turn.queue) if turn.queue is not None and waiting else None,
                PENDING_TURN: PENDING_TURN_VALUE if turn.status is TurnStatus.PENDING else None,
                "expires_at": ttl_epoch(turn.created_at + self._retention),
            }
        )

    def _request_item(self, turn: TurnRecord, request_key: str) -> dict[str, Any]:
        return self._item(
            {
                "pk": partition_key(turn.conversation_id),
                "sk": request_sort_key(request_key),
                "turn_id": turn.turn_id,
                "expires_at": ttl_epoch(turn.created_at + REQUEST_LIFETIME),
            }
        )

    # --- operations ------------------------------------------------------------------------------

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
            state=DialogueState(slots=plain["slots"], waiting_topic=plain.get("waiting_topic")),
            version=int(plain["version"]),
            turn_count=int(plain["turn_count"]),
            created_at=plain["created_at"],
            updated_at=plain["updated_at"],
            generated_since=plain.get("generated_since"),
            generated_count=int(plain.get("generated_count", 0)),
        )

    def commit_turn(
        self, before: ConversationRecord, after: DialogueState, turn: TurnRecord, *, request_key: str | None = None
    ) -> Committed:
        """Write the turn and the new state in one transaction; say which turn answers it, and whether
        this call wrote it.

        That is `turn`, written, unless `request_key` was already used in this conversation: then
        nothing is written, and the turn is the one the key made first (which may have the same id,
        when two requests with one key raced on one version). Raises
        ConcurrentTurnConflict when another turn changed the state first, and StoreUnavailable when
        DynamoDB failed or its answer was lost (then the turn may be stored: a retry with the same key
        finds it).
        """
        updated = before.model_copy(
            update={
                "state": after,
                "version": before.version + 1,
                "turn_count": turn.turn_id,
                "updated_at": turn.created_at,
            }
        )
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
        try:
            self._client.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise StoreUnavailable() from None
            codes = cancellation_codes(error)
            if request_key is not None and _code_at(codes, 2) == CONDITION_FAILED:
                return Committed(self._turn_of_request(turn.conversation_id, request_key), wrote=False)
            if _code_at(codes, 0) == CONDITION_FAILED or TRANSACTION_CONFLICT in codes:
                raise ConcurrentTurnConflict() from None
            raise StoreUnavailable() from None
        except BotoCoreError:
            raise StoreUnavailable() from None
        return Committed(turn.turn_id, wrote=True)

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

    def get_reply(self, conversation_id: UUID, turn_id: int) -> str | None:
        response = self._get(conversation_id, reply_sort_key(turn_id))
        if "Item" not in response:
            return None
        return str(self._plain(response["Item"])["reply"])

    def record_screened_reply(self, conversation_id: UUID, turn_id: int, outcome: ScreenOutcome, now: datetime) -> bool:
        """Finalize a pending turn with its screen flags and the reply to show.

        Returns False, writing nothing, when the turn is not pending: already final (a duplicate, or a
        reply that came after the deadline's fallback), or gone. Raises StoreUnavailable when nothing
        was written for any other reason (a conflicting transaction, throttling, an error, a lost
        answer), so the caller fails the message and the queue delivers it again.
        """
        key = self._item({"pk": partition_key(conversation_id), "sk": turn_sort_key(turn_id)})
        # The draft the staff review, beside the reply shown: its text only where it differs from the
        # reply (a draft shown as drafted is the reply), so a passed reply is not kept twice.
        draft = outcome.draft.model_dump(mode="json") if outcome.draft is not None else {}
        if draft and draft["text"] == outcome.final_reply:
            del draft["text"]
        # A reply that awaits a person's check (it has a draft) is kept as long as its turn, so the draft is
        # there when staff decide; the decision then keeps it REPLY_RETENTION_HOURS more
        # (DynamoDeskStore.decide). A deadline's fallback, which no one checks, is kept that long now.
        kept = self._retention if outcome.draft is not None else self._reply_retention
        reply_item = self._item(
            {
                "pk": partition_key(conversation_id),
                "sk": reply_sort_key(turn_id),
                "reply": outcome.final_reply,
                **{f"draft_{name}" if name == "text" else name: value for name, value in draft.items()},
                "created_at": stored_time(now),
                "expires_at": ttl_epoch(now + kept),
            }
        )
        assignments = "#status = :final, reply_screen = :screen, human_review = :review, "
        assignments += "fallback_used = :fallback, finalized_at = :now"
        values: dict[str, Any] = {
            ":final": "final",
            ":pending": "pending",
            ":screen": str(outcome.reply_screen),
            ":review": str(outcome.human_review),
            ":fallback": outcome.fallback_used,
            ":now": stored_time(now),
        }
        if outcome.screens_fired:  # a string set cannot be empty: no screen, no attribute
            assignments += ", screens_fired = :fired"
            values[":fired"] = {str(screen) for screen in outcome.screens_fired}
        names = {"#status": "status"}
        if outcome.draft is not None:  # a screened draft awaits a person's check: the review queue
            assignments += f", #queue = :queue, {OPEN_QUEUE} = :queue, queued_at = :now"
            values[":queue"] = str(Queue.REVIEW)
            names["#queue"] = "queue"
        # (A deadline's fallback has no draft and needs no review: human_review is "not applicable".)
        try:
            self._client.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": self._table,
                            "Key": key,
                            # A final turn leaves the pending-turn index.
                            "UpdateExpression": f"SET {assignments} REMOVE {PENDING_TURN}",
                            "ConditionExpression": "#status = :pending",
                            "ExpressionAttributeNames": names,
                            "ExpressionAttributeValues": self._item(values),
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
            cancelled = error.response["Error"]["Code"] == "TransactionCanceledException"
            if cancelled and CONDITION_FAILED in cancellation_codes(error):
                return False
            raise StoreUnavailable() from None
        except BotoCoreError:
            raise StoreUnavailable() from None
        return True

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

    def thread(self, conversation_id: UUID) -> Thread:
        """What the resident's message list is built from: the turns, the replies of generated turns, and
        the staff messages (two queries on the partition's TURN# and MSG# items, read consistently)."""
        thread = Thread()
        for item in self._items_under(conversation_id, TURN_PREFIX):
            sort_key = item["sk"]["S"]
            if sort_key.endswith("#REPLY"):
                thread.replies[int(sort_key.split("#")[1])] = str(self._plain(item)["reply"])
            else:
                thread.turns.append(turn_from_item(item))
        for item in self._items_under(conversation_id, MESSAGE_PREFIX):
            plain = self._plain(item)
            _, after_turn, number = str(plain["sk"]).split("#")
            thread.staff.append(
                StaffMessage(
                    after_turn=int(after_turn),
                    number=int(number),
                    about_turn=int(plain["about_turn"]),
                    text=str(plain["text"]),
                    at=datetime.fromisoformat(str(plain["at"])),
                )
            )
        return thread

    # --- the end of the message list, read backwards (dialogue.conversation.messages) ----------------

    TAIL_PAGE = 4
    """Items a page of a backwards read holds after its first. The first holds what a poll needs: the last
    turn's TURN and REPLY items (2), or the last staff message (1)."""

    def staff_message_count(self, conversation_id: UUID) -> int:
        """How many staff messages the conversation has had: its STAFFMSG counter (one consistent read)."""
        item = self._get(conversation_id, STAFF_COUNTER_SK).get("Item")
        return int(self._plain(item)["count"]) if item else 0

    def turns_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[tuple[TurnRecord, str | None]]:
        """The turns from `last_turn` down to 1, each with its stored reply (None for a fixed-text or pending
        turn, or a reply that has expired): a consistent Query on the TURN# items backwards (a turn's REPLY
        item sorts just after it, so it comes first), 2 items then TAIL_PAGE items a page, each page read only
        when the caller asks for a turn beyond the last one read."""
        reply: tuple[int, str] | None = None
        for item in self._items_backwards(conversation_id, TURN_PREFIX, f"{turn_sort_key(last_turn)}#~", 2):
            sort_key = item["sk"]["S"]
            if sort_key.endswith("#REPLY"):
                reply = (int(sort_key.split("#")[1]), str(self._plain(item)["reply"]))
                continue
            turn = turn_from_item(item)
            text = reply[1] if reply is not None and reply[0] == turn.turn_id else None
            reply = None
            if text is None and turn.status is TurnStatus.FINAL and turn.reply_source is ReplySource.MODEL:
                # The REPLY item is written with the final status, in one transaction, and it was read first:
                # it was not there yet then (or it has expired). Read it again.
                text = self.get_reply(conversation_id, turn.turn_id)
            yield turn, text

    def staff_messages_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[StaffMessage]:
        """The staff messages posted after turns up to `last_turn`, newest first, read as `turns_backwards`
        reads turns (1 item, then TAIL_PAGE items a page)."""
        last_key = f"{MESSAGE_PREFIX}{last_turn:06d}#~"
        for item in self._items_backwards(conversation_id, MESSAGE_PREFIX, last_key, 1):
            plain = self._plain(item)
            _, after_turn, number = str(plain["sk"]).split("#")
            yield StaffMessage(
                after_turn=int(after_turn),
                number=int(number),
                about_turn=int(plain["about_turn"]),
                text=str(plain["text"]),
                at=datetime.fromisoformat(str(plain["at"])),
            )

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

    def _items_under(self, conversation_id: UUID, prefix: str) -> Iterator[dict[str, Any]]:
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": self._item({":pk": partition_key(conversation_id), ":prefix": prefix}),
            "ConsistentRead": True,
        }
        return self._query_pages(query)

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

    def _get(self, conversation_id: UUID, sort_key: str) -> GetItemOutputTypeDef:
        """One item of the conversation, read consistently."""
        with store_errors():
            return self._client.get_item(
                TableName=self._table,
                Key=self._item({"pk": partition_key(conversation_id), "sk": sort_key}),
                ConsistentRead=True,
            )
