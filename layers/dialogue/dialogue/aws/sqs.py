"""The dispatch function's two queues on SQS (dialogue.ports.DispatchQueues): RealizeJobs to the realize
queue, ReplyDeadlines (delayed) to the screen queue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dialogue.errors import QueueUnavailable
from dialogue.realize import RealizeJob, ReplyDeadline

if TYPE_CHECKING:
    from mypy_boto3_sqs.client import SQSClient
else:
    SQSClient = Any


class SqsDispatchQueues:
    """Sends JSON bodies: jobs to the realize queue, deadlines to the screen queue with a delay."""

    def __init__(self, client: SQSClient, *, realize_queue_url: str, screen_queue_url: str) -> None:
        self._client = client
        self._realize_queue_url = realize_queue_url
        self._screen_queue_url = screen_queue_url

    def send_deadline(self, deadline: ReplyDeadline, *, delay_seconds: int) -> None:
        try:
            self._client.send_message(
                QueueUrl=self._screen_queue_url, MessageBody=deadline.model_dump_json(), DelaySeconds=delay_seconds
            )
        except (ClientError, BotoCoreError):
            raise QueueUnavailable() from None

    def send_job(self, job: RealizeJob) -> None:
        try:
            self._client.send_message(QueueUrl=self._realize_queue_url, MessageBody=job.model_dump_json())
        except (ClientError, BotoCoreError):
            raise QueueUnavailable() from None


def clear_dispatch_failures(client: SQSClient, queue_url: str, *, limit: int = 100) -> int:
    """Delete up to `limit` messages of the dispatch failure queue (stream batch descriptions: shard ids
    and sequence numbers, no text); returns how many. Call it only after a complete sweep: every turn a
    batch named is past its deadline, so the sweep has finalized it (dialogue.sweep)."""
    cleared = 0
    try:
        while cleared < limit:
            messages = client.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=min(10, limit - cleared), WaitTimeSeconds=0
            ).get("Messages", [])
            if not messages:
                break
            client.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]} for n, m in enumerate(messages)],
            )
            cleared += len(messages)
    except (ClientError, BotoCoreError):
        raise QueueUnavailable() from None
    return cleared
