"""The table's stream delivered to a handler the way Lambda's DynamoDB event source mapping does.

moto keeps the stream; this reads it shard by shard with the DynamoDB Streams API, drops the records
the mapping's filter pattern does not match (Lambda's filter syntax is EventBridge's; moto's
EventBridge matcher applies it), and hands the rest to the handler in batches, as Lambda event
records. With ReportBatchItemFailures the handler names the records that failed; as Lambda does,
the shard's position moves to the first of them and the batch from there is delivered again on the
next poll. A handler that raises fails its whole batch, which is delivered again too.

With `max_record_age_seconds` (the template's MaximumRecordAgeInSeconds), a record still failing that
long after its first failure is given up on, as Lambda gives up on a record that old: the rest of its
batch is described to `on_failure` (Lambda's on-failure record: the shard, the sequence numbers, no
data) and the shard moves past it.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from moto.events.models import EventPattern

log = logging.getLogger("devstack.streams")

Handler = Callable[[dict[str, Any]], dict[str, Any]]


def _as_lambda_json(value: Any) -> Any:
    """Binary attribute values as Lambda's JSON event carries them: base64 text (boto3 gives bytes)."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {key: _as_lambda_json(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_as_lambda_json(inner) for inner in value]
    return value


def lambda_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A GetRecords record as a Lambda DynamoDB event record: times as epoch seconds, binary values as
    base64 (the contact form's sealed item), the stream ARN."""
    change = _as_lambda_json(dict(record["dynamodb"]))
    created = change.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        change["ApproximateCreationDateTime"] = int(created.timestamp())
    return {
        "eventID": record["eventID"],
        "eventName": record["eventName"],
        "eventVersion": record.get("eventVersion", "1.1"),
        "eventSource": "aws:dynamodb",
        "awsRegion": record.get("awsRegion", "us-east-1"),
        "dynamodb": change,
        "eventSourceARN": stream_arn,
    }


@dataclass
class StreamMapping:
    """One table stream → handler mapping: the filter pattern, the batch size, each shard's position."""

    streams: Any  # a boto3 dynamodbstreams client
    stream_arn: str
    handler: Handler
    filter_pattern: dict[str, Any]
    batch_size: int = 10
    # shard id -> where to read next: (AT_SEQUENCE_NUMBER or AFTER_SEQUENCE_NUMBER, a sequence number);
    # a shard not here is read from its start (TRIM_HORIZON), as the template's mapping starts
    positions: dict[str, tuple[str, str]] = field(default_factory=dict)
    delivered: int = 0
    failed_batches: int = 0
    max_record_age_seconds: float | None = None
    clock: Callable[[], float] | None = None  # seconds, the stack's clock
    on_failure: Callable[[dict[str, Any]], None] | None = None
    given_up: int = 0
    first_failed: dict[str, float] = field(default_factory=dict)  # sequence number -> time of first failure

    def __post_init__(self) -> None:
        self._matcher = EventPattern.load(json.dumps(self.filter_pattern))

    def poll(self) -> int:
        """Deliver what the stream holds past each shard's position. Returns how many records the
        handler took without failing; stops at a shard's first failure, to be delivered again."""
        taken = 0
        description = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
        for shard in description["Shards"]:
            taken += self._poll_shard(shard["ShardId"])
        return taken

    def _poll_shard(self, shard_id: str) -> int:
        position = self.positions.get(shard_id)
        where: dict[str, str] = {"ShardIteratorType": "TRIM_HORIZON"}
        if position is not None:
            where = {"ShardIteratorType": position[0], "SequenceNumber": position[1]}
        iterator = self.streams.get_shard_iterator(StreamArn=self.stream_arn, ShardId=shard_id, **where)
        records = self.streams.get_records(ShardIterator=iterator["ShardIterator"], Limit=1000)["Records"]
        taken = 0
        matching: list[dict[str, Any]] = []
        for record in records:
            event_record = lambda_record(record, self.stream_arn)
            if self._matcher.matches_event(event_record):  # type: ignore[arg-type]
                matching.append(event_record)
        for start in range(0, len(matching), self.batch_size):
            batch = matching[start : start + self.batch_size]
            failed = self._invoke(batch)
            if failed is not None:
                self.failed_batches += 1
                if not self._too_old(failed):
                    self.positions[shard_id] = ("AT_SEQUENCE_NUMBER", failed)
                    return taken
                self._give_up(shard_id, [r for r in batch if int(r["dynamodb"]["SequenceNumber"]) >= int(failed)])
                continue
            taken += len(batch)
            self.delivered += len(batch)
        if records:  # records the filter dropped are passed over too, as Lambda passes them
            self.positions[shard_id] = ("AFTER_SEQUENCE_NUMBER", str(records[-1]["dynamodb"]["SequenceNumber"]))
        return taken

    def _too_old(self, sequence: str) -> bool:
        if self.max_record_age_seconds is None or self.clock is None:
            return False
        first = self.first_failed.setdefault(sequence, self.clock())
        return self.clock() - first >= self.max_record_age_seconds

    def _give_up(self, shard_id: str, records: list[dict[str, Any]]) -> None:
        """Lambda's on-failure record for records past their age: where they were, never what."""
        self.given_up += len(records)
        if self.on_failure is None or not records:
            return
        self.on_failure(
            {
                "requestContext": {"condition": "RecordAgeExceeded", "approximateInvokeCount": 1},
                "version": "1.0",
                "DDBStreamBatchInfo": {
                    "shardId": shard_id,
                    "startSequenceNumber": str(records[0]["dynamodb"]["SequenceNumber"]),
                    "endSequenceNumber": str(records[-1]["dynamodb"]["SequenceNumber"]),
                    "batchSize": len(records),
                    "streamArn": self.stream_arn,
                },
            }
        )

    def _invoke(self, batch: list[dict[str, Any]]) -> str | None:
        """Run the handler on a batch; the sequence number to deliver again from, or None if all went well."""
        try:
            result = self.handler({"Records": batch})
        except Exception as error:  # the whole batch failed: Lambda retries it
            log.warning("stream batch failed", extra={"error": type(error).__name__, "records": len(batch)})
            return str(batch[0]["dynamodb"]["SequenceNumber"])
        failures = [item["itemIdentifier"] for item in (result or {}).get("batchItemFailures", [])]
        if not failures:
            return None
        return str(min(failures, key=int))
