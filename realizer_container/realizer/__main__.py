"""Run the realizer worker: `python -m realizer --engine template`.

Queues come from REALIZE_QUEUE_URL and SCREEN_QUEUE_URL. SIGTERM stops after the batch in flight.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

import boto3

from dialogue.pack import get_pack
from realizer.engines import Engine, TemplateEngine
from realizer.worker import RealizerWorker


def build_engine(name: str) -> Engine:
    if name == "template":
        return TemplateEngine(get_pack())
    raise SystemExit(f"unknown engine {name!r}; this build knows: template")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="realizer", description=__doc__)
    parser.add_argument("--engine", default=os.environ.get("REALIZER_ENGINE", "template"))
    parser.add_argument("--batch-size", type=int, default=int(os.environ.get("REALIZER_BATCH_SIZE", "10")))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    missing = [name for name in ("REALIZE_QUEUE_URL", "SCREEN_QUEUE_URL") if not os.environ.get(name)]
    if missing:
        print(f"realizer: set {', '.join(missing)}", file=sys.stderr)
        return 2
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    worker = RealizerWorker(
        boto3.client("sqs"),
        realize_queue_url=os.environ["REALIZE_QUEUE_URL"],
        screen_queue_url=os.environ["SCREEN_QUEUE_URL"],
        engine=build_engine(args.engine),
        batch_size=args.batch_size,
    )
    worker.run(lambda: stopping)
    return 0


if __name__ == "__main__":
    sys.exit(main())
