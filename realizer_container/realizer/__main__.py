"""Run the realizer worker: `python -m realizer --engine {template,vllm,qwen,smollm}`.

Environment (each also an option):
  REALIZE_QUEUE_URL, SCREEN_QUEUE_URL     the queues (required)
  REPLY_QUEUE_ARNS                        comma-separated ARNs of the desks' screen queues a shared
                                          realizer may answer to besides its own (a job naming any
                                          other reply queue is deleted unrun); empty: its own only
  REALIZER_ENGINE                         engine name (default template; the image runs vllm)
  REALIZER_MODEL, REALIZER_REVISION       model and revision for vllm / qwen
                                          (default Qwen/Qwen2.5-1.5B-Instruct @ 989aa7980e4c...)
  REALIZER_BATCH_SIZE                     messages per batch (default 32)
  REALIZER_WAIT_SECONDS                   long-poll wait of the first receive (default 20)
  REALIZER_MAX_BATCH_WAIT_SECONDS         how long a batch may keep filling (default 2)
  REALIZER_VISIBILITY_TIMEOUT             seconds each heartbeat extends in-flight messages by
                                          (default: the realize queue's VisibilityTimeout)
  REALIZER_HEARTBEAT_FILE                 touched after every good cycle (default /tmp/realizer-heartbeat);
                                          `python -m realizer.healthcheck` checks its age
  REALIZER_MAX_LOAD_SECONDS               while the engine is built, the file is touched every 30 s for
                                          at most this long (default 900; realizer.loading)

SIGTERM (and SIGINT) finish the batch in flight, answer and delete it, then exit 0.
Logs are Powertools' JSON lines (realizer.logs), with ids and counts only.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from datetime import timedelta
from typing import TYPE_CHECKING

from realizer.engines import ENGINE_NAMES, QWEN_MODEL_ID, QWEN_REVISION, EngineUnavailable, build_engine
from realizer.loading import LoadingHeartbeat, max_load_seconds
from realizer.logs import log
from realizer.worker import RealizerWorker

if TYPE_CHECKING:
    from mypy_boto3_sqs.client import SQSClient

DEFAULT_HEARTBEAT_FILE = "/tmp/realizer-heartbeat"
DEFAULT_VISIBILITY_TIMEOUT = 30


def queue_visibility_timeout(client: SQSClient, queue_url: str) -> int:
    """The queue's own VisibilityTimeout, so heartbeats extend before it runs out."""
    try:
        attributes = client.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["VisibilityTimeout"])
        return int(attributes["Attributes"]["VisibilityTimeout"])
    except Exception as exc:
        log.warning(
            "queue visibility timeout unknown; using the default",
            extra={"error": type(exc).__name__, "seconds": DEFAULT_VISIBILITY_TIMEOUT},
        )
        return DEFAULT_VISIBILITY_TIMEOUT


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="realizer", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engine", choices=ENGINE_NAMES, default=_env("REALIZER_ENGINE", "template"))
    parser.add_argument("--model", default=_env("REALIZER_MODEL", QWEN_MODEL_ID))
    parser.add_argument("--revision", default=_env("REALIZER_REVISION", QWEN_REVISION))
    parser.add_argument("--batch-size", type=int, default=int(_env("REALIZER_BATCH_SIZE", "32")))
    parser.add_argument("--wait-seconds", type=int, default=int(_env("REALIZER_WAIT_SECONDS", "20")))
    parser.add_argument(
        "--max-batch-wait-seconds", type=float, default=float(_env("REALIZER_MAX_BATCH_WAIT_SECONDS", "2"))
    )
    visibility = os.environ.get("REALIZER_VISIBILITY_TIMEOUT")
    parser.add_argument("--visibility-timeout", type=int, default=int(visibility) if visibility else None)
    parser.add_argument("--heartbeat-file", default=_env("REALIZER_HEARTBEAT_FILE", DEFAULT_HEARTBEAT_FILE))
    parser.add_argument(
        "--max-load-seconds", type=float, default=max_load_seconds(os.environ.get("REALIZER_MAX_LOAD_SECONDS"))
    )
    return parser.parse_args(argv)


def stale_after(deadline_seconds: str | None) -> timedelta | None:
    """How old a job may be before it is dropped unrun: its turn's reply deadline (REPLY_DEADLINE_SECONDS,
    the template passes the stack's); unset or not a positive whole number, never dropped."""
    if deadline_seconds is None or not deadline_seconds.strip().isdigit() or int(deadline_seconds) < 1:
        return None
    return timedelta(seconds=int(deadline_seconds))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = [name for name in ("REALIZE_QUEUE_URL", "SCREEN_QUEUE_URL") if not os.environ.get(name)]
    if missing:
        print(f"realizer: set {', '.join(missing)}", file=sys.stderr)
        return 2

    import boto3

    client = boto3.client("sqs")
    realize_queue_url = os.environ["REALIZE_QUEUE_URL"]
    visibility_timeout = args.visibility_timeout or queue_visibility_timeout(client, realize_queue_url)
    # The health check passes while the model loads, for a bounded time (realizer.loading).
    started = time.monotonic()
    try:
        with LoadingHeartbeat(args.heartbeat_file, max_seconds=max_load_seconds(args.max_load_seconds)):
            engine = build_engine(args.engine, model=args.model, revision=args.revision)
    except EngineUnavailable as error:
        print(f"realizer: {error}", file=sys.stderr)
        return 2
    # The load time a real GPU gives, against REALIZER_MAX_LOAD_SECONDS (docs/DEPLOY.md).
    log.info("engine ready", extra={"engine": args.engine, "seconds": round(time.monotonic() - started, 1)})

    # Installed after the engine is built, so an engine library's own handlers cannot replace them.
    stopping = threading.Event()

    def stop(signum: int, _frame: object) -> None:
        if not stopping.is_set():
            log.info("stop requested; finishing the batch in flight", extra={"signal": signal.Signals(signum).name})
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    worker = RealizerWorker(
        client,
        realize_queue_url=realize_queue_url,
        screen_queue_url=os.environ["SCREEN_QUEUE_URL"],
        engine=engine,
        batch_size=args.batch_size,
        wait_seconds=args.wait_seconds,
        max_batch_wait_seconds=args.max_batch_wait_seconds,
        visibility_timeout=visibility_timeout,
        health_file=args.heartbeat_file,
        stale_after=stale_after(os.environ.get("REPLY_DEADLINE_SECONDS")),
        reply_queue_arns=[arn for arn in os.environ.get("REPLY_QUEUE_ARNS", "").split(",") if arn.strip()],
    )
    worker.run(stopping.is_set)
    return 0


if __name__ == "__main__":
    sys.exit(main())
