"""The realizer worker on moto: batching, deletes, the DLQ, engine failures, duplicates, visibility, stops.

Every engine here is a FakeEngine: a test double that records its batches and returns canned wording.
The last tests run the real entry point, `python -m realizer --engine template`, as a subprocess
against a moto server, and send it SIGTERM.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

import boto3
import pytest
from moto import mock_aws

from dialogue.actions import Action
from dialogue.pack import DomainPack, get_pack
from dialogue.realize import Realization, RealizedReply, RealizeJob, build_realize_job
from dialogue.state import DialogueState
from realizer import healthcheck
from realizer.__main__ import main as realizer_main
from realizer.logs import log
from realizer.worker import RealizerWorker

ROOT = Path(__file__).resolve().parents[2]
REGION = "us-east-1"
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
}
BODY_MARKER = "BODY-MARKER-7f3a"
REPLY_MARKER = "REPLY-MARKER-c41d"


# --- fixtures and helpers -------------------------------------------------------------------------


@dataclass
class FakeEngine:
    """A fake engine (a test double, not a model): records each batch and words every job the same way."""

    name: str = "fake"
    model_id: str | None = "fake/model"
    revision: str | None = "0" * 40
    delay: float = 0.0
    error: Exception | None = None
    during: Callable[[], None] | None = None
    batches: list[list[str]] = field(default_factory=list)

    def realize(self, jobs: Sequence[RealizeJob]) -> list[Realization]:
        self.batches.append([job.job_id for job in jobs])
        if self.during is not None:
            self.during()
        if self.delay:
            time.sleep(self.delay)
        if self.error is not None:
            raise self.error
        return [
            Realization(text=f"{REPLY_MARKER} {index}", ended_by_eos=True, hit_token_cap=False)
            for index in range(len(jobs))
        ]


@dataclass
class Queues:
    realize: str
    screen: str
    dlq: str


@pytest.fixture
def sqs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in FAKE_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield boto3.client("sqs", region_name=REGION)


def make_queues(sqs: Any, *, visibility_timeout: int = 30, max_receive_count: int = 2) -> Queues:
    suffix = uuid4().hex[:8]
    dlq = sqs.create_queue(QueueName=f"realize-dlq-{suffix}")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    realize = sqs.create_queue(
        QueueName=f"realize-{suffix}",
        Attributes={
            "VisibilityTimeout": str(visibility_timeout),
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receive_count}),
        },
    )["QueueUrl"]
    screen = sqs.create_queue(QueueName=f"screen-{suffix}")["QueueUrl"]
    return Queues(realize=realize, screen=screen, dlq=dlq)


def make_job(pack: DomainPack, *, action: Action = Action.REQUEST_PROGRAM) -> RealizeJob:
    return build_realize_job(
        conversation_id=uuid4(),
        turn_id=1,
        state=DialogueState.new(pack.frame),
        action=action,
        pack=pack,
        now=datetime.now(UTC),
    )


def send_jobs(sqs: Any, queue_url: str, jobs: Sequence[RealizeJob]) -> None:
    for job in jobs:
        sqs.send_message(QueueUrl=queue_url, MessageBody=job.model_dump_json())


def counts(sqs: Any, queue_url: str) -> tuple[int, int]:
    """(visible, in flight) messages on a queue."""
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"]), int(attributes["ApproximateNumberOfMessagesNotVisible"])


def drain(sqs: Any, queue_url: str) -> list[str]:
    bodies: list[str] = []
    while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get(
        "Messages", []
    ):
        for message in messages:
            bodies.append(message["Body"])
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
    return bodies


def record_calls(sqs: Any, operation: str) -> list[dict[str, Any]]:
    """Every request of `operation` (e.g. "DeleteMessageBatch") the client makes from now on."""
    calls: list[dict[str, Any]] = []
    sqs.meta.events.register(f"provide-client-params.sqs.{operation}", lambda params, **_: calls.append(params))
    return calls


def make_worker(sqs: Any, queues: Queues, engine: FakeEngine, **options: Any) -> RealizerWorker:
    options.setdefault("wait_seconds", 0)
    options.setdefault("max_batch_wait_seconds", 1.0)
    return RealizerWorker(
        sqs, realize_queue_url=queues.realize, screen_queue_url=queues.screen, engine=engine, **options
    )


def forbidden_texts(jobs: Sequence[RealizeJob]) -> list[str]:
    """What must never reach a log: bodies, message contents, model output."""
    texts = [BODY_MARKER, REPLY_MARKER]
    for job in jobs:
        texts.append(job.model_dump_json())
        texts.extend(message.content for message in job.messages)
    return texts


def assert_no_bodies(records: Sequence[logging.LogRecord], forbidden: Sequence[str]) -> None:
    """Each record, as the realizer's Powertools logger writes it and as it is held, carries no text."""
    formatter = log.registered_formatter
    for record in records:
        line = formatter.format(record)
        raw = repr(vars(record))
        for text in forbidden:
            assert text not in line, f"log record {record.getMessage()!r} carries a body or text"
            assert text not in raw, f"log record {record.getMessage()!r} carries a body or text"


# --- batching and deletes -------------------------------------------------------------------------


def test_batch_is_filled_from_several_receives_up_to_batch_size(sqs: Any, pack: DomainPack) -> None:
    queues = make_queues(sqs)
    jobs = [make_job(pack) for _ in range(25)]
    send_jobs(sqs, queues.realize, jobs)
    receives = record_calls(sqs, "ReceiveMessage")
    engine = FakeEngine()
    worker = make_worker(sqs, queues, engine, batch_size=20, max_batch_wait_seconds=10.0)

    assert worker.poll_once() == 20
    assert [len(batch) for batch in engine.batches] == [20]
    assert [call["MaxNumberOfMessages"] for call in receives] == [10, 10]
    assert counts(sqs, queues.realize) == (5, 0)

    assert worker.poll_once() == 5
    assert [len(batch) for batch in engine.batches] == [20, 5]
    assert counts(sqs, queues.realize) == (0, 0)
    replies = [RealizedReply.model_validate_json(body) for body in drain(sqs, queues.screen)]
    assert sorted(reply.job.job_id for reply in replies) == sorted(job.job_id for job in jobs)
    assert {reply.engine for reply in replies} == {"fake"}


def test_batch_window_closes_before_the_batch_is_full(sqs: Any, pack: DomainPack) -> None:
    queues = make_queues(sqs)
    send_jobs(sqs, queues.realize, [make_job(pack) for _ in range(15)])
    engine = FakeEngine()
    worker = make_worker(sqs, queues, engine, batch_size=32, max_batch_wait_seconds=0.0)

    assert worker.poll_once() == 10
    assert [len(batch) for batch in engine.batches] == [10]


def test_a_lone_job_is_worded_at_once_its_top_up_a_short_poll(sqs: Any, pack: DomainPack) -> None:
    """Issue 42's 5 s p95: as deployed (a 20 s long poll, a 2 s batch window), a job that arrives alone
    is not held back by the top-up receive, which is a short poll (WaitTimeSeconds 0): an empty queue
    answers at once. A 1 s top-up wait held every lone job a second (devstack.fleet models this)."""
    queues = make_queues(sqs)
    send_jobs(sqs, queues.realize, [make_job(pack)])
    receives = record_calls(sqs, "ReceiveMessage")
    engine = FakeEngine()
    worker = make_worker(sqs, queues, engine, wait_seconds=20, max_batch_wait_seconds=2.0)

    started = time.monotonic()
    assert worker.poll_once() == 1
    assert time.monotonic() - started < 0.8
    assert [call["WaitTimeSeconds"] for call in receives] == [20, 0]
    assert [len(batch) for batch in engine.batches] == [1]


def test_only_answered_messages_are_deleted(sqs: Any, pack: DomainPack, monkeypatch: pytest.MonkeyPatch) -> None:
    queues = make_queues(sqs)
    jobs = [make_job(pack) for _ in range(3)]
    refused = jobs[1]
    # The refused job arrives twice: its duplicate must stay too, since its reply never left.
    send_jobs(sqs, queues.realize, [*jobs, refused])
    real_send = sqs.send_message_batch

    def send_all_but_one(**kwargs: Any) -> dict[str, Any]:
        keep = [entry for entry in kwargs["Entries"] if refused.job_id not in entry["MessageBody"]]
        dropped = [entry for entry in kwargs["Entries"] if refused.job_id in entry["MessageBody"]]
        response = dict(real_send(QueueUrl=kwargs["QueueUrl"], Entries=keep))
        response["Failed"] = [
            {"Id": entry["Id"], "SenderFault": False, "Code": "InternalError", "Message": "fake"} for entry in dropped
        ]
        return response

    monkeypatch.setattr(sqs, "send_message_batch", send_all_but_one)
    deletes = record_calls(sqs, "DeleteMessageBatch")
    released = record_calls(sqs, "ChangeMessageVisibilityBatch")
    worker = make_worker(sqs, queues, FakeEngine())

    assert worker.poll_once() == 2
    assert counts(sqs, queues.realize) == (0, 2)
    assert sum(len(call["Entries"]) for call in deletes) == 2
    # The refused job's two messages go back for a retry in seconds.
    assert [entry["VisibilityTimeout"] for call in released for entry in call["Entries"]] == [5, 5]
    replies = [RealizedReply.model_validate_json(body) for body in drain(sqs, queues.screen)]
    assert sorted(reply.job.job_id for reply in replies) == sorted([jobs[0].job_id, jobs[2].job_id])


def test_invalid_body_stays_on_the_queue_and_reaches_the_dlq(
    sqs: Any, pack: DomainPack, caplog: pytest.LogCaptureFixture
) -> None:
    # VisibilityTimeout 0 so each receive sees the message again; moto redrives on the receive after
    # maxReceiveCount (2).
    queues = make_queues(sqs, visibility_timeout=0, max_receive_count=2)
    body = json.dumps({"job_id": "not-a-job", "note": BODY_MARKER})
    message_id = sqs.send_message(QueueUrl=queues.realize, MessageBody=body)["MessageId"]
    deletes = record_calls(sqs, "DeleteMessageBatch") + record_calls(sqs, "DeleteMessage")
    engine = FakeEngine()
    worker = make_worker(sqs, queues, engine, max_batch_wait_seconds=0.0)

    with caplog.at_level(logging.DEBUG, logger="realizer"):
        for _ in range(5):
            assert worker.poll_once() == 0
            if counts(sqs, queues.dlq)[0]:
                break

    assert deletes == []
    assert engine.batches == []
    assert drain(sqs, queues.dlq) == [body]
    assert counts(sqs, queues.realize) == (0, 0)
    assert counts(sqs, queues.screen) == (0, 0)
    rejected = [record for record in caplog.records if record.getMessage() == "realize job rejected"]
    assert rejected
    assert all(getattr(record, "message_id", None) == message_id for record in rejected)
    assert_no_bodies(caplog.records, [BODY_MARKER, body])


def test_engine_exception_deletes_nothing(sqs: Any, pack: DomainPack, caplog: pytest.LogCaptureFixture) -> None:
    queues = make_queues(sqs)
    jobs = [make_job(pack) for _ in range(3)]
    send_jobs(sqs, queues.realize, jobs)
    deletes = record_calls(sqs, "DeleteMessageBatch")
    released = record_calls(sqs, "ChangeMessageVisibilityBatch")
    worker = make_worker(sqs, queues, FakeEngine(error=RuntimeError(f"CUDA error near {BODY_MARKER}")))

    with caplog.at_level(logging.INFO, logger="realizer"):
        assert worker.poll_once() == 0

    assert deletes == []
    # Handed back for a retry in seconds, not after the queue's visibility timeout.
    assert [entry["VisibilityTimeout"] for call in released for entry in call["Entries"]] == [5, 5, 5]
    assert worker.last_cycle_ok is False
    assert counts(sqs, queues.realize) == (0, 3)
    assert counts(sqs, queues.screen) == (0, 0)
    failures = [record for record in caplog.records if record.getMessage().startswith("engine failed")]
    assert len(failures) == 1
    assert getattr(failures[0], "error", None) == "RuntimeError"
    assert sorted(getattr(failures[0], "job_ids", [])) == sorted(job.job_id for job in jobs)
    assert_no_bodies(caplog.records, forbidden_texts(jobs))


def test_duplicates_of_one_job_get_one_reply(sqs: Any, pack: DomainPack) -> None:
    queues = make_queues(sqs)
    first, second = make_job(pack), make_job(pack, action=Action.REQUEST_CONTACT)
    send_jobs(sqs, queues.realize, [first, first, second, first])
    engine = FakeEngine()
    worker = make_worker(sqs, queues, engine)

    assert worker.poll_once() == 2
    assert engine.batches == [[first.job_id, second.job_id]]
    replies = [RealizedReply.model_validate_json(body) for body in drain(sqs, queues.screen)]
    assert sorted(reply.job.job_id for reply in replies) == sorted([first.job_id, second.job_id])
    # Every copy is deleted once the kept one is answered.
    assert counts(sqs, queues.realize) == (0, 0)


# --- visibility and stopping ----------------------------------------------------------------------


def test_visibility_is_extended_while_a_slow_engine_runs(sqs: Any, pack: DomainPack) -> None:
    queues = make_queues(sqs, visibility_timeout=2)
    send_jobs(sqs, queues.realize, [make_job(pack), make_job(pack)])
    extensions = record_calls(sqs, "ChangeMessageVisibilityBatch")
    probes: list[int] = []

    def probe_past_the_original_timeout() -> None:
        # Without a heartbeat both messages would be visible again after 2 s.
        time.sleep(2.6)
        found = sqs.receive_message(QueueUrl=queues.realize, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        probes.append(len(found.get("Messages", [])))

    engine = FakeEngine(during=probe_past_the_original_timeout, delay=0.6)
    worker = make_worker(sqs, queues, engine, visibility_timeout=2, max_batch_wait_seconds=0.0)

    assert worker.poll_once() == 2
    assert probes == [0]
    assert len(extensions) >= 2
    assert all(len(call["Entries"]) == 2 for call in extensions)
    assert all(entry["VisibilityTimeout"] == 2 for call in extensions for entry in call["Entries"])
    assert counts(sqs, queues.realize) == (0, 0)
    assert not [thread for thread in threading.enumerate() if thread.name == "realizer-visibility"]


def test_stop_during_the_engine_run_finishes_the_batch(sqs: Any, pack: DomainPack) -> None:
    queues = make_queues(sqs)
    send_jobs(sqs, queues.realize, [make_job(pack) for _ in range(5)])
    stop = threading.Event()
    engine = FakeEngine(during=stop.set, delay=0.3)  # the stop (SIGTERM) arrives mid-batch
    worker = make_worker(sqs, queues, engine, batch_size=3)
    runner = threading.Thread(target=worker.run, args=(stop.is_set,))

    runner.start()
    runner.join(timeout=15)

    assert not runner.is_alive()
    assert [len(batch) for batch in engine.batches] == [3]
    assert len(drain(sqs, queues.screen)) == 3
    assert counts(sqs, queues.realize) == (2, 0)


def test_stop_during_collection_returns_received_messages(sqs: Any, pack: DomainPack) -> None:
    queues = make_queues(sqs, visibility_timeout=60)
    send_jobs(sqs, queues.realize, [make_job(pack) for _ in range(4)])
    stop = threading.Event()
    sqs.meta.events.register("after-call.sqs.ReceiveMessage", lambda **_: stop.set())
    engine = FakeEngine()
    worker = make_worker(sqs, queues, engine)

    worker.run(stop.is_set)

    assert engine.batches == []
    assert counts(sqs, queues.realize) == (4, 0)
    assert counts(sqs, queues.screen) == (0, 0)


def test_logs_carry_ids_and_counts_never_bodies(sqs: Any, pack: DomainPack, caplog: pytest.LogCaptureFixture) -> None:
    queues = make_queues(sqs)
    jobs = [make_job(pack), make_job(pack, action=Action.CONFIRM), make_job(pack, action=Action.INFORM)]
    send_jobs(sqs, queues.realize, [*jobs, jobs[0]])
    sqs.send_message(QueueUrl=queues.realize, MessageBody=f"not json {BODY_MARKER}")
    engine = FakeEngine(delay=0.5)  # long enough for a few heartbeats
    worker = make_worker(sqs, queues, engine, visibility_timeout=1, heartbeat_interval=0.2)

    # Everything at INFO (what the container logs), the worker's own logger at DEBUG.
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="realizer")
    assert worker.poll_once() == 3

    messages = {record.getMessage() for record in caplog.records}
    assert {"batch collected", "batch realized", "realize job rejected", "visibility extended"} <= messages
    realized = next(record for record in caplog.records if record.getMessage() == "batch realized")
    assert getattr(realized, "answered", None) == 3
    assert_no_bodies(caplog.records, forbidden_texts(jobs))


# --- the entry point and the health check ---------------------------------------------------------


def test_healthcheck_fails_on_a_missing_or_stale_heartbeat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    heartbeat = tmp_path / "heartbeat"
    monkeypatch.setenv("REALIZER_HEARTBEAT_FILE", str(heartbeat))
    monkeypatch.setenv("REALIZER_HEARTBEAT_MAX_AGE_SECONDS", "60")
    assert healthcheck.main() == 1
    heartbeat.touch()
    assert healthcheck.main() == 0
    old = time.time() - 61
    os.utime(heartbeat, (old, old))
    assert healthcheck.main() == 1


def test_entry_point_refuses_to_start_without_queues(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REALIZE_QUEUE_URL", raising=False)
    monkeypatch.delenv("SCREEN_QUEUE_URL", raising=False)
    assert realizer_main(["--engine", "template"]) == 2
    with pytest.raises(SystemExit):
        realizer_main(["--engine", "no-such-engine"])


def test_entry_point_answers_a_job_and_exits_cleanly_on_sigterm(tmp_path: Path) -> None:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    process: subprocess.Popen[str] | None = None
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        sqs = boto3.client(
            "sqs",
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        queues = make_queues(sqs)
        heartbeat = tmp_path / "heartbeat"
        env = {
            **{key: value for key, value in os.environ.items() if not key.startswith("AWS_")},
            **FAKE_CREDENTIALS,
            "AWS_ENDPOINT_URL": endpoint,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "dialogue"), str(ROOT / "realizer_container")]),
            "REALIZE_QUEUE_URL": queues.realize,
            "SCREEN_QUEUE_URL": queues.screen,
            "REALIZER_WAIT_SECONDS": "1",
            "REALIZER_MAX_BATCH_WAIT_SECONDS": "0.5",
            "REALIZER_HEARTBEAT_FILE": str(heartbeat),
        }
        job = make_job(get_pack())
        send_jobs(sqs, queues.realize, [job])
        process = subprocess.Popen(
            [sys.executable, "-m", "realizer", "--engine", "template"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

        replies: list[str] = []
        deadline = time.monotonic() + 30
        while not replies and time.monotonic() < deadline and process.poll() is None:
            replies = drain(sqs, queues.screen)
            time.sleep(0.2)
        assert replies, f"no reply; worker exited {process.poll()}"
        reply = RealizedReply.model_validate_json(replies[0])
        assert reply.job.job_id == job.job_id
        assert reply.engine == "template"
        assert reply.ended_by_eos
        assert counts(sqs, queues.realize) == (0, 0)

        health = subprocess.run(
            [sys.executable, "-m", "realizer.healthcheck"], env=env, capture_output=True, text=True, timeout=30
        )
        assert health.returncode == 0, health.stderr

        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=10)
        assert process.returncode == 0, stderr
        assert time.monotonic() - started < 5
    finally:
        if process is not None and process.poll() is None:
            process.kill()
            process.communicate()
        server.stop()

    # Powertools' JSON lines on stdout, as the Lambdas write them.
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    assert any(line["message"] == "batch realized" and line["answered"] == 1 for line in lines)
    assert any(line["message"] == "worker stopped" for line in lines)
    for text in [reply.text, *forbidden_texts([job])]:
        assert text not in stdout and text not in stderr


@pytest.mark.parametrize("stale", [False, True])
def test_a_job_past_its_turns_deadline_is_dropped_unrun_and_counted(sqs: Any, pack: DomainPack, stale: bool) -> None:
    """After a cold start or an outage the queue holds jobs whose turns already show the deadline's
    fallback: wording them would spend the GPU on replies no one is shown. The worker deletes them unrun
    and counts them; a job inside its deadline is realized as before (a fake engine records what runs)."""
    from datetime import timedelta

    from realizer.__main__ import stale_after

    queues = make_queues(sqs)
    old, fresh = make_job(pack), make_job(pack)
    deadline = stale_after("60")
    assert deadline == timedelta(seconds=60) and stale_after(None) is None and stale_after("0") is None
    now = old.created_at + deadline + timedelta(seconds=1 if stale else -1)
    send_jobs(sqs, queues.realize, [old])
    engine = FakeEngine()
    worker = make_worker(sqs, queues, engine, stale_after=deadline, clock=lambda: now)
    assert worker.poll_once() == 1
    assert worker.stale_dropped == int(stale)
    assert engine.batches == ([] if stale else [[old.job_id]])
    assert counts(sqs, queues.realize) == (0, 0), "answered or dropped, the job leaves the queue"
    assert len(drain(sqs, queues.screen)) == (0 if stale else 1)
    # In one batch, the stale job is dropped and the fresh one worded.
    old = make_job(pack).model_copy(update={"created_at": fresh.created_at - 2 * deadline})
    send_jobs(sqs, queues.realize, [old, fresh])
    engine.batches.clear()
    worker = make_worker(sqs, queues, engine, stale_after=deadline, clock=lambda: fresh.created_at)
    assert worker.poll_once() == 2
    assert (engine.batches, worker.stale_dropped) == ([[fresh.job_id]], 1)
    assert counts(sqs, queues.realize) == (0, 0) and len(drain(sqs, queues.screen)) == 1


def test_a_shared_realizer_answers_only_to_the_reply_queues_it_allows(sqs: Any, pack: DomainPack) -> None:
    """A realizer shared by many desks (issue 42, item 3): a job naming a desk's reply queue on the
    realizer's list (REPLY_QUEUE_ARNS) is answered there; a job naming any other queue is deleted unrun
    and counted, logged by id; a job naming none is answered on the realizer's own screen queue."""
    from realizer.worker import queue_key_of_arn, queue_key_of_url

    queues = make_queues(sqs)
    desk = sqs.create_queue(QueueName=f"desk-screen-{uuid4().hex[:8]}")["QueueUrl"]
    stranger = sqs.create_queue(QueueName=f"other-screen-{uuid4().hex[:8]}")["QueueUrl"]
    desk_arn = sqs.get_queue_attributes(QueueUrl=desk, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    assert queue_key_of_arn(desk_arn) == queue_key_of_url(desk) is not None
    assert queue_key_of_arn("not-an-arn") is None and queue_key_of_url("https://example.com/1/x") is None
    to_desk = make_job(pack).model_copy(update={"reply_queue_url": desk})
    to_stranger = make_job(pack).model_copy(update={"reply_queue_url": stranger})
    to_own = make_job(pack)
    # The job's reply queue is part of what the dispatch function sends and the worker reads.
    assert RealizeJob.model_validate_json(to_desk.model_dump_json()).reply_queue_url == desk
    send_jobs(sqs, queues.realize, [to_desk, to_stranger, to_own])
    engine = FakeEngine()
    worker = make_worker(sqs, queues, engine, reply_queue_arns=[desk_arn])
    handled = 0
    while sum(counts(sqs, queues.realize)):
        handled += worker.poll_once()
    assert handled == 3 and worker.refused == 1
    assert sorted(job for batch in engine.batches for job in batch) == sorted([to_desk.job_id, to_own.job_id])
    assert [RealizedReply.model_validate_json(body).job.job_id for body in drain(sqs, desk)] == [to_desk.job_id]
    assert [RealizedReply.model_validate_json(body).job.job_id for body in drain(sqs, queues.screen)] == [to_own.job_id]
    assert drain(sqs, stranger) == [], "nothing reaches a queue the realizer does not answer to"
    # Without the list, the realizer answers to its own screen queue only.
    send_jobs(sqs, queues.realize, [to_desk])
    lone = make_worker(sqs, queues, FakeEngine())
    assert lone.poll_once() == 1 and lone.refused == 1 and drain(sqs, desk) == []
