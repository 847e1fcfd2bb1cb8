"""The sweeper: no turn waits forever.

A generated turn is finalized by its screened reply or, at its deadline, by the deadline message the
dispatch function sent. Three faults leave it pending with neither: the dispatch fails for longer than
the stream mapping keeps a record (an hour), so no deadline was ever sent; the deadline message fails
five times and rests in the screen queue's DLQ; or the deadline could not be read after a pack change.
A scheduled function (EventBridge Scheduler, every few minutes) sweeps them: it reads the turns still
pending past their deadline plus a grace from the sparse pending-turn index (dialogue.aws.turns) and
stores the same fixed fallback the deadline would have, counted, so an alarm sees each one. A turn is
therefore final within `reply deadline + grace + the schedule's interval`, a turn that has outlived the pack
included (tests/unit/test_stale_turns.py), unless more than SWEEP_LIMIT turns are overdue at once (the rest
wait for the next runs) or storing its fallback fails (the store unreachable): then it is reported, and
every run tries it again until one succeeds.

Each turn is finalized on its own. A turn that has outlived the pack (its action or slot values gone since
it was stored: dialogue.replies.outlives_pack) gets the desk's generic fallback and is counted (`stale`). A
turn that fails in any other way is reported by its ids and the error's type, and the sweep goes on: the
turns are read oldest first, so one turn that failed every run would otherwise hold every overdue turn
behind it pending until the table's TTL. A sweep with a failed turn is not complete, and the next run
tries it again.

The dispatch failure queue holds the stream batches the dispatch function gave up on: only shard ids
and sequence numbers, each batch an hour old when it arrives, so every turn in it is past its
deadline. Once a sweep has finalized every overdue turn, each of those turns is final, and the sweeper
clears the queue (counting what it cleared) so the alarm on it rests until the next failure.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

from pydantic import BaseModel, Field

from dialogue.pack import DomainPack
from dialogue.realize import ReplyDeadline
from dialogue.records import ScreenOutcome, TurnRecord
from dialogue.replies import outlives_pack
from dialogue.screens import deadline_outcome
from dialogue.state import DialogueState

SWEEP_PAGE = 100
"""Overdue turns read per query of the pending-turn index."""
SWEEP_LIMIT = 1000
"""Turns one sweep finalizes at most; the rest wait for the next run (a backlog that large is an outage,
and the alarm has already fired)."""


class PendingTurns(Protocol):
    def overdue_turns(
        self, created_before: datetime, *, limit: int, after: str | None = None
    ) -> tuple[list[TurnRecord], str | None]: ...

    def record_screened_reply(
        self, conversation_id: UUID, turn_id: int, outcome: ScreenOutcome, now: datetime
    ) -> bool: ...


class FailedTurn(BaseModel):
    """An overdue turn the sweep could not finalize: its ids and the error's type, never its message."""

    conversation_id: UUID
    turn_id: int
    error: str


class SweepResult(BaseModel):
    """What one sweep did: turns it finalized with the fallback, overdue turns another path finalized
    first, slot values a pack change no longer allows, the finalized turns that had outlived the pack
    (`stale`: given the generic fallback), the turns it failed on (`failed`, each in `failures`), and
    whether it finalized every overdue turn (False: it stopped at SWEEP_LIMIT, or failed on a turn)."""

    finalized: int = 0
    already_final: int = 0
    unreadable_values: int = 0
    stale: int = 0
    failed: int = 0
    complete: bool = True
    failures: list[FailedTurn] = Field(default_factory=list)


def _overdue(store: PendingTurns, created_before: datetime) -> Iterator[TurnRecord]:
    cursor: str | None = None
    while True:
        turns, cursor = store.overdue_turns(created_before, limit=SWEEP_PAGE, after=cursor)
        yield from turns
        if cursor is None:
            return


def sweep_overdue_turns(
    store: PendingTurns,
    pack: DomainPack,
    *,
    now: datetime,
    reply_deadline: timedelta,
    grace: timedelta,
    limit: int = SWEEP_LIMIT,
) -> SweepResult:
    """Store the deadline's fixed fallback on every turn still pending `grace` after its deadline, each on
    its own: a turn that fails is reported in the result, and the sweep goes on to the next."""
    result = SweepResult()
    for seen, turn in enumerate(_overdue(store, now - reply_deadline - grace)):
        if seen >= limit:
            result.complete = False
            break
        try:
            _finalize(store, pack, turn, result, now=now, reply_deadline=reply_deadline)
        except Exception as error:  # any one turn's failure, whatever it is, must not stop the others
            result.failed += 1
            result.complete = False
            result.failures.append(
                FailedTurn(conversation_id=turn.conversation_id, turn_id=turn.turn_id, error=type(error).__name__)
            )
    return result


def _finalize(
    store: PendingTurns,
    pack: DomainPack,
    turn: TurnRecord,
    result: SweepResult,
    *,
    now: datetime,
    reply_deadline: timedelta,
) -> None:
    """Store the fallback the turn's deadline would have stored, and count it in `result`."""
    _, unreadable = DialogueState.read_stored(pack.frame, turn.slots)
    deadline = ReplyDeadline(
        conversation_id=turn.conversation_id,
        turn_id=turn.turn_id,
        action=turn.action,  # type: ignore[arg-type]  # a pending turn's action is a model action
        slots=dict(turn.slots),
        due_at=turn.created_at + reply_deadline,
    )
    if store.record_screened_reply(turn.conversation_id, turn.turn_id, deadline_outcome(deadline, pack), now):
        result.finalized += 1
        result.unreadable_values += len(unreadable)
        if outlives_pack(turn.action, turn.slots, pack):
            result.stale += 1
    else:
        result.already_final += 1
