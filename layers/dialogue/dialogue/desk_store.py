"""The staff desk's items on the conversation table.

- Queues: TURN items carry `queue` and `queued_at` while they wait in a staff queue; the table's sparse
  index QUEUE_INDEX (partition `queue`, sort `queued_at`) lists them without a Scan.
- Claims: `claimed_by` and `claim_expires_at` on the TURN item, set and cleared by conditional writes.
- Staff messages: `MSG#<turn count:06d>#<n:06d>` under the conversation, n from the conversation's
  STAFFMSG counter. A message and its counter are written in one transaction, conditional on the
  counter and on the conversation's turn count, so messages are committed in the order they sort in:
  the resident's message list only ever grows at its end.
- Figures: counters in the `STATS` partition (TOTAL, and `DAY#<YYYY-MM-DD>` per UTC day of decisions,
  which expire), added to (`ADD`) in the transaction of each decision and close; open work is counted on the open-queue
  index. Reading the figures takes four requests, however long the history (dialogue.desk's statistics).
- Audit: `AUDIT#<conversation id>` partitions, one item per claim, release, decision, reply or close,
  put once (`attribute_not_exists`) in the same transaction as the change, and never updated (the
  template denies updates and deletes). The items of one turn are a hash chain (dialogue.audit_chain):
  sort key `TURN#<turn:06d>#<seq:06d>`, each link holding the previous link's hash (`prev_hash`) and
  its own (`hash`, SHA-256 of its canonical fields). The store reads the chain's last link (one
  consistent Query) before it writes the next; a writer that raced it to the same sequence number
  fails `attribute_not_exists`, and the staff member is asked to try again (StaffWriteConflict).
  Once the transaction commits, each new link's JSON is also put, once (If-None-Match), in the audit
  bucket under S3 Object Lock (AUDIT_BUCKET; `audit/<conversation id>/<turn:06d>/<seq:06d>.json`):
  the WORM copy a rewritten table item is compared with. A failed copy is logged and counted
  (AuditCopyFailed), never the staff request's failure. Links hold ids, a staff subject, codes and
  times: never resident or staff text.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, time, timedelta
from typing import Any, Literal
from uuid import UUID

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from dialogue import audit_chain
from dialogue.actions import HandoffStatus, HumanReview, Queue
from dialogue.desk import CLOSED, DeskCounters, StaffMember, decision_counters
from dialogue.errors import (
    AlreadyDecided,
    ClaimedByOther,
    ClaimRequired,
    HandoffClosed,
    NotInQueue,
    StaffWriteConflict,
    StoreUnavailable,
)
from dialogue.observability import logger, metrics
from dialogue.records import Draft, TurnRecord
from dialogue.store import (
    CONDITION_FAILED,
    MESSAGE_PREFIX,
    OPEN_QUEUE,
    OPEN_QUEUE_INDEX,
    QUEUE_INDEX,
    STAFF_COUNTER_SK,
    STATE_SK,
    TRANSACTION_CONFLICT,
    DynamoConversationStore,
    StaffMessage,
    cancellation_codes,
    partition_key,
    reply_sort_key,
    store_errors,
    stored_time,
    ttl_epoch,
    turn_from_item,
    turn_sort_key,
)

OPEN_ITEMS: Mapping[Queue, tuple[str, str]] = {
    Queue.REVIEW: ("human_review", str(HumanReview.PENDING)),
    Queue.HANDOFF: ("handoff_status", str(HandoffStatus.OPEN)),
}
"""The filter that asks a queue for its open items only, which the open-queue index answers."""
AUDIT_PREFIX = audit_chain.AUDIT_PREFIX
AuditAction = Literal["claim", "release", "decision", "reply", "close"]
STATS_PK = "STATS"
"""The desk's counters (dialogue.desk's statistics): sort key TOTAL, since counting began, and
`DAY#<YYYY-MM-DD>`, one item per UTC day that had a decision (closes are counted in TOTAL only)."""
STATS_TOTAL_SK = "TOTAL"
STATS_DAY_PREFIX = "DAY#"
STATS_DAY_RETENTION = timedelta(days=90)
"""A day's counters expire this long after the day began; the figures show the last 30 days that had any."""
STATS_DAYS_SHOWN = 30


def message_sort_key(turn_count: int, number: int) -> str:
    return f"{MESSAGE_PREFIX}{turn_count:06d}#{number:06d}"


def audit_partition(conversation_id: UUID) -> str:
    return audit_chain.audit_partition(conversation_id)


def encode_cursor(key: dict[str, Any] | None) -> str | None:
    """An index query's LastEvaluatedKey as an opaque page cursor (ids and times, no user text)."""
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode() if key else None


def decode_cursor(cursor: str | None) -> dict[str, Any] | None:
    if not cursor:
        return None
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError):
        raise ValueError("the page cursor is not one this API gave") from None
    if not isinstance(key, dict) or not all(isinstance(value, dict) for value in key.values()):
        raise ValueError("the page cursor is not one this API gave")
    return key


class DynamoDeskStore(DynamoConversationStore):
    """The conversation store, with the desk's queries and writes."""

    def __init__(
        self,
        *args: Any,
        staff_message_retention: timedelta,
        audit_retention: timedelta,
        audit_s3: Any = None,
        audit_bucket: str = "",
        **kwargs: Any,
    ):
        super().__init__(*args, **kwargs)
        self._message_retention = staff_message_retention
        self._audit_retention = audit_retention
        self._audit_s3 = audit_s3 if audit_bucket else None  # no bucket, no WORM copy
        self._audit_bucket = audit_bucket

    # --- reading the queues ----------------------------------------------------------------------

    def queue_page(
        self,
        queue: Queue,
        *,
        newest_first: bool,
        limit: int,
        cursor: str | None,
        where: Mapping[str, str | bool] | None = None,
    ) -> tuple[list[TurnRecord], str | None]:
        """One page of a queue from a sparse index, and the cursor of the next page (None: no more).

        `where` keeps the items whose attributes equal the values given (a filter on the query: a page
        may hold fewer than `limit` items and still have a next one). A page of the work still to do
        (a pending review, an open hand-off) reads the open-queue index, which holds nothing else, so
        no number of decided items comes before it."""
        where = dict(where or {})
        open_field, open_value = OPEN_ITEMS[queue]
        open_only = where.get(open_field) == open_value
        if open_only:
            del where[open_field]
        key_attribute = OPEN_QUEUE if open_only else "queue"
        names = {"#queue": key_attribute}
        values: dict[str, Any] = {":queue": str(queue)}
        query: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": OPEN_QUEUE_INDEX if open_only else QUEUE_INDEX,
            "KeyConditionExpression": "#queue = :queue",
            "ScanIndexForward": not newest_first,
            "Limit": limit,
        }
        conditions = []
        for number, (attribute, value) in enumerate(sorted(where.items())):
            names[f"#f{number}"] = attribute
            values[f":f{number}"] = value
            conditions.append(f"#f{number} = :f{number}")
        if conditions:
            query["FilterExpression"] = " AND ".join(conditions)
        query["ExpressionAttributeNames"] = names
        query["ExpressionAttributeValues"] = self._item(values)
        start = decode_cursor(cursor)
        if start is not None:
            query["ExclusiveStartKey"] = start
        with store_errors():
            response = self._client.query(**query)
        turns = [turn_from_item(item) for item in response.get("Items", [])]
        return turns, encode_cursor(response.get("LastEvaluatedKey"))

    def open_count(self, queue: Queue) -> int:
        """How many items of `queue` wait for a person: a COUNT query on the open-queue index, which holds
        only them (so the count costs what the open work is, not what the history is)."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": OPEN_QUEUE_INDEX,
            "KeyConditionExpression": "#queue = :queue",
            "ExpressionAttributeNames": {"#queue": OPEN_QUEUE},
            "ExpressionAttributeValues": self._item({":queue": str(queue)}),
            "Select": "COUNT",
        }
        count = 0
        while True:
            with store_errors():
                response = self._client.query(**query)
            count += int(response.get("Count", 0))
            if "LastEvaluatedKey" not in response:
                return count
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def desk_counters(self, days: int = STATS_DAYS_SHOWN) -> DeskCounters:
        """What the desk's figures are read from, in four requests whatever the history: the TOTAL counters
        (GetItem), the last `days` days that had a decision (one Query, newest first, `days` items
        at most), and the two open-queue counts."""
        with store_errors():
            total = self._client.get_item(
                TableName=self._table,
                Key=self._item({"pk": STATS_PK, "sk": STATS_TOTAL_SK}),
                ConsistentRead=True,
            ).get("Item")
            recent = self._client.query(
                TableName=self._table,
                KeyConditionExpression="pk = :pk AND begins_with(sk, :day)",
                ExpressionAttributeValues=self._item({":pk": STATS_PK, ":day": STATS_DAY_PREFIX}),
                ScanIndexForward=False,
                Limit=days,
                ConsistentRead=True,
            ).get("Items", [])
        per_day = [self._counts(item) for item in reversed(recent)]
        return DeskCounters(
            total=self._counts(total or {})[1],
            days=[(datetime.strptime(day, f"{STATS_DAY_PREFIX}%Y-%m-%d").date(), counts) for day, counts in per_day],
            pending_reviews=self.open_count(Queue.REVIEW),
            open_handoffs=self.open_count(Queue.HANDOFF),
        )

    def _counts(self, item: Mapping[str, Any]) -> tuple[str, dict[str, int]]:
        """A counter item's sort key and its counters."""
        plain = self._plain(item)
        sort_key = str(plain.pop("sk", ""))
        return sort_key, {name: int(value) for name, value in plain.items() if name not in ("pk", "expires_at")}

    def _counted(self, names: Sequence[str], now: datetime, *, per_day: bool = True) -> list[dict[str, Any]]:
        """Transaction items that add 1 to each counter in `names`, in the TOTAL item and (`per_day`) in the
        item of `now`'s UTC day, which expires STATS_DAY_RETENTION after the day began."""
        placeholders = {f"#c{number}": name for number, name in enumerate(names)}
        adding = "ADD " + ", ".join(f"{placeholder} :one" for placeholder in placeholders)
        day = now.astimezone(UTC).date()
        expires = ttl_epoch(datetime.combine(day, time(), UTC) + STATS_DAY_RETENTION)

        def update(sort_key: str, expression: str, values: dict[str, Any]) -> dict[str, Any]:
            return {
                "Update": {
                    "TableName": self._table,
                    "Key": self._item({"pk": STATS_PK, "sk": sort_key}),
                    "UpdateExpression": expression,
                    "ExpressionAttributeNames": placeholders,
                    "ExpressionAttributeValues": self._item(values),
                }
            }

        day_key = f"{STATS_DAY_PREFIX}{day.isoformat()}"
        total = update(STATS_TOTAL_SK, adding, {":one": 1})
        if not per_day:
            return [total]
        return [total, update(day_key, f"SET expires_at = :expires {adding}", {":one": 1, ":expires": expires})]

    def drafts(self, turns: Sequence[TurnRecord]) -> dict[tuple[UUID, int], tuple[str | None, Draft | None]]:
        """Each turn's REPLY item: the reply shown and the draft it judged (BatchGetItem, 100 a call)."""
        found: dict[tuple[UUID, int], tuple[str | None, Draft | None]] = {}
        keys = [
            self._item({"pk": partition_key(turn.conversation_id), "sk": reply_sort_key(turn.turn_id)})
            for turn in turns
        ]
        for start in range(0, len(keys), 100):
            request: dict[str, Any] = {self._table: {"Keys": keys[start : start + 100], "ConsistentRead": True}}
            while request:
                with store_errors():
                    response = self._client.batch_get_item(RequestItems=request)
                for item in response.get("Responses", {}).get(self._table, []):
                    plain = self._plain(item)
                    conversation_id = UUID(str(plain["pk"]).removeprefix("CONV#"))
                    turn_id = int(str(plain["sk"]).split("#")[1])
                    draft = None
                    if "ended_by_eos" in plain:  # a screened draft (its text is the reply's when absent)
                        draft = Draft(
                            text=str(plain.get("draft_text", plain["reply"])),
                            output_tokens=int(plain["output_tokens"])
                            if plain.get("output_tokens") is not None
                            else None,
                            ended_by_eos=bool(plain["ended_by_eos"]),
                            hit_token_cap=bool(plain["hit_token_cap"]),
                            passage_ids=tuple(plain.get("passage_ids", ())),
                        )
                    found[(conversation_id, turn_id)] = (str(plain["reply"]), draft)
                request = response.get("UnprocessedKeys") or {}  # type: ignore[assignment]
        return found

    def queued_turn(self, conversation_id: UUID, turn_id: int, queue: Queue) -> TurnRecord:
        turn = self.get_turn(conversation_id, turn_id)
        if turn is None or turn.queue is not queue:
            raise NotInQueue()
        return turn

    # --- claims --------------------------------------------------------------------------------------

    def claim(
        self, conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime, lifetime: timedelta
    ) -> datetime:
        """Take (or renew) the item's claim until now + lifetime. Raises ClaimedByOther when another
        staff member's claim is live, AlreadyDecided or HandoffClosed when there is nothing left to do."""
        expires = datetime.fromisoformat(stored_time(now + lifetime))  # as kept: to the millisecond
        condition = (
            "#queue = :queue AND (attribute_not_exists(claimed_by) OR claimed_by = :me OR claim_expires_at <= :now)"
        )
        condition += self._open_condition(queue)
        update = {
            "Update": {
                "TableName": self._table,
                "Key": self._turn_key(conversation_id, turn_id),
                "UpdateExpression": "SET claimed_by = :me, claim_expires_at = :expires",
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#queue": "queue"},
                "ExpressionAttributeValues": self._item(
                    {
                        ":queue": str(queue),
                        ":me": staff.subject,
                        ":now": stored_time(now),
                        ":expires": stored_time(expires),
                        **self._open_values(queue),
                    }
                ),
            }
        }
        self._transact(
            [update, self._audit(conversation_id, turn_id, queue, staff, now, "claim")],
            conversation_id,
            turn_id,
            queue,
            staff,
            now,
        )
        return expires

    def release(self, conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime) -> None:
        update = {
            "Update": {
                "TableName": self._table,
                "Key": self._turn_key(conversation_id, turn_id),
                "UpdateExpression": "REMOVE claimed_by, claim_expires_at",
                "ConditionExpression": "#queue = :queue AND claimed_by = :me",
                "ExpressionAttributeNames": {"#queue": "queue"},
                "ExpressionAttributeValues": self._item({":queue": str(queue), ":me": staff.subject}),
            }
        }
        self._transact(
            [update, self._audit(conversation_id, turn_id, queue, staff, now, "release")],
            conversation_id,
            turn_id,
            queue,
            staff,
            now,
        )

    # --- decisions, replies, closes ------------------------------------------------------------------

    def decide(
        self,
        conversation_id: UUID,
        turn_id: int,
        staff: StaffMember,
        now: datetime,
        review: HumanReview,
        reason: str | None,
        message: str | None,
        *,
        reply_kept: bool,
        turn: TurnRecord,
    ) -> StaffMessage | None:
        """Record a decision on a claimed review item, and post what it sends the resident (a correction,
        or an approved draft: `desk.message_for_decision`), in one transaction. `reply_kept`: the turn's
        REPLY item is there (the caller read it with the draft), so its retention runs from now. `turn`:
        the item as the caller read it; the desk's counters (`desk.decision_counters`) are added to in the
        same transaction, from its screens, fallback and queue time, which are set once when it is queued."""
        assert (turn.conversation_id, turn.turn_id) == (conversation_id, turn_id)
        queue = Queue.REVIEW
        values: dict[str, Any] = {":review": str(review)}
        assignments = "human_review = :review, decided_by = :me, decided_at = :now"
        if reason is not None:
            assignments += ", decision_reason = :reason"
            values[":reason"] = reason
        update = self._on_claimed(
            conversation_id, turn_id, queue, staff, now, f"SET {assignments}", values, leaves_queue=True
        )
        audit = self._audit(conversation_id, turn_id, queue, staff, now, "decision", str(review), reason)
        items = [update, audit, *self._counted(decision_counters(turn, review, now), now)]
        # The draft was kept until this decision; from it, it is kept REPLY_RETENTION_HOURS more.
        if reply_kept:
            items.append(
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": self._item({"pk": partition_key(conversation_id), "sk": reply_sort_key(turn_id)}),
                        "UpdateExpression": "SET expires_at = :expires",
                        "ConditionExpression": "attribute_exists(pk)",
                        "ExpressionAttributeValues": self._item({":expires": ttl_epoch(now + self._reply_retention)}),
                    }
                }
            )
        if message is None:
            self._transact(items, conversation_id, turn_id, queue, staff, now)
            return None
        return self._commit_with_message(conversation_id, message, now, items, turn_id, queue, staff)

    def reply(self, conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime, text: str) -> StaffMessage:
        """Post a staff message on a claimed, open hand-off."""
        queue = Queue.HANDOFF
        check = self._on_claimed(conversation_id, turn_id, queue, staff, now)
        audit = self._audit(conversation_id, turn_id, queue, staff, now, "reply")
        return self._commit_with_message(conversation_id, text, now, [check, audit], turn_id, queue, staff)

    def close(self, conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime) -> None:
        queue = Queue.HANDOFF
        closing = "SET handoff_status = :closed, decided_by = :me, decided_at = :now"
        update = self._on_claimed(
            conversation_id, turn_id, queue, staff, now, closing, {":closed": str(HandoffStatus.CLOSED)},
            leaves_queue=True,
        )  # fmt: skip
        audit = self._audit(conversation_id, turn_id, queue, staff, now, "close")
        counted = self._counted([CLOSED], now, per_day=False)
        self._transact([update, audit, *counted], conversation_id, turn_id, queue, staff, now)

    def _on_claimed(
        self,
        conversation_id: UUID,
        turn_id: int,
        queue: Queue,
        staff: StaffMember,
        now: datetime,
        assignments: str | None = None,
        values: dict[str, Any] | None = None,
        *,
        leaves_queue: bool = False,
    ) -> dict[str, Any]:
        """A transaction item on a turn that waits in `queue`, still needs work, and on which `staff` holds
        a live claim: an Update that makes `assignments` and ends the claim (and, with `leaves_queue`,
        takes the item out of the open-queue index), or (without assignments) a ConditionCheck."""
        body = {
            "TableName": self._table,
            "Key": self._turn_key(conversation_id, turn_id),
            "ConditionExpression": "#queue = :queue AND claimed_by = :me AND claim_expires_at > :now"
            + self._open_condition(queue),
            "ExpressionAttributeNames": {"#queue": "queue"},
            "ExpressionAttributeValues": self._item(
                {
                    ":queue": str(queue),
                    ":me": staff.subject,
                    ":now": stored_time(now),
                    **self._open_values(queue),
                    **(values or {}),
                }
            ),
        }
        if assignments is None:
            return {"ConditionCheck": body}
        removed = f"claimed_by, claim_expires_at{f', {OPEN_QUEUE}' if leaves_queue else ''}"
        return {"Update": {**body, "UpdateExpression": f"{assignments} REMOVE {removed}"}}

    def audit_trail(self, conversation_id: UUID, turn_id: int) -> list[dict[str, Any]]:
        """One item's audit links, oldest first (one Query on its chain's sort-key prefix, page by page)."""
        links: list[dict[str, Any]] = []
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :chain)",
            "ExpressionAttributeValues": self._item(
                {":pk": audit_partition(conversation_id), ":chain": audit_chain.chain_prefix(turn_id)}
            ),
            "ConsistentRead": True,
        }
        while True:
            with store_errors():
                response = self._client.query(**query)
            links.extend(audit_chain.link_from_item(self._plain(item)) for item in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return links
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _last_link(self, conversation_id: UUID, turn_id: int) -> dict[str, Any] | None:
        """The item's newest audit link, read consistently (the one the next link follows)."""
        with store_errors():
            response = self._client.query(
                TableName=self._table,
                KeyConditionExpression="pk = :pk AND begins_with(sk, :chain)",
                ExpressionAttributeValues=self._item(
                    {":pk": audit_partition(conversation_id), ":chain": audit_chain.chain_prefix(turn_id)}
                ),
                ScanIndexForward=False,
                Limit=1,
                ConsistentRead=True,
            )
        items = response.get("Items", [])
        return audit_chain.link_from_item(self._plain(items[0])) if items else None

    # --- the pieces ---------------------------------------------------------------------------------

    def _turn_key(self, conversation_id: UUID, turn_id: int) -> dict[str, Any]:
        return self._item({"pk": partition_key(conversation_id), "sk": turn_sort_key(turn_id)})

    @staticmethod
    def _open_condition(queue: Queue) -> str:
        """An item still needing work: a review not yet decided, a hand-off not closed."""
        return " AND human_review = :pending" if queue is Queue.REVIEW else " AND handoff_status = :open"

    @staticmethod
    def _open_values(queue: Queue) -> dict[str, str]:
        if queue is Queue.REVIEW:
            return {":pending": str(HumanReview.PENDING)}
        return {":open": str(HandoffStatus.OPEN)}

    def _audit(
        self,
        conversation_id: UUID,
        turn_id: int,
        queue: Queue,
        staff: StaffMember,
        now: datetime,
        action: AuditAction,
        outcome: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """The item's next audit link, put once: who, when, what, on which turn, chained to the link before
        it (read now). Never staff or resident text."""
        link = audit_chain.new_link(
            conversation_id,
            turn_id,
            self._last_link(conversation_id, turn_id),
            staff=staff.subject,
            action=action,
            queue=str(queue),
            outcome=outcome,
            reason=reason,
            at=stored_time(now),
            expires_at=ttl_epoch(now + self._audit_retention),
        )
        stored = {key: value for key, value in link.items() if key != "conversation_id"}
        return {
            "Put": {
                "TableName": self._table,
                "Item": self._item(
                    {
                        "pk": audit_partition(conversation_id),
                        "sk": audit_chain.link_sort_key(turn_id, link["seq"]),
                        **stored,
                    }
                ),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }

    def _copy_links(self, items: list[dict[str, Any]]) -> None:
        """After a commit: each audit link the transaction put, written once to the WORM bucket. A failure
        is logged (ids only) and counted, and the staff request goes on: the link is in the table."""
        if self._audit_s3 is None:
            return
        for entry in items:
            put = entry.get("Put", {})
            if not str(put.get("Item", {}).get("pk", {}).get("S", "")).startswith(AUDIT_PREFIX):
                continue
            link = audit_chain.link_from_item(self._plain(put["Item"]))
            key = audit_chain.object_key(link["conversation_id"], link["turn_id"], link["seq"])
            try:
                self._audit_s3.put_object(
                    Bucket=self._audit_bucket,
                    Key=key,
                    Body=audit_chain.link_document(link),
                    ContentType="application/json",
                    IfNoneMatch="*",
                )
            except (ClientError, BotoCoreError) as error:
                code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else None
                logger.warning(
                    "audit copy failed",
                    conversation_id=link["conversation_id"],
                    turn_id=link["turn_id"],
                    seq=link["seq"],
                    error=code or type(error).__name__,
                )
                metrics.add_metric(name="AuditCopyFailed", unit=MetricUnit.Count, value=1)

    def _commit_with_message(
        self,
        conversation_id: UUID,
        text: str,
        now: datetime,
        items: list[dict[str, Any]],
        turn_id: int,
        queue: Queue,
        staff: StaffMember,
    ) -> StaffMessage:
        """Commit `items` and post a staff message with `text` in the same transaction: the conversation's
        turn count and its message counter, read first, are its conditions (tried three times on a race)."""
        for _attempt in range(3):
            state = self.load_conversation(conversation_id)
            if state is None:
                raise NotInQueue()
            counter = self._get(conversation_id, STAFF_COUNTER_SK).get("Item")
            count = int(self._plain(counter)["count"]) if counter else 0
            message_items = [
                {
                    "ConditionCheck": {
                        "TableName": self._table,
                        "Key": self._item({"pk": partition_key(conversation_id), "sk": STATE_SK}),
                        "ConditionExpression": "turn_count = :turns",
                        "ExpressionAttributeValues": self._item({":turns": state.turn_count}),
                    }
                },
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": self._item(
                            {
                                "pk": partition_key(conversation_id),
                                "sk": STAFF_COUNTER_SK,
                                "count": count + 1,
                                "expires_at": ttl_epoch(now + self._message_retention),
                            }
                        ),
                        "ConditionExpression": "attribute_not_exists(pk) OR #count = :count",
                        "ExpressionAttributeNames": {"#count": "count"},
                        "ExpressionAttributeValues": self._item({":count": count}),
                    }
                },
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": self._item(
                            {
                                "pk": partition_key(conversation_id),
                                "sk": message_sort_key(state.turn_count, count + 1),
                                "about_turn": turn_id,
                                "text": text,
                                "at": stored_time(now),
                                "expires_at": ttl_epoch(now + self._message_retention),
                            }
                        ),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
            try:
                self._transact(
                    [*items, *message_items],
                    conversation_id,
                    turn_id,
                    queue,
                    staff,
                    now,
                    message_items_from=len(items),
                )
            except _MessageRace:
                continue
            return StaffMessage(after_turn=state.turn_count, number=count + 1, about_turn=turn_id, text=text, at=now)
        raise StaffWriteConflict()

    def _transact(
        self,
        items: list[dict[str, Any]],
        conversation_id: UUID,
        turn_id: int,
        queue: Queue,
        staff: StaffMember,
        now: datetime,
        *,
        message_items_from: int | None = None,
    ) -> None:
        """Write `items` in one transaction. When the turn's condition (the first item) failed, say why;
        a failure of a condition from item `message_items_from` on (the staff message's), or another transaction
        holding an item, is a race a message retries; otherwise (an audit link another writer put at the
        same sequence number first, say) the staff member is told to try again. Once committed, the new
        audit link is copied to the WORM bucket."""
        try:
            self._client.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise StoreUnavailable() from None
            codes = cancellation_codes(error)
            if codes and codes[0] == CONDITION_FAILED:
                raise self._why_refused(conversation_id, turn_id, queue, staff, now) from None
            raced = CONDITION_FAILED in codes[message_items_from:] or TRANSACTION_CONFLICT in codes
            if message_items_from is not None and raced:
                raise _MessageRace() from None
            raise StaffWriteConflict() from None
        except BotoCoreError:
            raise StoreUnavailable() from None
        self._copy_links(items)

    def _why_refused(
        self, conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime
    ) -> Exception:
        turn = self.get_turn(conversation_id, turn_id)
        if turn is None or turn.queue is not queue:
            return NotInQueue()
        if queue is Queue.REVIEW and turn.human_review is not HumanReview.PENDING:
            return AlreadyDecided()
        if queue is Queue.HANDOFF and turn.handoff_status is HandoffStatus.CLOSED:
            return HandoffClosed()
        live = turn.claimed_by is not None and turn.claim_expires_at is not None and turn.claim_expires_at > now
        if live and turn.claimed_by != staff.subject:
            return ClaimedByOther()
        return ClaimRequired()


class _MessageRace(Exception):
    """The staff message's turn count or counter moved between the read and the write."""
