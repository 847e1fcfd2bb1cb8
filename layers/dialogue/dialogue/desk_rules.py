"""The staff desk's rules over its items, as plain functions of records and the clock.

Who may claim an item (`may_claim`) and when a claim has expired (`claim_live`), who may release it
(`may_release`), what a decision, a reply, a close, a look at the contact form and a correction of the
record need (`holds_claim`), what each act changes on the item, which clash a refused write means
(`refusal`), and what an audit link records (`AuditEntry`). What the desk's counters add is
dialogue.desk's `decision_adds` and `CLOSE_ADDS`.

A store applies them (dialogue.ports.DeskStore): the DynamoDB adapter (dialogue.aws.queues) as the
conditions of its transactions, so that of two writers racing on one item one is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from dialogue.actions import HandoffStatus, HumanReview, Queue
from dialogue.errors import AlreadyDecided, ClaimedByOther, ClaimRequired, DialogueError, HandoffClosed, NotInQueue
from dialogue.records import ConversationRecord, TurnRecord

if TYPE_CHECKING:
    from dialogue.state import DialogueState


class StaffMember(BaseModel):
    """Who acts: the token's subject (kept in claims and audit items) and, for display, a name."""

    model_config = ConfigDict(frozen=True)

    subject: Annotated[str, Field(min_length=1, max_length=128)]
    name: str | None = None


class DeskCounters(BaseModel):
    """What the figures are read from: the TOTAL counters, the last days' counters (oldest first), and the
    open items of each queue."""

    total: dict[str, int]
    days: list[tuple[date, dict[str, int]]]
    pending_reviews: int
    open_handoffs: int


# --- who may act on an item --------------------------------------------------------------------------


def in_queue(turn: TurnRecord | None, queue: Queue) -> bool:
    return turn is not None and turn.queue is queue


def still_open(turn: TurnRecord, queue: Queue) -> bool:
    """The item still needs work: a review not yet decided, a hand-off not closed."""
    if queue is Queue.REVIEW:
        return turn.human_review is HumanReview.PENDING
    return turn.handoff_status is HandoffStatus.OPEN


def claim_live(turn: TurnRecord, now: datetime) -> bool:
    """The item's claim holds: it has one, and it expires after `now` (at its expiry it has expired)."""
    return turn.claimed_by is not None and turn.claim_expires_at is not None and turn.claim_expires_at > now


def may_claim(turn: TurnRecord | None, queue: Queue, staff: StaffMember, now: datetime) -> bool:
    """A claim (or its renewal) is taken on an open item of `queue` that no one else holds a live claim on."""
    if turn is None or not in_queue(turn, queue) or not still_open(turn, queue):
        return False
    return turn.claimed_by is None or turn.claimed_by == staff.subject or not claim_live(turn, now)


def may_release(turn: TurnRecord | None, queue: Queue, staff: StaffMember) -> bool:
    """A claim is released by its holder only, expired or not, on an item of `queue`."""
    return turn is not None and in_queue(turn, queue) and turn.claimed_by == staff.subject


def holds_claim(turn: TurnRecord | None, queue: Queue, staff: StaffMember, now: datetime) -> bool:
    """What a decision, a reply, a close, a look at the contact form and a correction of the record need:
    the item waits in `queue`, still needs work, and `staff` holds a live claim on it."""
    if turn is None or not in_queue(turn, queue) or not still_open(turn, queue):
        return False
    return turn.claimed_by == staff.subject and claim_live(turn, now)


def refusal(turn: TurnRecord | None, queue: Queue, staff: StaffMember, now: datetime) -> DialogueError:
    """Which clash a refused write on an item met, from the item as read after it: not in the queue, decided
    or closed already, claimed by someone else, or (else) not claimed by `staff` any more."""
    if turn is None or not in_queue(turn, queue):
        return NotInQueue()
    if queue is Queue.REVIEW and turn.human_review is not HumanReview.PENDING:
        return AlreadyDecided()
    if queue is Queue.HANDOFF and turn.handoff_status is HandoffStatus.CLOSED:
        return HandoffClosed()
    if claim_live(turn, now) and turn.claimed_by != staff.subject:
        return ClaimedByOther()
    return ClaimRequired()


# --- what each act changes on the item ---------------------------------------------------------------


def claim_until(now: datetime, lifetime: timedelta) -> datetime:
    """When a claim taken at `now` expires: `lifetime` later, in UTC, to the millisecond (as stores keep times)."""
    until = (now + lifetime).astimezone(UTC)
    return until.replace(microsecond=until.microsecond // 1000 * 1000)


def claimed(turn: TurnRecord, staff: StaffMember, until: datetime) -> TurnRecord:
    """The item claimed by `staff` until `until`, with their display name (none where the sign-in gave none)."""
    update = {"claimed_by": staff.subject, "claimed_by_name": staff.name, "claim_expires_at": until}
    return turn.model_copy(update=update)


def released(turn: TurnRecord) -> TurnRecord:
    """The item without its claim: what a release, a decision and a close leave."""
    return turn.model_copy(update={"claimed_by": None, "claimed_by_name": None, "claim_expires_at": None})


def decided(turn: TurnRecord, review: HumanReview, staff: StaffMember, now: datetime, reason: str | None) -> TurnRecord:
    """A review item after its decision: the review, who decided and when, the reason code (when given);
    its claim ended."""
    update: dict[str, object] = {"human_review": review, "decided_by": staff.subject, "decided_at": now}
    if reason is not None:
        update["decision_reason"] = reason
    return released(turn).model_copy(update=update)


def closed(turn: TurnRecord, staff: StaffMember, now: datetime) -> TurnRecord:
    """A hand-off item after its close: closed, by whom and when; its claim ended."""
    update = {"handoff_status": HandoffStatus.CLOSED, "decided_by": staff.subject, "decided_at": now}
    return released(turn).model_copy(update=update)


def closes_open_handoff(record: ConversationRecord | None, turn_id: int) -> bool:
    """A close of item `turn_id` clears the conversation's open hand-off when it is that item (and moves the
    state's version on, so a resident's turn that read it open is written again: dialogue.handoffs)."""
    return record is not None and record.open_handoff == turn_id


def handoff_cleared(record: ConversationRecord) -> ConversationRecord:
    """The conversation after its open hand-off closed: none open, its version moved on."""
    return record.model_copy(update={"open_handoff": None, "version": record.version + 1})


# --- the acts that carry more than an item -------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """A decision on a review item, as the staff API made it: `turn`, the item as read (its screens,
    fallback and queue time, set once when it was queued, are what the counters add: dialogue.desk's
    `decision_adds`); the review and its reason code; the message it posts to the resident (a correction or
    the approved draft, dialogue.desk's `message_for_decision`; None: nothing is posted); and whether the
    turn's REPLY item is kept (read with the draft), so that its retention runs from the decision."""

    turn: TurnRecord
    review: HumanReview
    reason: str | None = None
    message: str | None = None
    reply_kept: bool = False


@dataclass(frozen=True)
class RecordCorrection:
    """A correction of a conversation's record from an item of `queue`: one slot set to one value (the
    pack's names), and `correct`, which turns the record as read into the corrected state and the turn
    that records it (dialogue.desk's `corrected_record`)."""

    conversation_id: UUID
    turn_id: int
    queue: Queue
    slot: str
    value: str
    correct: Callable[[ConversationRecord], tuple[DialogueState, TurnRecord]]

    def applied_to(self, before: ConversationRecord | None) -> tuple[DialogueState, TurnRecord]:
        """The corrected state and the turn that records it, from the record as read: NotInQueue where the
        conversation is gone; the turn is the conversation's next."""
        if before is None:
            raise NotInQueue()
        state, turn = self.correct(before)
        assert turn.turn_id == before.turn_count + 1
        return state, turn


# --- the audit -----------------------------------------------------------------------------------------

AuditAction = Literal["claim", "release", "decision", "reply", "close", "read_contact", "correct_record"]


@dataclass(frozen=True)
class AuditEntry:
    """What one audit link records: who (the staff subject), when, what, on which item. Never text: a
    decision keeps its review as the outcome and its reason code as the reason; a correction of the record
    keeps the value as its outcome and the slot as its reason (the pack's names)."""

    conversation_id: UUID
    turn_id: int
    queue: Queue
    staff: str
    action: AuditAction
    at: datetime
    outcome: str | None = None
    reason: str | None = None


def audit_entry(
    action: AuditAction, conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime
) -> AuditEntry:
    """The link of a claim, a release, a reply, a close or a look at the contact form."""
    return AuditEntry(conversation_id, turn_id, queue, staff.subject, action, now)


def decision_entry(
    conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime, review: HumanReview, reason: str | None
) -> AuditEntry:
    return AuditEntry(conversation_id, turn_id, Queue.REVIEW, staff.subject, "decision", now, str(review), reason)


def correction_entry(
    conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime, slot: str, value: str
) -> AuditEntry:
    return AuditEntry(conversation_id, turn_id, queue, staff.subject, "correct_record", now, value, slot)
