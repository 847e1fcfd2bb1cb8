"""What the dialogue core asks of the outside world, as Protocols, and the values they exchange.

The core (understanding, state, policy, screens, the desk's rules, replies) imports no AWS library.
It takes a store, queues and a waker that fit these Protocols, and the staff API a desk store
(`DeskStore`); `dialogue.aws` holds the adapters that do so on DynamoDB, SQS and ECS, and tests and
devstack may pass their own.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from dialogue.actions import Queue
from dialogue.audit_chain import LinkKey
from dialogue.desk_rules import Decision, DeskCounters, RecordCorrection, StaffMember
from dialogue.records import ConversationRecord, Draft, ScreenOutcome, TurnRecord
from dialogue.state import DialogueState

if TYPE_CHECKING:
    from dialogue.realize import RealizeJob, ReplyDeadline


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


@dataclass(frozen=True)
class SealedContact:
    """A conversation's CONTACT item (dialogue.contact): the detail and note sealed with the stack's key,
    and what staff may know without opening it. Never user text in the clear."""

    sealed: bytes
    channel: str
    has_detail: bool
    has_note: bool
    left_at: datetime
    expires_at: datetime
    turn_id: int | None = None  # as read back: the hand-off turn that was written with it


@dataclass(frozen=True)
class TurnCommit:
    """One turn's write: the conversation as read (`before`; its version is the write's condition), the
    state after the turn, the turn, the request's idempotency key (None: none was sent) and the contact
    form the turn leaves (None: none)."""

    before: ConversationRecord
    after: DialogueState
    turn: TurnRecord
    request_key: str | None = None
    contact: SealedContact | None = None

    def record_after(self) -> ConversationRecord:
        """The conversation's record once the turn is written: the new state, the next version, the turn
        count and time, and the open hand-off the turn opens (else the one before)."""
        before, turn = self.before, self.turn
        return before.model_copy(
            update={
                "state": self.after,
                "version": before.version + 1,
                "turn_count": turn.turn_id,
                "updated_at": turn.created_at,
                "open_handoff": turn.turn_id if turn.opens_handoff else before.open_handoff,
            }
        )


@dataclass(frozen=True)
class PageQuery:
    """Which page of a desk queue to read: `queue`'s items, newest or oldest queued first, at most `limit`,
    from `cursor` (the previous page's next cursor; None: the first page), and only those whose fields
    equal `where`'s values."""

    queue: Queue
    newest_first: bool = False
    limit: int = 100
    cursor: str | None = None
    where: Mapping[str, str | bool] | None = None


class ConversationStore(Protocol):
    def create_conversation(self, record: ConversationRecord) -> None: ...

    def load_conversation(self, conversation_id: UUID) -> ConversationRecord | None: ...

    def commit_turn(self, commit: TurnCommit) -> Committed: ...

    def read_contact(self, conversation_id: UUID) -> SealedContact | None: ...

    def turn_of_request(self, conversation_id: UUID, request_key: str) -> int | None: ...

    def get_turn(self, conversation_id: UUID, turn_id: int) -> TurnRecord | None: ...

    def get_reply(self, conversation_id: UUID, turn_id: int) -> str | None: ...

    def staff_message_count(self, conversation_id: UUID) -> int: ...

    def turns_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[tuple[TurnRecord, str | None]]: ...

    def staff_messages_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[StaffMessage]: ...

    def record_screened_reply(
        self, conversation_id: UUID, turn_id: int, outcome: ScreenOutcome, now: datetime
    ) -> bool: ...


class DeskStore(Protocol):
    """The staff desk's store: its queues and items, the acts on them (each checked against the desk's
    rules, dialogue.desk_rules, and audited with them in one write), the audit and the figures.

    The rules named below are dialogue.desk_rules'. An act refused by them raises the clash it met
    (`refusal`): NotInQueue, AlreadyDecided, HandoffClosed, ClaimedByOther or ClaimRequired; a store that
    can race another writer raises StaffWriteConflict when one came first."""

    @property
    def conversations(self) -> ConversationStore:
        """The conversations the items belong to (what the resident was shown is read from it)."""
        ...

    def queue_page(self, query: PageQuery) -> tuple[list[TurnRecord], str | None]:
        """One page of a queue, and the cursor of the next (None: no more). ValueError for a cursor the
        store did not give."""
        ...

    def queued_turn(self, conversation_id: UUID, turn_id: int, queue: Queue) -> TurnRecord:
        """The item `turn_id` of `queue`, or NotInQueue."""
        ...

    def drafts(self, turns: Sequence[TurnRecord]) -> dict[tuple[UUID, int], tuple[str | None, Draft | None]]:
        """Each turn's reply shown and the draft the screens judged, by (conversation, turn), where kept."""
        ...

    def read_contact(self, conversation_id: UUID, now: datetime) -> SealedContact | None:
        """The conversation's sealed contact form, unless there is none or it expired by `now`."""
        ...

    def contact_for_staff(
        self, conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime
    ) -> SealedContact | None:
        """The sealed contact form, for `staff` on a hand-off item they hold (`holds_claim`), the look
        audited; None (nothing audited) where there is none or it expired."""
        ...

    def claim(
        self, conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime, lifetime: timedelta
    ) -> datetime:
        """Take or renew the item's claim (`may_claim`); returns when it expires (`claim_until`)."""
        ...

    def release(self, conversation_id: UUID, turn_id: int, queue: Queue, staff: StaffMember, now: datetime) -> None:
        """End the item's claim (`may_release`)."""
        ...

    def decide(self, decision: Decision, staff: StaffMember, now: datetime) -> StaffMessage | None:
        """Decide a review item (`holds_claim`, then `decided`), adding to the counters (`desk.decision_adds`
        of the item as read) and posting the decision's message (when it has one) to the resident; returns
        the message posted."""
        ...

    def reply(self, conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime, text: str) -> StaffMessage:
        """Post a staff message on a hand-off item (`holds_claim`; `desk.next_staff_message`)."""
        ...

    def close(self, conversation_id: UUID, turn_id: int, staff: StaffMember, now: datetime) -> None:
        """Close a hand-off item (`holds_claim`, then `closed`; `desk.CLOSE_ADDS`), forgetting the contact form
        it holds and clearing the conversation's open hand-off where it is this item (`closes_open_handoff`)."""
        ...

    def correct_record(self, correction: RecordCorrection, staff: StaffMember, now: datetime) -> TurnRecord:
        """Write the state and turn the correction's `correct` makes of the conversation as read, from an item
        `staff` holds (`holds_claim`); returns the turn written."""
        ...

    def audit_trail(self, conversation_id: UUID, turn_id: int) -> list[dict[str, Any]]:
        """One item's audit links, oldest first."""
        ...

    def turn_copies(self, conversation_id: UUID, turn_id: int) -> tuple[dict[LinkKey, bytes], set[LinkKey]] | None:
        """One item's write-once copies of its links and the copies written more than once; None where
        there are no copies to compare with."""
        ...

    def desk_counters(self) -> DeskCounters:
        """The desk's counters and its open work, what dialogue.desk's figures are read from."""
        ...


class DispatchQueues(Protocol):
    def send_deadline(self, deadline: ReplyDeadline, *, delay_seconds: int) -> None: ...

    def send_job(self, job: RealizeJob) -> None: ...


class WakeOutcome(StrEnum):
    WANTED = "wanted"  # the service already wanted a task (ECS said so, or said so under a minute ago)
    WOKEN = "woken"  # it wanted none; its desired count is now 1
    FAILED = "failed"  # ECS could not be asked or refused; the wake alarm remains
    OFF = "off"  # its scalable target's maximum is 0 (the off switch): not woken


class RealizerWaker(Protocol):
    cold: bool
    """After `wake`: the realizer had no task running (woken, starting, or switched off)."""

    def wake(self) -> WakeOutcome:
        """Make sure the realizer wants at least one task, unless it is switched off. Never raises."""
        ...
