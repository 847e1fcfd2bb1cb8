"""The staff desk's store (dialogue.ports.DeskStore) on the conversation table: dialogue.desk_rules as
conditions.

- Queues: TURN items carry `queue` and `queued_at` while they wait in a staff queue; the table's sparse
  index QUEUE_INDEX (partition `queue`, sort `queued_at`) lists them without a Scan, and OPEN_QUEUE_INDEX
  only those still waiting for a person.
- Claims: `claimed_by` and `claim_expires_at` on the TURN item, set and cleared by conditional writes.
- Decisions, replies, closes, looks at the contact form and corrections of the record: one transaction
  each, with the item's next audit link (`AuditLinks.next_link` of the act's `desk_rules.AuditEntry`)
  and, for a correction, an approval or a reply, the staff message (dialogue.aws.replies); each decision
  and close adds to the desk's counters in its transaction (`DeskFigures.added` of `desk.decision_adds`,
  `desk.CLOSE_ADDS`).

Which rule of dialogue.desk_rules each condition enforces, on the TURN item:

- `#queue = :queue AND (attribute_not_exists(claimed_by) OR claimed_by = :me OR claim_expires_at <= :now)`
  with the open condition: `may_claim` (a claim's expiry from `claim_until`).
- `#queue = :queue AND claimed_by = :me`: `may_release`.
- `#queue = :queue AND claimed_by = :me AND claim_expires_at > :now` with the open condition
  (`_on_claimed`): `holds_claim`, what a decision, a reply, a close, a look at the contact form and a
  correction need.
- The open condition, `human_review = :pending` or `handoff_status = :open`: `still_open`.

When the item's condition fails, the item is read again and `desk_rules.refusal` says which clash it met.
The STATE item's `#version = :expected` (a close that clears the open hand-off, a correction) and the
staff message's conditions (dialogue.aws.replies) are races a write retries; an audit link's
`attribute_not_exists` failing is StaffWriteConflict.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from dialogue.actions import HandoffStatus, HumanReview, Queue
from dialogue.audit_chain import LinkKey
from dialogue.aws.audit import AuditLinks
from dialogue.aws.figures import DeskFigures
from dialogue.aws.stores import DynamoConversationStore
from dialogue.aws.table import (
    CONDITION_FAILED,
    OPEN_QUEUE,
    OPEN_QUEUE_INDEX,
    QUEUE_INDEX,
    STATE_SK,
    TRANSACTION_CONFLICT,
    DynamoDBClient,
    DynamoTable,
    partition_key,
    reply_sort_key,
    store_errors,
    stored_time,
    ttl_epoch,
    turn_from_item,
    turn_sort_key,
)
from dialogue.desk import CLOSE_ADDS, decision_adds, next_staff_message
from dialogue.desk_rules import (
    AuditEntry,
    Decision,
    DeskCounters,
    RecordCorrection,
    StaffMember,
    audit_entry,
    claim_until,
    closes_open_handoff,
    correction_entry,
    decision_entry,
    handoff_cleared,
    in_queue,
    refusal,
)
from dialogue.errors import NotInQueue, StaffWriteConflict
from dialogue.ports import PageQuery, SealedContact, StaffMessage
from dialogue.records import ConversationRecord, Draft, TurnRecord

OPEN_ITEMS: Mapping[Queue, tuple[str, str]] = {
    Queue.REVIEW: ("human_review", str(HumanReview.PENDING)),
    Queue.HANDOFF: ("handoff_status", str(HandoffStatus.OPEN)),
}
"""The filter that asks a queue for its open items only, which the open-queue index answers."""
CLAIM_ATTRIBUTES = "claimed_by, claimed_by_name, claim_expires_at"
"""A claim's attributes on its TURN item, as an UpdateExpression's REMOVE lists them."""


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


class DynamoDeskStore(DynamoTable):
    """dialogue.ports.DeskStore on the conversation table: the staff queues' pages, claims, decisions,
    replies, closes, looks at the contact form and corrections of the record, each with its audit link
    (`audit`) in one transaction, a decision's and a close's with the desk's counters (`figures`), a
    message's with the staff message; the conversation's items are read and written through
    `conversations`, its turns and replies. A decision keeps the draft `reply_retention` more; a staff
    message is kept `staff_message_retention`."""

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        *,
        conversations: DynamoConversationStore,
        audit: AuditLinks,
        figures: DeskFigures,
        reply_retention: timedelta,
        staff_message_retention: timedelta,
    ) -> None:
        super().__init__(client, table_name)
        self.conversations = conversations
        self.audit = audit
        self.figures = figures
        self._turns = conversations.turns
        self._replies = conversations.replies
        self._reply_retention = reply_retention
        self._message_retention = staff_message_retention

    # --- reading the queues ----------------------------------------------------------------------

    def queue_page(self, query: PageQuery) -> tuple[list[TurnRecord], str | None]:
        """One page of a queue from a sparse index, and the cursor of the next page (None: no more).

        `where` keeps the items whose attributes equal the values given (a filter on the query: a page
        may hold fewer than `limit` items and still have a next one). A page of the work still to do
        (a pending review, an open hand-off) reads the open-queue index, which holds nothing else, so
        no number of decided items comes before it."""
        queue, where = query.queue, dict(query.where or {})
        open_field, open_value = OPEN_ITEMS[queue]
        open_only = where.get(open_field) == open_value
        if open_only:
            del where[open_field]
        key_attribute = OPEN_QUEUE if open_only else "queue"
        names = {"#queue": key_attribute}
        values: dict[str, Any] = {":queue": str(queue)}
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": OPEN_QUEUE_INDEX if open_only else QUEUE_INDEX,
            "KeyConditionExpression": "#queue = :queue",
            "ScanIndexForward": not query.newest_first,
            "Limit": query.limit,
        }
        conditions = []
        for number, (attribute, value) in enumerate(sorted(where.items())):
            names[f"#f{number}"] = attribute
            values[f":f{number}"] = value
            conditions.append(f"#f{number} = :f{number}")
        if conditions:
            request["FilterExpression"] = " AND ".join(conditions)
        request["ExpressionAttributeNames"] = names
        request["ExpressionAttributeValues"] = self._item(values)
        start = decode_cursor(query.cursor)
        if start is not None:
            request["ExclusiveStartKey"] = start
        with store_errors():
            response = self._client.query(**request)
        turns = [turn_from_item(item) for item in response.get("Items", [])]
        return turns, encode_cursor(response.get("LastEvaluatedKey"))

    def drafts(self, turns: Sequence[TurnRecord]) -> dict[tuple[UUID, int], tuple[str | None, Draft | None]]:
        return self._replies.drafts(turns)

    def read_contact(self, conversation_id: UUID, now: datetime) -> SealedContact | None:
        return self._turns.read_contact(conversation_id, now)

    def audit_trail(self, conversation_id: UUID, turn_id: int) -> list[dict[str, Any]]:
        return self.audit.audit_trail(conversation_id, turn_id)

    def turn_copies(self, conversation_id: UUID, turn_id: int) -> tuple[dict[LinkKey, bytes], set[LinkKey]] | None:
        return self.audit.turn_copies(conversation_id, turn_id)

    def desk_counters(self) -> DeskCounters:
        return self.figures.desk_counters()

    def queued_turn(self, conversation_id: UUID, turn_id: int, queue: Queue) -> TurnRecord:
        turn = self._turns.get_turn(conversation_id, turn_id)
        if turn is None or not in_queue(turn, queue):
            raise NotInQueue()
        return turn

    # --- claims --------------------------------------------------------------------------------------

    def claim(
        self, conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime, lifetime: timedelta
    ) -> datetime:
        """Take (or renew) the item's claim until `desk_rules.claim_until`; the condition is `may_claim`.
        Raises ClaimedByOther when another staff member's claim is live, AlreadyDecided or HandoffClosed
        when there is nothing left to do."""
        expires = claim_until(now, lifetime)
        condition = (
            "#queue = :queue AND (attribute_not_exists(claimed_by) OR claimed_by = :me OR claim_expires_at <= :now)"
        )
        condition += self._open_condition(queue)
        # The holder's display name, for their colleagues' view of the item (none where the sign-in gave none).
        named = "SET claimed_by_name = :name," if staff.name else "REMOVE claimed_by_name SET"
        update = {
            "Update": {
                "TableName": self._table,
                "Key": self._turn_key(conversation_id, turn_id),
                "UpdateExpression": f"{named} claimed_by = :me, claim_expires_at = :expires",
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#queue": "queue"},
                "ExpressionAttributeValues": self._item(
                    {
                        ":queue": str(queue),
                        ":me": staff.subject,
                        ":name": staff.name,
                        ":now": stored_time(now),
                        ":expires": stored_time(expires),
                        **self._open_values(queue),
                    }
                ),
            }
        }
        entry = audit_entry("claim", conversation_id, turn_id, queue, staff, now)
        self._transact([update, self.audit.next_link(entry)], entry, staff)
        return expires

    def release(self, conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime) -> None:
        """End the item's claim; the condition is `may_release` (the holder's, expired or not)."""
        update = {
            "Update": {
                "TableName": self._table,
                "Key": self._turn_key(conversation_id, turn_id),
                "UpdateExpression": f"REMOVE {CLAIM_ATTRIBUTES}",
                "ConditionExpression": "#queue = :queue AND claimed_by = :me",
                "ExpressionAttributeNames": {"#queue": "queue"},
                "ExpressionAttributeValues": self._item({":queue": str(queue), ":me": staff.subject}),
            }
        }
        entry = audit_entry("release", conversation_id, turn_id, queue, staff, now)
        self._transact([update, self.audit.next_link(entry)], entry, staff)

    # --- decisions, replies, closes ------------------------------------------------------------------

    def decide(self, decision: Decision, staff: StaffMember, now: datetime) -> StaffMessage | None:
        """Record a decision on a claimed review item (`desk_rules.decided`, on `holds_claim`), and post what
        it sends the resident (the decision's message: a correction, or an approved draft), in one
        transaction. With `reply_kept` (the turn's REPLY item is there: the caller read it with the draft),
        the reply's retention runs from now. The desk's counters (`desk.decision_adds`) are added to in the
        same transaction, from the item as the caller read it (its screens, fallback and queue time, which
        are set once when it is queued)."""
        turn, review, reason, message = decision.turn, decision.review, decision.reason, decision.message
        conversation_id, turn_id = turn.conversation_id, turn.turn_id
        queue = Queue.REVIEW
        values: dict[str, Any] = {":review": str(review)}
        assignments = "human_review = :review, decided_by = :me, decided_at = :now"
        if reason is not None:
            assignments += ", decision_reason = :reason"
            values[":reason"] = reason
        update = self._on_claimed(
            conversation_id, turn_id, queue, staff, now, f"SET {assignments}", values, leaves_queue=True
        )
        entry = decision_entry(conversation_id, turn_id, staff, now, review, reason)
        items = [update, self.audit.next_link(entry), *self.figures.added(decision_adds(turn, review, now))]
        # The draft was kept until this decision; from it, it is kept REPLY_RETENTION_HOURS more.
        if decision.reply_kept:
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
            self._transact(items, entry, staff)
            return None
        return self._commit_with_message(message, items, entry, staff)

    def reply(self, conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime, text: str) -> StaffMessage:
        """Post a staff message on an open hand-off `staff` holds a live claim on (`holds_claim`)."""
        queue = Queue.HANDOFF
        check = self._on_claimed(conversation_id, turn_id, queue, staff, now)
        entry = audit_entry("reply", conversation_id, turn_id, queue, staff, now)
        return self._commit_with_message(text, [check, self.audit.next_link(entry)], entry, staff)

    def close(self, conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime) -> None:
        """Close a claimed, open hand-off (`desk_rules.closed`, on `holds_claim`), in one transaction: the item,
        its audit link and the desk's counter (`desk.CLOSE_ADDS`); the resident's contact form, when this item
        holds it (dialogue.contact); and, when the item is the conversation's open one
        (`desk_rules.closes_open_handoff`), the STATE item's `open_handoff` cleared with its version moved on,
        so a resident's turn that read the item open is written again and opens a new one
        (dialogue.handoffs). A resident's turn between the STATE read and the write: read again, up to three
        times."""
        queue = Queue.HANDOFF
        for _attempt in range(3):
            closing = "SET handoff_status = :closed, decided_by = :me, decided_at = :now"
            update = self._on_claimed(
                conversation_id, turn_id, queue, staff, now, closing, {":closed": str(HandoffStatus.CLOSED)},
                leaves_queue=True,
            )  # fmt: skip
            entry = audit_entry("close", conversation_id, turn_id, queue, staff, now)
            items = [update, self.audit.next_link(entry), *self.figures.added(CLOSE_ADDS)]
            contact = self._turns.read_contact(conversation_id)
            if contact is not None and contact.turn_id == turn_id:
                items.append(self._turns.forget_contact(conversation_id, now))
            record = self._turns.load_conversation(conversation_id)
            state_at = None
            if record is not None and closes_open_handoff(record, turn_id):
                state_at = len(items)
                items.append(self._open_handoff_closed(record))
            try:
                self._transact(items, entry, staff, message_items_from=state_at)
            except _MessageRace:
                continue
            return
        raise StaffWriteConflict()

    def _open_handoff_closed(self, record: ConversationRecord) -> dict[str, Any]:
        """The STATE update of `desk_rules.handoff_cleared`, on the version read."""
        cleared = handoff_cleared(record)
        return {
            "Update": {
                "TableName": self._table,
                "Key": self._item({"pk": partition_key(record.conversation_id), "sk": STATE_SK}),
                "UpdateExpression": "REMOVE open_handoff SET #version = :next",
                "ConditionExpression": "#version = :expected",
                "ExpressionAttributeNames": {"#version": "version"},
                "ExpressionAttributeValues": self._item({":next": cleared.version, ":expected": record.version}),
            }
        }

    def contact_for_staff(
        self, conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime
    ) -> SealedContact | None:
        """The conversation's sealed contact, for `staff` on one of its open hand-offs that they hold a live
        claim on (`holds_claim`); the read is audited on that item in the same transaction (a refused read
        writes nothing). None when the resident left none, or it has expired."""
        contact = self._turns.read_contact(conversation_id, now)
        if contact is None:
            return None
        queue = Queue.HANDOFF
        check = self._on_claimed(conversation_id, turn_id, queue, staff, now)
        entry = audit_entry("read_contact", conversation_id, turn_id, queue, staff, now)
        self._transact([check, self.audit.next_link(entry)], entry, staff)
        return contact

    def correct_record(self, correction: RecordCorrection, staff: StaffMember, now: datetime) -> TurnRecord:
        """Correct the conversation's record from an open item of the correction's queue that `staff` holds a
        live claim on: `correct` (dialogue.desk.corrected_record) turns the STATE item as read into the
        corrected state and the turn that records it. One transaction, in this order:

        0. a condition check on the item: `holds_claim` (else nothing is written, and the refusal says why,
           as for a decision);
        1. the item's next audit link, `desk_rules.correction_entry` (the slot and value: pack names, never
           text);
        2. the STATE update, conditional on the version read and bumping it, with the new slots, `asked`, the
           turn count and times (as a resident's turn writes it: a turn that raced it is never overwritten), and
           no `answered_topic` (the resident's next turn answers the read-back, not the answer before it);
        3. the new TURN item, conditional on being new.

        When a resident's turn (or another correction) changed the state between the read and the write, the
        STATE read again and `correct` applied to it, up to three times, then StaffWriteConflict. Returns the
        turn written."""
        conversation_id, turn_id, queue = correction.conversation_id, correction.turn_id, correction.queue
        for _attempt in range(3):
            before = self._turns.load_conversation(conversation_id)
            state, turn = correction.applied_to(before)
            assert before is not None
            check = self._on_claimed(conversation_id, turn_id, queue, staff, now)
            entry = correction_entry(conversation_id, turn_id, queue, staff, now, correction.slot, correction.value)
            update = {
                "Update": {
                    "TableName": self._table,
                    "Key": self._item({"pk": partition_key(conversation_id), "sk": STATE_SK}),
                    "UpdateExpression": "SET slots = :slots, asked = :asked, #version = :next, turn_count = :turns, "
                    "updated_at = :now, expires_at = :expires REMOVE answered_topic",
                    "ConditionExpression": "#version = :expected",
                    "ExpressionAttributeNames": {"#version": "version"},
                    "ExpressionAttributeValues": self._item(
                        {
                            ":slots": dict(state.slots),
                            ":asked": state.asked,
                            ":next": before.version + 1,
                            ":expected": before.version,
                            ":turns": turn.turn_id,
                            ":now": stored_time(now),
                            ":expires": ttl_epoch(now + self._turns.retention),
                        }
                    ),
                }
            }
            put = {
                "Put": {
                    "TableName": self._table,
                    "Item": self._turns.turn_item(turn),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
            try:
                # A failed condition from item 2 on (the state's version, the new turn) is a race to retry.
                items = [check, self.audit.next_link(entry), update, put]
                self._transact(items, entry, staff, message_items_from=2)
            except _MessageRace:
                continue
            return turn
        raise StaffWriteConflict()

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
        """A transaction item on a turn on which `desk_rules.holds_claim` holds (it waits in `queue`, still
        needs work, and `staff` holds a live claim on it): an Update that makes `assignments` and ends the
        claim (and, with `leaves_queue`, takes the item out of the open-queue index), or (without
        assignments) a ConditionCheck."""
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
        removed = f"{CLAIM_ATTRIBUTES}{f', {OPEN_QUEUE}' if leaves_queue else ''}"
        return {"Update": {**body, "UpdateExpression": f"{assignments} REMOVE {removed}"}}

    # --- the pieces ---------------------------------------------------------------------------------

    def _turn_key(self, conversation_id: UUID, turn_id: int) -> dict[str, Any]:
        return self._item({"pk": partition_key(conversation_id), "sk": turn_sort_key(turn_id)})

    @staticmethod
    def _open_condition(queue: Queue) -> str:
        """`desk_rules.still_open`: a review not yet decided, a hand-off not closed."""
        return " AND human_review = :pending" if queue is Queue.REVIEW else " AND handoff_status = :open"

    @staticmethod
    def _open_values(queue: Queue) -> dict[str, str]:
        if queue is Queue.REVIEW:
            return {":pending": str(HumanReview.PENDING)}
        return {":open": str(HandoffStatus.OPEN)}

    def _commit_with_message(
        self, text: str, items: list[dict[str, Any]], entry: AuditEntry, staff: StaffMember
    ) -> StaffMessage:
        """Commit `items` and post a staff message with `text` about the item of `entry`, in the same
        transaction: the conversation's turn count and its message counter, read first, are its conditions
        (tried three times on a race)."""
        conversation_id, now = entry.conversation_id, entry.at
        for _attempt in range(3):
            state = self._turns.load_conversation(conversation_id)
            if state is None:
                raise NotInQueue()
            count = self._replies.staff_message_count(conversation_id)
            message = next_staff_message(state, count, entry.turn_id, text, now)
            message_items = self._replies.staff_message_items(
                conversation_id, state.turn_count, count, entry.turn_id, text, now, self._message_retention
            )
            try:
                self._transact([*items, *message_items], entry, staff, message_items_from=len(items))
            except _MessageRace:
                continue
            return message
        raise StaffWriteConflict()

    def _transact(
        self,
        items: list[dict[str, Any]],
        entry: AuditEntry,
        staff: StaffMember,
        *,
        message_items_from: int | None = None,
    ) -> None:
        """Write `items` (the act `entry` records) in one transaction. When the turn's condition (the first
        item) failed, raise the clash the item as read now shows (`desk_rules.refusal`); a failure of a
        condition from item `message_items_from` on (the staff message's), or another transaction holding an
        item, is a race a message retries; otherwise (an audit link another writer put at the same sequence
        number first, say) the staff member is told to try again. Each new audit link's pending-copy marker
        is committed with it; once committed, the link is copied to the WORM bucket."""
        codes = self._write_transaction(self.audit.with_copy_markers(items))
        if codes is None:
            self.audit.copy_links(items)
            return
        if codes and codes[0] == CONDITION_FAILED:
            turn = self._turns.get_turn(entry.conversation_id, entry.turn_id)
            raise refusal(turn, entry.queue, staff, entry.at)
        raced = CONDITION_FAILED in codes[message_items_from:] or TRANSACTION_CONFLICT in codes
        if message_items_from is not None and raced:
            raise _MessageRace()
        raise StaffWriteConflict()


class _MessageRace(Exception):
    """The staff message's turn count or counter moved between the read and the write."""
