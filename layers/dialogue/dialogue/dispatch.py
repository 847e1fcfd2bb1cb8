"""The outbox: a committed pending TURN, read from the table's stream, goes on to be worded.

The turn API writes one DynamoDB transaction and sends nothing. Each pending TURN insert on the
table's stream (the filter and its check in code: dialogue.aws.turns.PENDING_TURN_INSERTS) reaches the
dispatch function, which sends two messages:

1. a ReplyDeadline to the screen queue, delayed until the turn's reply deadline: when it arrives and
   the turn is still pending, the screen function stores the fixed fallback, so a turn is final by
   its deadline whether the realizer is up or not and whether anyone reads the turn or not (unless this
   message is itself never sent or never handled: then the sweeper ends the turn, below);
2. the RealizeJob to the realize queue, built here and only here from the stored turn: its state,
   its action and the pack's approved handbook rows.

The job is built before anything is sent. Building it is a pure function of the stored turn and the
pack, so a job the pack cannot build (a turn stored before a deploy changed the pack: its topic gone)
would fail on every one of the stream's retries, each sending the deadline again, and hold up the
turns behind it on its shard for the stream's hour. Such a turn, and one that has outlived the pack
(its action or slot values gone: dialogue.replies.outlives_pack, which no model could word), is sent
its deadline alone and not retried: the deadline's fallback ends it (the generic one for a stale turn).

The deadline goes first: if the job cannot be sent, the stream delivers the turn again, and the
deadline still finalizes the turn. If neither can be sent for the stream mapping's hour, the record
goes to the dispatch failure queue, and the sweeper (dialogue.sweep) finalizes the turn with the same
fallback. Delivering a turn twice sends both messages twice (SQS's standard queues have no send once,
and a FIFO queue no per-message delay), but the deadline is the same message each time (the turn's
ids, action and slots, due from its creation): the first to arrive finalizes a pending turn, and the
screen function drops any other as "turn already final"; the worker and the screen function finalize
a turn once.

Then, once per batch that sent a job still inside its reply deadline (`worth_waking_for`), the
dispatch function wakes the realizer if it rests at zero tasks (dialogue.aws.ecs), unless it is switched
off. A turn that found it cold (no task running yet, or switched off) is not left to wait for a reply that
cannot come in time: a second deadline, marked cold and due `cold_fallback` after the turn (a few
seconds), is sent for it (`send_cold_deadline`), and the screen function stores the fallback with the
desk's line that a person will check it (dialogue.screens); the turn's own deadline then finds it final.
Its job was sent all the same: it is the activity that keeps a starting realizer from being called idle,
and the worker drops it unrun once past its deadline. Sent after the batch, the cold deadline costs the
batch nothing: a wake or a send that fails or finds no time left leaves the turn its own deadline.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from dialogue.actions import TurnStatus
from dialogue.pack import DomainPack
from dialogue.ports import DispatchQueues
from dialogue.realize import ReplyDeadline, build_realize_job
from dialogue.records import TurnRecord
from dialogue.replies import outlives_pack
from dialogue.settings import MAX_REPLY_DEADLINE_SECONDS
from dialogue.state import DialogueState

MAX_SQS_DELAY_SECONDS = MAX_REPLY_DEADLINE_SECONDS
"""SQS holds a message back for at most 15 minutes, so a reply deadline is at most that long."""

STALE_TURN = "stale turn"
"""Why a turn's job was withheld when the turn has outlived the pack (dialogue.replies.outlives_pack)."""


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
    turn: TurnRecord,
    *,
    queues: DispatchQueues,
    pack: DomainPack,
    now: datetime,
    reply_deadline: timedelta,
    reply_queue_url: str | None = None,
) -> str | None:
    """Build the turn's RealizeJob, then send its deadline and the job. Returns None, or why the job was
    withheld and the deadline sent alone: STALE_TURN, or the type of the error building it raised (never
    its message). Raises QueueUnavailable if a message was not sent. `reply_queue_url`: the desk's own
    screen queue, named in the job when the realizer is another stack's (SHARED_REALIZER); None, the
    realizer answers to its own screen queue."""
    if turn.status is not TurnStatus.PENDING or not turn.action.uses_model:
        raise ValueError("only a pending generated turn is dispatched")
    job, withheld = None, None
    if outlives_pack(turn.action, turn.slots, pack):
        withheld = STALE_TURN
    else:
        try:
            job = build_realize_job(
                conversation_id=turn.conversation_id,
                turn_id=turn.turn_id,
                state=DialogueState.from_slots(pack.frame, turn.slots),
                action=turn.action,
                pack=pack,
                now=turn.created_at,
                topic=turn.topic,
                reply_queue_url=reply_queue_url,
            )
        except Exception as error:  # deterministic: no retry of the same turn and pack would build it
            withheld = type(error).__name__
    _send_deadline(turn, queues=queues, now=now, due_at=turn.created_at + reply_deadline)
    if job is not None:
        queues.send_job(job)
    return withheld


def send_cold_deadline(
    turn: TurnRecord, *, queues: DispatchQueues, now: datetime, reply_deadline: timedelta, cold_fallback: timedelta
) -> None:
    """For a turn that found the realizer cold: a deadline marked cold, due `cold_fallback` after the turn
    (never later than its own deadline). The first deadline to arrive finalizes the turn; the other finds
    it final. Raises QueueUnavailable if it was not sent."""
    due_at = turn.created_at + min(cold_fallback, reply_deadline)
    _send_deadline(turn, queues=queues, now=now, due_at=due_at, realizer_cold=True)


def _send_deadline(
    turn: TurnRecord, *, queues: DispatchQueues, now: datetime, due_at: datetime, realizer_cold: bool = False
) -> None:
    """The turn's reply deadline, due at `due_at`, delayed on the queue until then (as far as SQS allows)."""
    deadline = ReplyDeadline(
        conversation_id=turn.conversation_id,
        turn_id=turn.turn_id,
        action=turn.action,
        slots=dict(turn.slots),
        due_at=due_at,
        realizer_cold=realizer_cold,
    )
    queues.send_deadline(deadline, delay_seconds=deadline_delay_seconds(due_at, now))
