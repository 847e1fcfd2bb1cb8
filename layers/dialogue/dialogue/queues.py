"""The realize queue publisher: one RealizeJob message per generated turn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError

from dialogue.errors import QueueUnavailable
from dialogue.realize import RealizeJob

if TYPE_CHECKING:
    from mypy_boto3_sqs.client import SQSClient
else:
    SQSClient = Any


class RealizeJobPublisher(Protocol):
    def publish(self, job: RealizeJob) -> None: ...


class SqsRealizeJobPublisher:
    """Sends RealizeJobs to the realize queue as JSON bodies."""

    def __init__(self, client: SQSClient, queue_url: str) -> None:
        self._client = client
        self._queue_url = queue_url

    def publish(self, job: RealizeJob) -> None:
        try:
            self._client.send_message(
                QueueUrl=self._queue_url,
                MessageBody=job.model_dump_json(),
                MessageAttributes={"action": {"DataType": "String", "StringValue": str(job.action)}},
            )
        except (ClientError, BotoCoreError):
            raise QueueUnavailable() from None
