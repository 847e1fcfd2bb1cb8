"""In-memory adapters for the ports of dialogue.ports, for tests only (as cosmicpython's FakeRepository):
dicts and lists where the product has DynamoDB, SQS and ECS, and the same rules, from the core.

`MemoryConversationStore` keeps conversations, turns, replies, staff messages and contact forms, and
refuses what the DynamoDB store's conditions refuse (a stale version, a used request key, a join to a
closed hand-off, a reply to a turn no longer pending). `MemoryDeskStore` acts on its items through
dialogue.desk_rules (who may claim, what an act needs and changes, which clash a refusal means) and
dialogue.desk (the staff message, the counters), keeps each item's audit as a hash chain
(dialogue.audit_chain) and the desk's counters as dicts. No AWS library, no moto.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any
from uuid import UUID

from dialogue import audit_chain
from dialogue.actions import HandoffStatus, HumanReview, Queue, TurnStatus
from dialogue.desk import CLOSE_ADDS, CounterAdds, decision_adds, next_staff_message
from dialogue.desk_rules import (
    AuditEntry,
    Decision,
    DeskCounters,
    RecordCorrection,
    StaffMember,
    audit_entry,
    claim_until,
    claimed,
    closed,
    closes_open_handoff,
    correction_entry,
    decided,
    decision_entry,
    handoff_cleared,
    holds_claim,
    in_queue,
    may_claim,
    may_release,
    refusal,
    released,
    still_open,
)
from dialogue.errors import ConcurrentTurnConflict, HandoffItemGone, NotInQueue
from dialogue.ports import Committed, PageQuery, SealedContact, StaffMessage, TurnCommit, WakeOutcome
from dialogue.realize import RealizeJob, ReplyDeadline
from dialogue.records import ConversationRecord, Draft, ScreenOutcome, TurnRecord
from dialogue.state import DialogueState

Key = tuple[UUID, int]


class MemoryConversationStore:
    """dialogue.ports.ConversationStore in memory."""

    def __init__(self) -> None:
        self.records: dict[UUID, ConversationRecord] = {}
        self.turns: dict[Key, TurnRecord] = {}
        self.replies: dict[Key, tuple[str, Draft | None]] = {}
        self.requests: dict[tuple[UUID, str], int] = {}
        self.contacts: dict[UUID, SealedContact] = {}
        self.messages: dict[UUID, list[StaffMessage]] = defaultdict(list)

    def create_conversation(self, record: ConversationRecord) -> None:
        assert record.conversation_id not in self.records
        self.records[record.conversation_id] = record

    def load_conversation(self, conversation_id: UUID) -> ConversationRecord | None:
        return self.records.get(conversation_id)

    def commit_turn(self, commit: TurnCommit) -> Committed:
        before, turn, request_key, contact = commit.before, commit.turn, commit.request_key, commit.contact
        conversation_id = before.conversation_id
        if request_key is not None and (conversation_id, request_key) in self.requests:
            return Committed(self.requests[conversation_id, request_key], wrote=False)
        stored = self.records.get(conversation_id)
        if stored is None or stored.version != before.version or (conversation_id, turn.turn_id) in self.turns:
            raise ConcurrentTurnConflict()
        joined = self.turns.get((conversation_id, turn.joined_to)) if turn.joined_to is not None else None
        if turn.joined_to is not None and (joined is None or joined.handoff_status is not HandoffStatus.OPEN):
            raise HandoffItemGone()
        self.records[conversation_id] = commit.record_after()
        self.turns[conversation_id, turn.turn_id] = turn
        if joined is not None:
            asks = (*joined.joined, turn.as_ask())
            self.turns[conversation_id, joined.turn_id] = joined.model_copy(
                update={"joined": asks, "queued_at": turn.created_at}
            )
        if request_key is not None:
            self.requests[conversation_id, request_key] = turn.turn_id
        if contact is not None:
            holder = turn.joined_to or turn.turn_id
            self.contacts[conversation_id] = replace(contact, turn_id=holder)
        return Committed(turn.turn_id, wrote=True)

    def read_contact(self, conversation_id: UUID, now: datetime | None = None) -> SealedContact | None:
        contact = self.contacts.get(conversation_id)
        if contact is None or (now is not None and contact.expires_at <= now):
            return None
        return contact

    def forget_contact(self, conversation_id: UUID) -> None:
        self.contacts.pop(conversation_id, None)

    def turn_of_request(self, conversation_id: UUID, request_key: str) -> int | None:
        return self.requests.get((conversation_id, request_key))

    def get_turn(self, conversation_id: UUID, turn_id: int) -> TurnRecord | None:
        return self.turns.get((conversation_id, turn_id))

    def get_reply(self, conversation_id: UUID, turn_id: int) -> str | None:
        kept = self.replies.get((conversation_id, turn_id))
        return kept[0] if kept is not None else None

    def staff_message_count(self, conversation_id: UUID) -> int:
        return len(self.messages[conversation_id])

    def turns_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[tuple[TurnRecord, str | None]]:
        for turn_id in range(last_turn, 0, -1):
            turn = self.turns.get((conversation_id, turn_id))
            if turn is not None:
                yield turn, self.get_reply(conversation_id, turn_id)

    def staff_messages_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[StaffMessage]:
        posted = [message for message in self.messages[conversation_id] if message.after_turn <= last_turn]
        yield from sorted(posted, key=lambda message: (message.after_turn, message.number), reverse=True)

    def record_screened_reply(self, conversation_id: UUID, turn_id: int, outcome: ScreenOutcome, now: datetime) -> bool:
        turn = self.turns.get((conversation_id, turn_id))
        if turn is None or turn.status is not TurnStatus.PENDING:
            return False
        update: dict[str, Any] = {
            "status": TurnStatus.FINAL,
            "reply_screen": outcome.reply_screen,
            "human_review": outcome.human_review,
            "fallback_used": outcome.fallback_used,
            "finalized_at": now,
            "screens_fired": outcome.screens_fired,
        }
        if outcome.draft is not None and outcome.human_review is HumanReview.PENDING:
            update |= {"queue": Queue.REVIEW, "queued_at": now}
        self.turns[conversation_id, turn_id] = turn.model_copy(update=update)
        self.replies[conversation_id, turn_id] = (outcome.final_reply, outcome.draft)
        return True

    def drafts(self, turns: Sequence[TurnRecord]) -> dict[Key, tuple[str | None, Draft | None]]:
        keys = [(turn.conversation_id, turn.turn_id) for turn in turns]
        return {key: self.replies[key] for key in keys if key in self.replies}


@dataclass
class MemoryFigures:
    """The desk's counters: TOTAL and one dict per UTC day, each added to as a CounterAdds says."""

    total: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    days: dict[date, dict[str, int]] = field(default_factory=dict)

    def add(self, adds: CounterAdds) -> None:
        for name in adds.names:
            self.total[name] += 1
            if adds.day is not None:
                day = self.days.setdefault(adds.day, defaultdict(int))
                day[name] += 1


class MemoryDeskStore:
    """dialogue.ports.DeskStore in memory, on a MemoryConversationStore: each act checks the desk's rules on
    the item as stored and raises `desk_rules.refusal` when they do not hold, as the DynamoDB store's
    conditions do; an act that holds writes its change, its audit link and its counters together."""

    def __init__(self, conversations: MemoryConversationStore | None = None) -> None:
        self.conversations = conversations or MemoryConversationStore()
        self.links: dict[Key, list[dict[str, Any]]] = defaultdict(list)
        self.figures = MemoryFigures()

    # --- reads ------------------------------------------------------------------------------------------

    def queue_page(self, query: PageQuery) -> tuple[list[TurnRecord], str | None]:
        queue, cursor, where = query.queue, query.cursor, query.where
        if cursor is not None and not cursor.isdigit():
            raise ValueError("the page cursor is not one this store gave")
        queued = [turn for turn in self.conversations.turns.values() if turn.queue is queue]
        queued.sort(key=lambda turn: turn.queued_at or turn.created_at, reverse=query.newest_first)
        queued = [turn for turn in queued if all(getattr(turn, name) == value for name, value in (where or {}).items())]
        start = int(cursor or 0)
        end = start + query.limit
        return queued[start:end], str(end) if end < len(queued) else None

    def queued_turn(self, conversation_id: UUID, turn_id: int, queue: Queue) -> TurnRecord:
        turn = self.conversations.get_turn(conversation_id, turn_id)
        if turn is None or not in_queue(turn, queue):
            raise NotInQueue()
        return turn

    def drafts(self, turns: Sequence[TurnRecord]) -> dict[Key, tuple[str | None, Draft | None]]:
        return self.conversations.drafts(turns)

    def read_contact(self, conversation_id: UUID, now: datetime) -> SealedContact | None:
        return self.conversations.read_contact(conversation_id, now)

    def audit_trail(self, conversation_id: UUID, turn_id: int) -> list[dict[str, Any]]:
        return list(self.links[conversation_id, turn_id])

    def turn_copies(
        self, conversation_id: UUID, turn_id: int
    ) -> tuple[dict[audit_chain.LinkKey, bytes], set[audit_chain.LinkKey]] | None:
        return None  # no write-once copies in memory

    def desk_counters(self) -> DeskCounters:
        def open_items(queue: Queue) -> int:
            return sum(in_queue(turn, queue) and still_open(turn, queue) for turn in self.conversations.turns.values())

        return DeskCounters(
            total=dict(self.figures.total),
            days=[(day, dict(counts)) for day, counts in sorted(self.figures.days.items())],
            pending_reviews=open_items(Queue.REVIEW),
            open_handoffs=open_items(Queue.HANDOFF),
        )

    # --- acts on an item ----------------------------------------------------------------------------------

    def claim(
        self, conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime, lifetime: timedelta
    ) -> datetime:
        turn = self._turn(conversation_id, turn_id)
        if not may_claim(turn, queue, staff, now):
            raise refusal(turn, queue, staff, now)
        assert turn is not None
        until = claim_until(now, lifetime)
        self._write(claimed(turn, staff, until), audit_entry("claim", conversation_id, turn_id, queue, staff, now))
        return until

    def release(self, conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime) -> None:
        turn = self._turn(conversation_id, turn_id)
        if not may_release(turn, queue, staff):
            raise refusal(turn, queue, staff, now)
        assert turn is not None
        self._write(released(turn), audit_entry("release", conversation_id, turn_id, queue, staff, now))

    def decide(self, decision: Decision, staff: StaffMember, now: datetime) -> StaffMessage | None:
        conversation_id, turn_id = decision.turn.conversation_id, decision.turn.turn_id
        stored = self._held(conversation_id, turn_id, Queue.REVIEW, staff, now)
        self._write(
            decided(stored, decision.review, staff, now, decision.reason),
            decision_entry(conversation_id, turn_id, staff, now, decision.review, decision.reason),
        )
        self.figures.add(decision_adds(decision.turn, decision.review, now))
        if decision.message is None:
            return None
        return self._post(conversation_id, turn_id, decision.message, now)

    def reply(self, conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime, text: str) -> StaffMessage:
        stored = self._held(conversation_id, turn_id, Queue.HANDOFF, staff, now)
        self._write(stored, audit_entry("reply", conversation_id, turn_id, Queue.HANDOFF, staff, now))
        return self._post(conversation_id, turn_id, text, now)

    def close(self, conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime) -> None:
        stored = self._held(conversation_id, turn_id, Queue.HANDOFF, staff, now)
        self._write(
            closed(stored, staff, now), audit_entry("close", conversation_id, turn_id, Queue.HANDOFF, staff, now)
        )
        self.figures.add(CLOSE_ADDS)
        contact = self.conversations.read_contact(conversation_id)
        if contact is not None and contact.turn_id == turn_id:
            self.conversations.forget_contact(conversation_id)
        record = self.conversations.load_conversation(conversation_id)
        if record is not None and closes_open_handoff(record, turn_id):
            self.conversations.records[conversation_id] = handoff_cleared(record)

    def contact_for_staff(
        self, conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime
    ) -> SealedContact | None:
        contact = self.conversations.read_contact(conversation_id, now)
        if contact is None:
            return None
        stored = self._held(conversation_id, turn_id, Queue.HANDOFF, staff, now)
        self._write(stored, audit_entry("read_contact", conversation_id, turn_id, Queue.HANDOFF, staff, now))
        return contact

    def correct_record(self, correction: RecordCorrection, staff: StaffMember, now: datetime) -> TurnRecord:
        conversation_id, turn_id, queue = correction.conversation_id, correction.turn_id, correction.queue
        before = self.conversations.load_conversation(conversation_id)
        state, turn = correction.applied_to(before)
        assert before is not None
        stored = self._held(conversation_id, turn_id, queue, staff, now)
        entry = correction_entry(conversation_id, turn_id, queue, staff, now, correction.slot, correction.value)
        self._write(stored, entry)
        kept = DialogueState(slots=state.slots, waiting_topic=before.state.waiting_topic, asked=state.asked)
        self.conversations.records[conversation_id] = before.model_copy(
            update={"state": kept, "version": before.version + 1, "turn_count": turn.turn_id, "updated_at": now}
        )
        self.conversations.turns[conversation_id, turn.turn_id] = turn
        return turn

    # --- the pieces -----------------------------------------------------------------------------------------

    def _turn(self, conversation_id: UUID, turn_id: int) -> TurnRecord | None:
        return self.conversations.get_turn(conversation_id, turn_id)

    def _held(self, conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime) -> TurnRecord:
        """The item, where `holds_claim` holds on it; else the clash it meets."""
        turn = self._turn(conversation_id, turn_id)
        if not holds_claim(turn, queue, staff, now):
            raise refusal(turn, queue, staff, now)
        assert turn is not None
        return turn

    def _write(self, turn: TurnRecord, entry: AuditEntry) -> None:
        """The item as changed, and its next audit link (no retention in memory: a day past `at`)."""
        self.conversations.turns[turn.conversation_id, turn.turn_id] = turn
        chain = self.links[entry.conversation_id, entry.turn_id]
        chain.append(
            audit_chain.new_link(
                entry.conversation_id,
                entry.turn_id,
                chain[-1] if chain else None,
                staff=entry.staff,
                action=entry.action,
                queue=str(entry.queue),
                outcome=entry.outcome,
                reason=entry.reason,
                at=entry.at.astimezone(UTC).isoformat(timespec="milliseconds"),
                expires_at=int((entry.at + timedelta(days=1)).timestamp()),
            )
        )

    def _post(self, conversation_id: UUID, turn_id: int, text: str, now: datetime) -> StaffMessage:
        record = self.conversations.load_conversation(conversation_id)
        if record is None:
            raise NotInQueue()
        message = next_staff_message(
            record, self.conversations.staff_message_count(conversation_id), turn_id, text, now
        )
        self.conversations.messages[conversation_id].append(message)
        return message


class MemoryDispatchQueues:
    """dialogue.ports.DispatchQueues in memory: what was sent, in order, as (kind, message, delay)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, ReplyDeadline | RealizeJob, int | None]] = []

    def send_deadline(self, deadline: ReplyDeadline, *, delay_seconds: int) -> None:
        self.sent.append(("deadline", deadline, delay_seconds))

    def send_job(self, job: RealizeJob) -> None:
        self.sent.append(("job", job, None))


class MemoryRealizerWaker:
    """dialogue.ports.RealizerWaker in memory: each wake answers `outcome` and is counted; `cold` as given."""

    def __init__(self, outcome: WakeOutcome = WakeOutcome.WANTED, *, cold: bool = False) -> None:
        self.outcome = outcome
        self.cold = cold
        self.wakes = 0

    def wake(self) -> WakeOutcome:
        self.wakes += 1
        return self.outcome
