"""The SQS worker loop: receive RealizeJobs, realize them as one batch, send RealizedReplies, delete.

A message is deleted only once its reply is on the screen queue; anything else stays for a retry
and, past the queue's maxReceiveCount, goes to the dead-letter queue.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from dialogue.realize import RealizedReply, RealizeJob
from realizer.engines import Engine

if TYPE_CHECKING:
    from mypy_boto3_sqs.client import SQSClient
else:
    SQSClient = Any

log = logging.getLogger("realizer")


class RealizerWorker:
    def __init__(
        self,
        client: SQSClient,
        *,
        realize_queue_url: str,
        screen_queue_url: str,
        engine: Engine,
        batch_size: int = 10,
        wait_seconds: int = 20,
    ) -> None:
        self._client = client
        self._realize_queue_url = realize_queue_url
        self._screen_queue_url = screen_queue_url
        self._engine = engine
        self._batch_size = batch_size
        self._wait_seconds = wait_seconds

    def poll_once(self) -> int:
        """One receive → realize → send → delete cycle. Returns how many jobs were answered."""
        response = self._client.receive_message(
            QueueUrl=self._realize_queue_url,
            MaxNumberOfMessages=min(self._batch_size, 10),
            WaitTimeSeconds=self._wait_seconds,
            AttributeNames=["All"],
        )
        messages = response.get("Messages", [])
        jobs: list[RealizeJob] = []
        handles: list[str] = []
        for message in messages:
            try:
                jobs.append(RealizeJob.model_validate_json(message["Body"]))
                handles.append(message["ReceiptHandle"])
            except ValidationError:
                # Left on the queue: after maxReceiveCount receives it moves to the DLQ.
                log.warning("realize job rejected", extra={"message_id": message.get("MessageId")})
        if not jobs:
            return 0
        realizations = self._engine.realize(jobs)
        answered = 0
        for job, realization, handle in zip(jobs, realizations, handles, strict=True):
            reply = RealizedReply(
                job=job,
                engine=self._engine.name,
                model_id=self._engine.model_id,
                revision=self._engine.revision,
                **realization.model_dump(),
            )
            self._client.send_message(QueueUrl=self._screen_queue_url, MessageBody=reply.model_dump_json())
            self._client.delete_message(QueueUrl=self._realize_queue_url, ReceiptHandle=handle)
            answered += 1
        log.info("batch realized", extra={"jobs": len(jobs), "engine": self._engine.name})
        return answered

    def run(self, should_stop: Callable[[], bool]) -> None:
        while not should_stop():
            self.poll_once()
