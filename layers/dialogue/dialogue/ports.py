"""What the dialogue core asks of the outside world, as Protocols, and the values they exchange.

The core (understanding, state, policy, screens, the desk's rules, replies) imports no AWS library.
It takes a store, queues and a waker that fit these Protocols; `dialogue.aws` holds the adapters that
do so on DynamoDB, SQS and ECS, and tests and devstack may pass their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, NamedTuple, Protocol
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from dialogue.records import ConversationRecord, ScreenOutcome, TurnRecord
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


class Thread(BaseModel):
    """A conversation's turns (in order), the generated turns' replies by turn id, and its staff messages."""

    turns: list[TurnRecord] = Field(default_factory=list)
    replies: dict[int, str] = Field(default_factory=dict)
    staff: list[StaffMessage] = Field(default_factory=list)


class ConversationStore(Protocol):
    def create_conversation(self, record: ConversationRecord) -> None: ...

    def load_conversation(self, conversation_id: UUID) -> ConversationRecord | None: ...

    def commit_turn(
        self,
        before: ConversationRecord,
        after: DialogueState,
        turn: TurnRecord,
        *,
        request_key: str | None = None,
        contact: SealedContact | None = None,
    ) -> Committed: ...

    def read_contact(self, conversation_id: UUID) -> SealedContact | None: ...

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
