"""The outbox: a committed pending TURN, read from the table's stream, goes on to be worded.

The turn API writes one DynamoDB transaction and sends nothing. Each pending TURN insert on the
table's stream (the filter and its check in code: dialogue.aws.turns.PENDING_TURN_INSERTS) reaches the
dispatch function, which sends two messages:

1. a ReplyDeadline to the screen queue, delayed until the turn's reply deadline: when it arrives and
   the turn is still pending, the screen function stores the fixed fallback, so every turn is final
   by its deadline whether the realizer is up or not and whether anyone reads the turn or not;
2. the RealizeJob to the realize queue, built here and only here from the stored turn: its state,
   its action and the pack's approved handbook rows.

The deadline goes first: if the job cannot be sent, the stream delivers the turn again, and the
deadline still finalizes the turn. If neither can be sent for the stream mapping's hour, the record
goes to the dispatch failure queue, and the sweeper (dialogue.sweep) finalizes the turn with the same
fallback. Delivering a turn twice sends both messages twice; the worker and the screen function
finalize a turn once.

Then, once per batch that sent a job still inside its reply deadline (`worth_waking_for`), the
dispatch function wakes the realizer if it rests at zero tasks (dialogue.aws.ecs).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from dialogue.actions import TurnStatus
from dialogue.pack import DomainPack
from dialogue.ports import DispatchQueues
from dialogue.realize import ReplyDeadline, build_realize_job
from dialogue.records import TurnRecord
from dialogue.settings import MAX_REPLY_DEADLINE_SECONDS
from dialogue.state import DialogueState

MAX_SQS_DELAY_SECONDS = MAX_REPLY_DEADLINE_SECONDS
"""SQS holds a message back for at most 15 minutes, so a reply deadline is at most that long."""


def worth_waking_for(turn: TurnRecord, *, now: datetime, reply_deadline: timedelta) -> bool:
    """Whether the turn's job may still be worded: its reply deadline has not passed. A job past it is
    dropped unrun by the realizer (its turn shows the fallback), so it is no reason to start a GPU: a
    redelivered batch or a new stream mapping re-reading the stream's last 24 hours wakes nothing."""
    return now < turn.created_at + reply_deadline


def deadline_delay_seconds(due_at: datetime, now: datetime) -> int:
    """Whole seconds until `due_at`, rounded up so a deadline never arrives early, within SQS's range."""
    remaining = math.ceil((due_at - now).total_seconds())
    return min(max(remaining, 0), MAX_SQS_DELAY_SECONDS)


def dispatch_pending_turn(
    turn: TurnRecord, *, queues: DispatchQueues, pack: DomainPack, now: datetime, reply_deadline: timedelta
) -> None:
    """Send the turn's deadline, then its RealizeJob. Raises QueueUnavailable if either was not sent."""
    if turn.status is not TurnStatus.PENDING or not turn.action.uses_model:
        raise ValueError("only a pending generated turn is dispatched")
    due_at = turn.created_at + reply_deadline
    deadline = ReplyDeadline(
        conversation_id=turn.conversation_id,
        turn_id=turn.turn_id,
        action=turn.action,
        slots=dict(turn.slots),
        due_at=due_at,
    )
    queues.send_deadline(deadline, delay_seconds=deadline_delay_seconds(due_at, now))
    state, _ = DialogueState.read_stored(pack.frame, turn.slots)
    queues.send_job(
        build_realize_job(
            conversation_id=turn.conversation_id,
            turn_id=turn.turn_id,
            state=state,
            action=turn.action,
            pack=pack,
            now=turn.created_at,
            topic=turn.topic,
        )
    )
