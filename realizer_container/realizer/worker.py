"""The SQS worker loop: collect RealizeJobs into a batch, realize it, send RealizedReplies, delete.

One cycle (`poll_once`):

1. Collect. The first receive long-polls `wait_seconds`; once a message has arrived, further receives
   top the batch up until `batch_size` messages, `max_batch_wait_seconds`, or a receive that comes back
   empty. The top-ups are short polls (`fill_wait_seconds`, FILL_WAIT_SECONDS: WaitTimeSeconds 0): they
   take what is already waiting and return at once, so a lone job's batch starts when it arrives, not a
   second later (a 1 s top-up wait was most of the gap between issue 42's 5 s p95 goal and the fleet
   simulation's 5.7 s). Jobs that arrive while a batch is worded wait for the next one. Bodies that are
   not a valid RealizeJob are left alone: never deleted, so past the queue's maxReceiveCount they move
   to the dead-letter queue. Messages that carry the same job_id are realized once.
2. Realize the batch with the engine, in one call. While it runs (from the first receive on) a
   heartbeat thread extends the visibility of the messages in flight by `visibility_timeout` every
   `visibility_timeout / 2` seconds. If the engine raises, nothing is sent or deleted: the messages go
   back to the queue, visible again after `retry_delay_seconds` (not the long visibility timeout, which
   would outlast the reply deadline); past maxReceiveCount a job that always fails reaches the DLQ.
3. Send the replies to the screen queue (`send_message_batch`, 10 a call), or, for a job that names its
   desk's reply queue (a realizer shared by many desks), to that queue, then delete exactly the
   messages whose reply was accepted, duplicates included (`delete_message_batch`). A job whose reply
   failed to send goes back to the queue the same way, for a retry.

`run(should_stop)` repeats the cycle until `should_stop()` is true. A stop seen while a batch is being
collected hands the received messages back (visibility 0); a stop seen while the engine runs lets the
batch finish, be answered and deleted. Logs carry ids and counts, never a message body or any text.

A job whose reply queue is neither the realizer's own screen queue nor on its allowed list
(`reply_queue_arns`, the template's SharedRealizerReplyQueueArns) is deleted unrun and counted
(`refused`): the task role could not send there anyway, and retrying it would only reach the DLQ.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from dialogue.clock import system_time
from dialogue.realize import Realization, RealizedReply, RealizeJob
from realizer.engines import Engine
from realizer.logs import log

if TYPE_CHECKING:
    from mypy_boto3_sqs.client import SQSClient
    from mypy_boto3_sqs.type_defs import (
        ChangeMessageVisibilityBatchRequestEntryTypeDef,
        DeleteMessageBatchRequestEntryTypeDef,
        MessageTypeDef,
        SendMessageBatchRequestEntryTypeDef,
    )
else:
    SQSClient = Any


SQS_BATCH_LIMIT = 10
"""Entries per SendMessageBatch / DeleteMessageBatch / ChangeMessageVisibilityBatch call."""

FILL_WAIT_SECONDS = 0
"""WaitTimeSeconds of the receives that top up a batch once its first job has arrived: 0, a short poll
that never waits for more (devstack.fleet models the worker with it)."""

SQS_BATCH_BYTES = 256 * 1024
"""Payload cap of one SendMessageBatch call (the long-standing SQS limit; newer queues allow more)."""

T = TypeVar("T")


def _never() -> bool:
    return False


def _chunks(items: Sequence[T], size: int = SQS_BATCH_LIMIT) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _where(exc: BaseException) -> str:
    """Where an exception was raised, as `file:line in function`: code locations, never its message."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "unknown"
    frame = frames[-1]
    return f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}"


@dataclass
class _Received:
    """One valid message of the batch."""

    message_id: str
    receipt_handle: str
    job: RealizeJob


@dataclass
class _Batch:
    """What one collection gathered: valid messages in arrival order, and how many receives it took."""

    received: list[_Received] = field(default_factory=list)
    invalid_handles: list[str] = field(default_factory=list)
    receives: int = 0

    @property
    def message_count(self) -> int:
        return len(self.received) + len(self.invalid_handles)

    def groups(self) -> list[list[_Received]]:
        """The messages grouped by job_id, in order of first arrival; the first of a group is answered."""
        grouped: dict[str, list[_Received]] = {}
        for item in self.received:
            grouped.setdefault(item.job.job_id, []).append(item)
        return list(grouped.values())


def change_visibility(client: SQSClient, queue_url: str, handles: Sequence[str], timeout: int) -> int:
    """Set the visibility timeout of `handles` (10 a call). Returns how many entries failed."""
    failed = 0
    for chunk in _chunks(handles):
        entries: list[ChangeMessageVisibilityBatchRequestEntryTypeDef] = [
            {"Id": f"v{index}", "ReceiptHandle": handle, "VisibilityTimeout": timeout}
            for index, handle in enumerate(chunk)
        ]
        try:
            response = client.change_message_visibility_batch(QueueUrl=queue_url, Entries=entries)
        except Exception as exc:  # the next heartbeat, or the queue's own timeout, covers it
            log.warning("visibility change failed", extra={"error": type(exc).__name__, "messages": len(chunk)})
            failed += len(chunk)
            continue
        for entry in response.get("Failed", []):
            failed += 1
            log.warning("visibility change refused", extra={"code": entry.get("Code"), "entry": entry.get("Id")})
    return failed


class VisibilityHeartbeat:
    """Keeps the messages of a batch in flight: every `interval` seconds, extends them by `timeout`."""

    def __init__(self, client: SQSClient, queue_url: str, *, timeout: int, interval: float) -> None:
        self._client = client
        self._queue_url = queue_url
        self._timeout = timeout
        self._interval = interval
        self._handles: list[str] = []
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.extensions = 0

    def track(self, handles: Sequence[str]) -> None:
        with self._lock:
            self._handles.extend(handles)

    def forget(self, handles: Sequence[str]) -> None:
        gone = set(handles)
        with self._lock:
            self._handles = [handle for handle in self._handles if handle not in gone]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="realizer-visibility", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            with self._lock:
                handles = list(self._handles)
            if handles:
                change_visibility(self._client, self._queue_url, handles, self._timeout)
                self.extensions += 1
                log.info("visibility extended", extra={"messages": len(handles), "seconds": self._timeout})


class RealizerWorker:
    def __init__(
        self,
        client: SQSClient,
        *,
        realize_queue_url: str,
        screen_queue_url: str,
        engine: Engine,
        batch_size: int = 32,
        wait_seconds: int = 20,
        max_batch_wait_seconds: float = 2.0,
        fill_wait_seconds: int = FILL_WAIT_SECONDS,
        visibility_timeout: int = 300,
        heartbeat_interval: float | None = None,
        health_file: str | Path | None = None,
        retry_delay_seconds: int = 5,
        stale_after: timedelta | None = None,
        clock: Callable[[], datetime] = system_time,
        reply_queue_arns: Sequence[str] = (),
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if not 0 <= wait_seconds <= 20:
            raise ValueError("wait_seconds must be between 0 and 20")
        if visibility_timeout < 1:
            raise ValueError("visibility_timeout must be at least 1 second")
        if retry_delay_seconds < 0:
            raise ValueError("retry_delay_seconds must not be negative")
        self._client = client
        self._realize_queue_url = realize_queue_url
        self._screen_queue_url = screen_queue_url
        self._engine = engine
        self._batch_size = batch_size
        self._wait_seconds = wait_seconds
        self._max_batch_wait = max(0.0, max_batch_wait_seconds)
        # Top-up receives never wait longer than the first one: with wait_seconds=0 (tests, devstack)
        # every receive is a short poll and an empty queue ends the cycle at once.
        self._fill_wait = max(0, min(fill_wait_seconds, wait_seconds))
        self._visibility_timeout = visibility_timeout
        self._retry_delay = min(retry_delay_seconds, visibility_timeout)
        self._heartbeat_interval = heartbeat_interval if heartbeat_interval else visibility_timeout / 2
        self._health_file = Path(health_file) if health_file else None
        self._should_stop: Callable[[], bool] = _never
        self.last_cycle_ok = True
        # A job older than this (its turn's reply deadline) is dropped unrun: its turn already shows the
        # fallback, so wording it would spend the GPU on a reply no one is shown. None: never drop.
        self._stale_after = stale_after
        self._clock = clock
        self.stale_dropped = 0
        # The desks' reply queues this realizer may answer to, besides its own screen queue.
        self._reply_queues = frozenset(key for arn in reply_queue_arns if (key := queue_key_of_arn(arn)))
        self.refused = 0

    # --- one cycle --------------------------------------------------------------------------------

    def poll_once(self) -> int:
        """One collect → realize → send → delete cycle. Returns how many jobs were handled: answered, or
        dropped unrun as stale (`stale_after`)."""
        self.last_cycle_ok = True
        heartbeat = VisibilityHeartbeat(
            self._client, self._realize_queue_url, timeout=self._visibility_timeout, interval=self._heartbeat_interval
        )
        try:
            batch = self._collect(heartbeat)
            if batch is None or not batch.received:
                return 0
            return self._realize(batch, heartbeat)
        finally:
            heartbeat.stop()

    def _receive(self, max_messages: int, wait_seconds: int) -> list[MessageTypeDef]:
        response = self._client.receive_message(
            QueueUrl=self._realize_queue_url,
            MaxNumberOfMessages=max_messages,
            WaitTimeSeconds=wait_seconds,
            MessageSystemAttributeNames=["ApproximateReceiveCount"],
        )
        return response.get("Messages", [])

    def _collect(self, heartbeat: VisibilityHeartbeat) -> _Batch | None:
        """Receive until the batch is full, the batch window closes or the queue is empty.

        Returns None when a stop was requested during collection; the messages received so far are then
        made visible again.
        """
        batch = _Batch()
        deadline = 0.0
        while batch.message_count < self._batch_size:
            first = batch.receives == 0
            if first:
                wait = self._wait_seconds
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                wait = min(self._fill_wait, int(remaining))
            messages = self._receive(min(SQS_BATCH_LIMIT, self._batch_size - batch.message_count), wait)
            batch.receives += 1
            if first:
                if not messages:
                    return batch
                deadline = time.monotonic() + self._max_batch_wait
                heartbeat.start()
            for message in messages:
                self._accept(message, batch, heartbeat)
            if self._should_stop():
                heartbeat.stop()
                handles = [item.receipt_handle for item in batch.received] + batch.invalid_handles
                change_visibility(self._client, self._realize_queue_url, handles, 0)
                log.info("stopping: batch returned to the queue", extra={"messages": len(handles)})
                return None
            if not messages:
                break
        log.info(
            "batch collected",
            extra={"messages": batch.message_count, "invalid": len(batch.invalid_handles), "receives": batch.receives},
        )
        return batch

    def _accept(self, message: MessageTypeDef, batch: _Batch, heartbeat: VisibilityHeartbeat) -> None:
        message_id = str(message.get("MessageId", ""))
        handle = str(message["ReceiptHandle"])
        try:
            job = RealizeJob.model_validate_json(message.get("Body", ""))
        except ValidationError as exc:
            # Left on the queue, not extended: after maxReceiveCount receives it moves to the DLQ.
            # Only the id and the error count are logged: never the body, nor the validation message.
            batch.invalid_handles.append(handle)
            log.warning(
                "realize job rejected",
                extra={
                    "message_id": message_id,
                    "errors": exc.error_count(),
                    "receive_count": message.get("Attributes", {}).get("ApproximateReceiveCount"),
                },
            )
            return
        batch.received.append(_Received(message_id=message_id, receipt_handle=handle, job=job))
        heartbeat.track([handle])

    def _drop_stale(self, batch: _Batch, heartbeat: VisibilityHeartbeat) -> int:
        """Delete, unrun, the jobs whose turn's deadline has passed (after a cold start or an outage the
        queue holds jobs whose turns already show the fallback); returns how many. Counted and logged."""
        if self._stale_after is None:
            return 0
        now = self._clock()
        stale = [item for item in batch.received if item.job.created_at + self._stale_after <= now]
        if not stale:
            return 0
        self._drop_unrun(batch, heartbeat, stale)
        self.stale_dropped += len(stale)
        log.info("stale jobs dropped unrun", extra={"jobs": len(stale), "job_ids": [i.job.job_id for i in stale]})
        return len(stale)

    def _drop_unrun(self, batch: _Batch, heartbeat: VisibilityHeartbeat, items: list[_Received]) -> None:
        """Take `items` out of the batch and delete their messages, unrun: no retry, no heartbeat."""
        batch.received = [item for item in batch.received if item not in items]
        handles = [item.receipt_handle for item in items]
        heartbeat.forget(handles)
        self._delete(handles)

    def _destination(self, job: RealizeJob) -> str | None:
        """The queue the job's reply goes to, or None when the realizer may not answer there."""
        if job.reply_queue_url is None or job.reply_queue_url == self._screen_queue_url:
            return self._screen_queue_url
        key = queue_key_of_url(job.reply_queue_url)
        return job.reply_queue_url if key is not None and key in self._reply_queues else None

    def _drop_refused(self, batch: _Batch, heartbeat: VisibilityHeartbeat) -> int:
        """Delete, unrun, the jobs whose reply queue this realizer may not answer to; returns how many.
        Counted and logged by id only."""
        refused = [item for item in batch.received if self._destination(item.job) is None]
        if not refused:
            return 0
        self._drop_unrun(batch, heartbeat, refused)
        self.refused += len(refused)
        log.warning(
            "jobs refused: reply queue not allowed",
            extra={"jobs": len(refused), "job_ids": [item.job.job_id for item in refused]},
        )
        return len(refused)

    def _realize(self, batch: _Batch, heartbeat: VisibilityHeartbeat) -> int:
        dropped = self._drop_refused(batch, heartbeat) + self._drop_stale(batch, heartbeat)
        if not batch.received:
            return dropped
        return dropped + self._realize_fresh(batch, heartbeat)

    def _realize_fresh(self, batch: _Batch, heartbeat: VisibilityHeartbeat) -> int:
        groups = batch.groups()
        jobs = [group[0].job for group in groups]
        if len(jobs) < len(batch.received):
            log.info("duplicate jobs in batch", extra={"duplicates": len(batch.received) - len(jobs)})
        try:
            realizations = self._engine.realize(jobs)
            if len(realizations) != len(jobs):
                raise RuntimeError("the engine answered a different number of jobs")
        except Exception as exc:
            # Nothing is sent or deleted: the messages come back after the retry delay.
            self.last_cycle_ok = False
            log.error(
                "engine failed; batch returned to the queue",
                extra={
                    "error": type(exc).__name__,
                    "where": _where(exc),
                    "jobs": len(jobs),
                    "job_ids": [job.job_id for job in jobs],
                },
            )
            self._release([item.receipt_handle for item in batch.received], heartbeat)
            return 0
        replies = [self._reply(job, realization) for job, realization in zip(jobs, realizations, strict=True)]
        sent = self._send(replies)
        answered = [groups[index] for index in sent]
        handles = [item.receipt_handle for group in answered for item in group]
        heartbeat.forget(handles)
        deleted = self._delete(handles)
        unsent = [item.receipt_handle for index, group in enumerate(groups) if index not in set(sent) for item in group]
        if unsent:
            self._release(unsent, heartbeat)
        log.info(
            "batch realized",
            extra={
                "engine": self._engine.name,
                "jobs": len(jobs),
                "answered": len(answered),
                "unsent": len(jobs) - len(answered),
                "deleted": deleted,
            },
        )
        return len(answered)

    def _release(self, handles: Sequence[str], heartbeat: VisibilityHeartbeat) -> None:
        """Hand messages back for a retry after `retry_delay_seconds`; if that fails, their own
        visibility timeout brings them back later."""
        heartbeat.forget(handles)
        change_visibility(self._client, self._realize_queue_url, handles, self._retry_delay)

    def _reply(self, job: RealizeJob, realization: Realization) -> RealizedReply:
        engine = self._engine
        return RealizedReply(
            job=job, engine=engine.name, model_id=engine.model_id, revision=engine.revision, **realization.model_dump()
        )

    def _send(self, replies: Sequence[RealizedReply]) -> list[int]:
        """Send the replies, batching by count and bytes. Returns the indexes the queue accepted."""
        bodies = [reply.model_dump_json() for reply in replies]
        chunks: list[tuple[str, list[int]]] = []
        for queue_url in dict.fromkeys(self._destination(reply.job) or "" for reply in replies):
            size = 0
            start = len(chunks)
            for index, body in enumerate(bodies):
                if (self._destination(replies[index].job) or "") != queue_url:
                    continue
                length = len(body.encode())
                if len(chunks) == start or len(chunks[-1][1]) == SQS_BATCH_LIMIT or size + length > SQS_BATCH_BYTES:
                    chunks.append((queue_url, []))
                    size = 0
                chunks[-1][1].append(index)
                size += length
        accepted: list[int] = []
        for queue_url, chunk in chunks:
            entries: list[SendMessageBatchRequestEntryTypeDef] = [
                {"Id": f"r{index}", "MessageBody": bodies[index]} for index in chunk
            ]
            try:
                response = self._client.send_message_batch(QueueUrl=queue_url, Entries=entries)
            except Exception as exc:
                self.last_cycle_ok = False
                log.error(
                    "reply send failed",
                    extra={"error": type(exc).__name__, "job_ids": [replies[index].job.job_id for index in chunk]},
                )
                continue
            for entry in response.get("Failed", []):
                index = int(entry["Id"][1:])
                log.error("reply refused", extra={"code": entry.get("Code"), "job_id": replies[index].job.job_id})
            accepted.extend(int(entry["Id"][1:]) for entry in response.get("Successful", []))
        return sorted(accepted)

    def _delete(self, handles: Sequence[str]) -> int:
        """Delete answered messages (10 a call). Returns how many the queue confirmed."""
        deleted = 0
        for chunk in _chunks(handles):
            entries: list[DeleteMessageBatchRequestEntryTypeDef] = [
                {"Id": f"d{index}", "ReceiptHandle": handle} for index, handle in enumerate(chunk)
            ]
            try:
                response = self._client.delete_message_batch(QueueUrl=self._realize_queue_url, Entries=entries)
            except Exception as exc:  # answered anyway: a redelivery is a duplicate the screen step tolerates
                log.error("delete failed", extra={"error": type(exc).__name__, "messages": len(chunk)})
                continue
            deleted += len(response.get("Successful", []))
            for entry in response.get("Failed", []):
                log.warning("delete refused", extra={"code": entry.get("Code"), "entry": entry.get("Id")})
        return deleted

    # --- the loop ---------------------------------------------------------------------------------

    def touch_health_file(self) -> None:
        if self._health_file is None:
            return
        try:
            self._health_file.touch()
        except OSError as exc:
            log.warning("health file not written", extra={"error": type(exc).__name__})

    def run(self, should_stop: Callable[[], bool], *, max_backoff_seconds: float = 30.0) -> None:
        """Cycle until `should_stop()`. The health file is touched after every cycle that went well."""
        self._should_stop = should_stop
        self.touch_health_file()
        backoff = 1.0
        log.info("worker started", extra={"engine": self._engine.name, "batch_size": self._batch_size})
        try:
            while not should_stop():
                try:
                    self.poll_once()
                except Exception as exc:  # SQS unreachable, throttled, ...: back off, stay alive
                    self.last_cycle_ok = False
                    log.error("cycle failed", extra={"error": type(exc).__name__, "where": _where(exc)})
                    self._pause(backoff, should_stop)
                    backoff = min(backoff * 2, max_backoff_seconds)
                    continue
                backoff = 1.0
                if self.last_cycle_ok:
                    self.touch_health_file()
        finally:
            self._should_stop = _never
        log.info("worker stopped")

    @staticmethod
    def _pause(seconds: float, should_stop: Callable[[], bool]) -> None:
        end = time.monotonic() + seconds
        while not should_stop() and time.monotonic() < end:
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))


def queue_key_of_arn(arn: str) -> tuple[str, str, str] | None:
    """(region, account, name) of an SQS queue's ARN (arn:PARTITION:sqs:REGION:ACCOUNT:NAME), or None."""
    parts = arn.strip().split(":")
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "sqs" or not all(parts[3:]):
        return None
    return parts[3], parts[4], parts[5]


def queue_key_of_url(url: str) -> tuple[str, str, str] | None:
    """(region, account, name) of an SQS queue's URL (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)."""
    host, _, path = url.removeprefix("https://").partition("/")
    labels, parts = host.split("."), path.split("/")
    if len(labels) < 3 or labels[0] != "sqs" or len(parts) != 2 or not all(parts):
        return None
    return labels[1], parts[0], parts[1]
