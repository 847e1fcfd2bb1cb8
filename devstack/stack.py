"""A local stack on moto: the table (with its stream) and queues of template.yaml, the three Lambda
handlers and the realizer worker, all in this process. Every log line and metric the handlers print
is captured.

One turn travels as in AWS: the turn API commits it; `run_dispatch` delivers the table's stream to
the dispatch handler as Lambda's event source mapping does (filter, batches, retries from the first
failure); `run_realizer` runs the worker; `run_screen_function` delivers the screen queue to the
screen handler. `advance(seconds)` moves the queues' clock forward: a reply deadline (an SQS delay)
falls due, and messages whose handling failed become visible again, without waiting.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import boto3
import moto.sqs.models
from botocore.config import Config
from botocore.loaders import Loader, create_loader
from moto import mock_aws

from devstack.auth import JwtAuthorizer, LocalIssuer
from devstack.events import LOCAL_ORIGIN_VERIFY, FakeLambdaContext, http_event, sqs_event
from devstack.faults import FaultInjector
from devstack.moto_kms import symmetric_keys_share_one_unused_rsa_key
from devstack.moto_transactions import light_transaction_snapshots
from devstack.reads import ItemReads
from devstack.streams import StreamMapping

REGION = "us-east-1"
TABLE_NAME = "devstack-conversations"
AUDIT_BUCKET = "devstack-audit"  # the audit's WORM copy (template.yaml's AuditBucket), under Object Lock
AUDIT_RETENTION_DAYS = 365  # the bucket's default COMPLIANCE retention: AuditRetentionDays' default
MAX_RECEIVE_COUNT = 5
# The queues' visibility timeouts in template.yaml (a test checks they agree).
REALIZE_VISIBILITY_TIMEOUT = 30
SCREEN_VISIBILITY_TIMEOUT = 30
STREAM_BATCH_SIZE = 10  # the dispatch mapping's BatchSize in template.yaml
STREAM_MAX_RECORD_AGE = 3600  # its MaximumRecordAgeInSeconds: then a record goes to DispatchFailureQueue
SWEEP_INTERVAL = 300  # the sweeper's schedule in template.yaml: rate(5 minutes)

ORIGIN_VERIFY = "ORIGIN_VERIFY"  # the local value CloudFront's X-Origin-Verify header must hold (dialogue.aws.origin)
ORIGIN_VERIFY_SECRET_ARN = "ORIGIN_VERIFY_SECRET_ARN"  # the deployed functions' secret: never set locally
_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "TABLE_NAME": TABLE_NAME,
    "AUDIT_BUCKET": AUDIT_BUCKET,
    "POWERTOOLS_SERVICE_NAME": "devstack",
    "POWERTOOLS_METRICS_NAMESPACE": "EnrollmentDeskLocal",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_LOGGER_LOG_EVENT": "false",
}


@dataclass
class ApiResponse:
    status: int
    body: Any
    headers: dict[str, str]


class _LineCapture(io.StringIO):
    """A stream that keeps every line written to it."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self._lines = lines

    def write(self, text: str) -> int:
        self._lines.extend(line for line in text.splitlines() if line.strip())
        return len(text)


@dataclass
class Queue:
    url: str
    arn: str


class QueueClock:
    """The stack's one clock: moto's SQS clock (delays and visibility timeouts) and the handlers' clock
    (dialogue.clock), which `advance` moves forward together.

    By default it is the system's time plus what `advance` added. Given a `start`, it begins at `start`
    instead and runs on at the real pace (moto's SQS needs time to move between a send and a receive), so
    a simulation's hours and days pass only through `advance`.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self.offset_ms = 0
        self._real = moto.sqs.models.unix_time_millis  # type: ignore[attr-defined]
        self._shift_ms = start.timestamp() * 1000 - float(self._real()) if start is not None else 0.0

    def now_ms(self, *args: Any) -> float:
        if args:  # moto converting a given time: not the clock
            return float(self._real(*args))
        return float(self._real()) + self._shift_ms + self.offset_ms

    def now_s(self) -> float:
        return self.now_ms() / 1000

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.now_ms() / 1000, UTC)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """moto's SQS reads this clock in milliseconds (delays, visibility) and in seconds (a message's
        retention); the handlers through dialogue.clock."""
        from dialogue.clock import use_clock

        seconds = moto.sqs.models.unix_time  # type: ignore[attr-defined]
        with (
            mock.patch.object(moto.sqs.models, "unix_time_millis", self.now_ms),
            mock.patch.object(moto.sqs.models, "unix_time", lambda *args: seconds(*args) if args else self.now_s()),
            use_clock(self.now),
        ):
            yield


@dataclass
class LocalStack:
    """Handles to the moto resources and the handlers; build with `local_stack()`."""

    dynamodb: Any
    sqs: Any
    stream: StreamMapping
    clock: QueueClock
    faults: FaultInjector
    realize_queue: Queue
    screen_queue: Queue
    realize_dlq: Queue
    screen_dlq: Queue
    dispatch_failures: Queue
    realizer: Any
    issuer: LocalIssuer
    authorizer: JwtAuthorizer
    log_lines: list[str] = field(default_factory=list)
    sent_messages: list[dict[str, str]] = field(default_factory=list)
    # API conversation id -> a label of the caller's (a scripted conversation id), for canned replies.
    labels: dict[str, str] = field(default_factory=dict)
    last_sweep_ms: float | None = None
    # The X-Origin-Verify value the handlers accept (local_stack's `origin_verify`), which call_api and
    # call_staff_api add as CloudFront does; None: no value set, and every API request is refused.
    origin_verify: str | None = LOCAL_ORIGIN_VERIFY
    # The DynamoDB items every client reads, counted inside `stack.reads.counting()` (devstack.reads).
    reads: ItemReads = field(default_factory=ItemReads)
    s3: Any = None  # the audit bucket's client (AUDIT_BUCKET)

    # --- the turn API -----------------------------------------------------------------------------

    def call_api(
        self, method: str, path: str, body: Any = None, *, via_cloudfront: bool = True, **request: Any
    ) -> ApiResponse:
        """A turn API request as it arrives through CloudFront, with the stack's X-Origin-Verify value
        (`headers` may override it); `via_cloudfront=False` for one sent past CloudFront, without it.
        `request`: the rest of devstack.events.http_event's options (raw_body, headers, query...)."""
        import turn_api

        origin = self.origin_verify if via_cloudfront else None
        event = http_event(method, path, body, origin_verify=origin, **request)
        with self._captured():
            result = turn_api.lambda_handler(event, FakeLambdaContext(function_name="turn_api"))
        return _api_response(result)

    # --- the staff API ------------------------------------------------------------------------------

    def staff_token(self, name: str = "desk-tester", **options: Any) -> str:
        """A bearer token for a local staff user (LocalIssuer.token's options: groups, issuer, ...)."""
        return self.issuer.token(name, **options)

    def call_staff_api(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        staff: str | None = "desk-tester",
        token: str | None = None,
        query: str = "",
        raw_body: str | None = None,
        headers: dict[str, str] | None = None,
        via_cloudfront: bool = True,
    ) -> ApiResponse:
        """A staff API request as it arrives through API Gateway: the bearer token (`token`, or one issued
        to `staff`; None for neither) is checked by the JWT authorizer first, 401 when it fails. It carries
        the stack's X-Origin-Verify value unless `via_cloudfront=False` (`headers` may override it)."""
        import staff_api

        bearer = token if token is not None else (self.staff_token(staff) if staff is not None else None)
        claims = self.authorizer.claims(f"Bearer {bearer}" if bearer else None)
        if claims is None:
            return ApiResponse(status=401, body=unauthorized_body(), headers={"content-type": "application/json"})
        origin = self.origin_verify if via_cloudfront else None
        event = http_event(
            method, path, body, raw_body=raw_body, headers=headers, query=query, claims=claims, origin_verify=origin
        )
        with self._captured():
            result = staff_api.lambda_handler(event, FakeLambdaContext(function_name="staff_api"))
        return _api_response(result)

    # --- the asynchronous path --------------------------------------------------------------------

    def run_dispatch(self) -> int:
        """Deliver the table's new stream records to the dispatch Lambda; returns how many it took."""
        with self._captured():
            taken = self.stream.poll()
        _trim_stream(self.stream)
        return taken

    def run_realizer(self) -> int:
        """Realize what is on the realize queue; returns how many jobs were answered."""
        answered = 0
        with self._captured():
            while (count := self.realizer.poll_once()) > 0:
                answered += count
        return answered

    def run_screen_function(self) -> int:
        """Deliver the screen queue to the screen Lambda as the event source mapping would."""
        import screen_reply

        handled = 0
        while True:
            messages = self.sqs.receive_message(
                QueueUrl=self.screen_queue.url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=0,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not messages:
                return handled
            with self._captured():
                try:
                    result = screen_reply.lambda_handler(
                        sqs_event(messages, self.screen_queue.arn), FakeLambdaContext(function_name="screen_reply")
                    )
                except Exception:
                    # As the event source mapping does: a failed invocation returns the whole batch.
                    result = {"batchItemFailures": [{"itemIdentifier": m["MessageId"]} for m in messages]}
            failed = {item["itemIdentifier"] for item in result.get("batchItemFailures", [])}
            for message in messages:
                if message["MessageId"] not in failed:
                    self.sqs.delete_message(QueueUrl=self.screen_queue.url, ReceiptHandle=message["ReceiptHandle"])
                    handled += 1
            if failed:
                return handled

    def run_sweeper(self) -> dict[str, Any]:
        """One scheduled run of the sweeper Lambda (EventBridge Scheduler's invocation); its summary."""
        import sweep_turns

        with self._captured():
            result: dict[str, Any] = sweep_turns.lambda_handler({}, FakeLambdaContext(function_name="sweep_turns"))
        return result

    def sweep_if_due(self) -> bool:
        """Run the sweeper when its schedule says so (every SWEEP_INTERVAL seconds of the stack's clock)."""
        now = self.clock.now_ms()
        if self.last_sweep_ms is not None and now - self.last_sweep_ms < SWEEP_INTERVAL * 1000:
            return False
        self.run_sweeper()
        self.last_sweep_ms = now
        return True

    def run_for(self, seconds: float, *, step: float = 30, realizer: bool = True) -> None:
        """Let `seconds` of the stack's time pass, `step` at a time, as AWS would run it: each step the
        stream and screen mappings deliver what is due and the worker realizes what is queued (not
        while `realizer` is False: an outage), and the sweeper runs every SWEEP_INTERVAL seconds."""
        end = self.clock.offset_ms + round(seconds * 1000)
        while True:
            while self.run_dispatch() or (realizer and self.run_realizer()) or self.run_screen_function():
                pass
            self.sweep_if_due()
            if self.clock.offset_ms >= end:
                return
            self.clock.offset_ms += min(round(step * 1000), end - self.clock.offset_ms)

    def metric_total(self, name: str) -> float:
        """The sum of every value of one EMF metric the functions logged (0 when none was)."""
        total = 0.0
        for line in self.log_lines:
            if f'"{name}"' not in line:
                continue
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "_aws" in record and name in record:
                values = record[name]
                total += sum(values) if isinstance(values, list) else values
        return total

    def realized_replies(self) -> dict[tuple[str, int], Any]:
        """Every RealizedReply sent to the screen queue so far, by (conversation id, turn id)."""
        from pydantic import ValidationError

        from dialogue.realize import RealizedReply

        replies = {}
        for message in self.sent_messages:
            if message["queue_url"] == self.screen_queue.url:
                try:
                    reply = RealizedReply.model_validate_json(message["body"])
                except ValidationError:  # a ReplyDeadline, or something a test sent
                    continue
                replies[(str(reply.job.conversation_id), reply.job.turn_id)] = reply
        return replies

    def drain(self) -> None:
        """Dispatch, realize and screen until nothing is left to do now (deadlines not yet due wait)."""
        while self.run_dispatch() or self.run_realizer() or self.run_screen_function():
            pass

    def advance(self, seconds: float) -> None:
        """Move the queues' clock forward: delays and visibility timeouts that end within it end now."""
        self.clock.offset_ms += int(seconds * 1000)

    def stored_turn(self, conversation_id: str, turn_id: int) -> dict[str, Any]:
        """A turn's record as the table keeps it, flags and all (the public API shows a resident less)."""
        from uuid import UUID

        from dialogue.aws.factory import get_store

        turn = get_store().get_turn(UUID(conversation_id), turn_id)
        if turn is None:
            raise KeyError(f"no turn {turn_id} in conversation {conversation_id}")
        record: dict[str, Any] = turn.model_dump(mode="json")
        return record

    def pending_turns(self) -> list[tuple[str, int]]:
        """(conversation id, turn id) of every TURN item still pending, read from the table."""
        pending = []
        for item in self.table_items():
            sort_key = item["sk"]["S"]
            turn = item["pk"]["S"].startswith("CONV#") and sort_key.startswith("TURN#") and "#REPLY" not in sort_key
            if turn and item["status"]["S"] == "pending":
                pending.append((item["pk"]["S"].removeprefix("CONV#"), int(sort_key.removeprefix("TURN#"))))
        return sorted(pending)

    # --- inspection, for audits and tests ----------------------------------------------------------

    def table_items(self, table_name: str = TABLE_NAME) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for page in self.dynamodb.get_paginator("scan").paginate(TableName=table_name):
            items.extend(page["Items"])
        return items

    @contextlib.contextmanager
    def _captured(self) -> Iterator[None]:
        """Capture what the handlers and the worker print: their Powertools logs and the metrics."""
        from dialogue.aws.observability import logger
        from realizer.logs import log

        stream = _LineCapture(self.log_lines)
        handlers = [logger.registered_handler, log.registered_handler]
        previous = [handler.setStream(stream) for handler in handlers]  # type: ignore[attr-defined]
        try:
            with contextlib.redirect_stdout(stream):
                yield
        finally:
            for handler, earlier in zip(handlers, previous, strict=True):
                handler.setStream(earlier)  # type: ignore[attr-defined]


def unauthorized_body() -> dict[str, str]:
    """The 401 for a request the JWT authorizer refuses, in the APIs' error shape. (API Gateway's own body
    is {"message": "Unauthorized"}; a client goes by the status.)"""
    return {
        "error": "NotSignedIn",
        "message": "Sign in as desk staff: the bearer token is missing, expired, or not one this desk issued.",
    }


def _api_response(result: dict[str, Any]) -> ApiResponse:
    text = result.get("body") or ""
    return ApiResponse(
        status=int(result["statusCode"]),
        body=json.loads(text) if text else None,
        headers={key.lower(): value for key, value in (result.get("headers") or {}).items()},
    )


def _trim_stream(mapping: StreamMapping) -> None:
    """Drop the stream records the mapping has read past, as DynamoDB drops records after 24 hours.

    moto keeps every record, and copies the whole table with them for each transaction it runs (to undo
    a cancelled one), so a long `serve` or fuzz run would slow down with every write; here the copy
    holds only records the mapping has yet to read. Sequence numbers are unchanged.
    """
    from moto.core import DEFAULT_ACCOUNT_ID  # type: ignore[attr-defined]
    from moto.dynamodb.models import dynamodb_backends

    shard = dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION].tables[TABLE_NAME].stream_shard
    if shard is None:
        return
    kind, sequence = mapping.positions.get(shard.id, ("TRIM_HORIZON", ""))
    if kind == "TRIM_HORIZON":
        return
    first_unread = int(sequence) + (1 if kind == "AFTER_SEQUENCE_NUMBER" else 0)
    read = min(max(first_unread - shard.starting_sequence_number, 0), len(shard.items))
    if read:
        del shard.items[:read]
        shard.starting_sequence_number += read


def _dispatch_handler(event: dict[str, Any]) -> dict[str, Any]:
    import dispatch_turn

    result: dict[str, Any] = dispatch_turn.lambda_handler(event, FakeLambdaContext(function_name="dispatch_turn"))
    return result


def _create_queue(sqs: Any, name: str, dlq_arn: str | None = None, visibility_timeout: int = 30) -> Queue:
    attributes = {"VisibilityTimeout": str(visibility_timeout)}
    if dlq_arn:
        attributes["RedrivePolicy"] = json.dumps(
            {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(MAX_RECEIVE_COUNT)}
        )
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return Queue(url=url, arn=arn)


def create_resources(dynamodb: Any, sqs: Any) -> dict[str, Queue]:
    """The table and queues as template.yaml declares them (keys, queue index, stream, TTL, DLQs)."""
    from dialogue.aws.table import OPEN_QUEUE, OPEN_QUEUE_INDEX, PENDING_TURN, PENDING_TURN_INDEX, QUEUE_INDEX

    dynamodb.create_table(
        TableName=TABLE_NAME,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "queue", "AttributeType": "S"},
            {"AttributeName": "open_queue", "AttributeType": "S"},
            {"AttributeName": "queued_at", "AttributeType": "S"},
            {"AttributeName": PENDING_TURN, "AttributeType": "S"},
            {"AttributeName": "created_at", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": QUEUE_INDEX,
                "KeySchema": [
                    {"AttributeName": "queue", "KeyType": "HASH"},
                    {"AttributeName": "queued_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": OPEN_QUEUE_INDEX,
                "KeySchema": [
                    {"AttributeName": OPEN_QUEUE, "KeyType": "HASH"},
                    {"AttributeName": "queued_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": PENDING_TURN_INDEX,
                "KeySchema": [
                    {"AttributeName": PENDING_TURN, "KeyType": "HASH"},
                    {"AttributeName": "created_at", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
        ],
        BillingMode="PAY_PER_REQUEST",
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"},
    )
    dynamodb.update_time_to_live(
        TableName=TABLE_NAME, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
    )
    realize_dlq = _create_queue(sqs, "devstack-realize-dlq")
    screen_dlq = _create_queue(sqs, "devstack-screen-dlq")
    return {
        "dispatch_failures": _create_queue(sqs, "devstack-dispatch-failures"),
        "realize_dlq": realize_dlq,
        "screen_dlq": screen_dlq,
        "realize_queue": _create_queue(sqs, "devstack-realize", realize_dlq.arn, REALIZE_VISIBILITY_TIMEOUT),
        "screen_queue": _create_queue(sqs, "devstack-screen", screen_dlq.arn, SCREEN_VISIBILITY_TIMEOUT),
    }


def create_audit_bucket(s3: Any, bucket: str = AUDIT_BUCKET) -> None:
    """The audit bucket as template.yaml declares it: Object Lock (so versioning) with a default COMPLIANCE
    retention, public access blocked, encrypted. moto keeps a locked version from deletion as S3 does."""
    s3.create_bucket(Bucket=bucket, ObjectLockEnabledForBucket=True)
    s3.put_object_lock_configuration(
        Bucket=bucket,
        ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": AUDIT_RETENTION_DAYS}},
        },
    )
    s3.put_public_access_block(
        Bucket=bucket,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    s3.put_bucket_encryption(
        Bucket=bucket,
        ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
        },
    )


@functools.cache
def _service_models() -> Loader:
    """One botocore loader for every local stack in this process: it reads each service's model files
    once and keeps them (botocore's own instance cache), where a fresh session's loader reads them again."""
    return create_loader()


@contextlib.contextmanager
def local_stack(
    realizer: str = "template",
    engine: Any = None,
    *,
    model: str | None = None,
    revision: str | None = None,
    start: datetime | None = None,
    origin_verify: str | None = LOCAL_ORIGIN_VERIFY,
) -> Iterator[LocalStack]:
    """Start moto, create the resources, point the handlers at them, and yield the stack.

    `realizer` names the engine (see devstack.realizers), with `model` and `revision` for the model
    engines; `engine` passes one already built. With `start`, the clock stands at that time until
    advanced (QueueClock). The turn and staff handlers refuse a request whose X-Origin-Verify header does
    not hold `origin_verify` (ORIGIN_VERIFY, the local stand-in for the deployed functions' secret), as
    the deployed functions do; call_api and call_staff_api add it, as CloudFront does (`devstack serve`
    plays CloudFront with its own value). With None, no value is set and every API request is refused.
    """
    from devstack.realizers import build_realizer
    from dialogue.aws.factory import reset_caches
    from dialogue.aws.turns import PENDING_TURN_INSERTS
    from realizer.worker import RealizerWorker

    labels: dict[str, str] = {}
    engine = engine if engine is not None else build_realizer(realizer, labels, model=model, revision=revision)
    set_here = (
        *_ENVIRONMENT,
        "REALIZE_QUEUE_URL",
        "SCREEN_QUEUE_URL",
        "DISPATCH_FAILURE_QUEUE_URL",
        "CONTACT_KEY_ID",
        ORIGIN_VERIFY,
        ORIGIN_VERIFY_SECRET_ARN,
    )
    saved = {name: os.environ.get(name) for name in set_here}
    os.environ.update(_ENVIRONMENT)
    os.environ.pop(ORIGIN_VERIFY_SECRET_ARN, None)
    if origin_verify is not None:
        os.environ[ORIGIN_VERIFY] = origin_verify
    else:
        os.environ.pop(ORIGIN_VERIFY, None)
    sent: list[dict[str, str]] = []
    clock = QueueClock(start)
    try:
        with mock_aws(), clock.installed(), light_transaction_snapshots(), symmetric_keys_share_one_unused_rsa_key():
            # A fresh default session, so the hook below reaches every client the handlers create; its
            # service models come from the loader every stack in this process shares (read once, not per
            # stack: about a fifth of a stack's start).
            boto3.setup_default_session(region_name=REGION)
            boto3.DEFAULT_SESSION._session.register_component("data_loader", _service_models())  # type: ignore[union-attr]
            faults = FaultInjector()
            faults.install(boto3.DEFAULT_SESSION.events)  # type: ignore[union-attr]
            reads = ItemReads()
            reads.install(boto3.DEFAULT_SESSION.events)  # type: ignore[union-attr]
            boto3.DEFAULT_SESSION.events.register(  # type: ignore[union-attr]
                "provide-client-params.sqs.SendMessageBatch",
                lambda params, **_: sent.extend(
                    {"queue_url": params["QueueUrl"], "body": entry["MessageBody"]} for entry in params["Entries"]
                ),
            )
            boto3.DEFAULT_SESSION.events.register(  # type: ignore[union-attr]
                "provide-client-params.sqs.SendMessage",
                lambda params, **_: sent.append({"queue_url": params["QueueUrl"], "body": params["MessageBody"]}),
            )
            dynamodb = boto3.client("dynamodb", region_name=REGION)
            sqs = boto3.client("sqs", region_name=REGION)
            queues = create_resources(dynamodb, sqs)
            s3 = boto3.client("s3", region_name=REGION)
            create_audit_bucket(s3)
            service_session = boto3.session.Session(region_name=REGION)
            service_session._session.register_component("data_loader", _service_models())
            service_sqs = service_session.client("sqs")
            os.environ["REALIZE_QUEUE_URL"] = queues["realize_queue"].url
            os.environ["SCREEN_QUEUE_URL"] = queues["screen_queue"].url
            os.environ["DISPATCH_FAILURE_QUEUE_URL"] = queues["dispatch_failures"].url
            # The contact form's key (template.yaml's ContactKey): moto's KMS seals and opens for real.
            kms = boto3.client("kms", region_name=REGION)
            os.environ["CONTACT_KEY_ID"] = kms.create_key(Description="devstack contact form")["KeyMetadata"]["KeyId"]
            reset_caches()
            worker = RealizerWorker(
                sqs,
                realize_queue_url=queues["realize_queue"].url,
                screen_queue_url=queues["screen_queue"].url,
                engine=engine,
                wait_seconds=0,
                visibility_timeout=REALIZE_VISIBILITY_TIMEOUT,
            )
            stream = StreamMapping(
                # moto answers the regional endpoint, not the account-based one botocore prefers for an ARN.
                streams=boto3.client(
                    "dynamodbstreams", region_name=REGION, config=Config(account_id_endpoint_mode="disabled")
                ),
                stream_arn=dynamodb.describe_table(TableName=TABLE_NAME)["Table"]["LatestStreamArn"],
                handler=_dispatch_handler,
                filter_pattern=PENDING_TURN_INSERTS,
                batch_size=STREAM_BATCH_SIZE,
                max_record_age_seconds=STREAM_MAX_RECORD_AGE,
                clock=lambda: clock.now_ms() / 1000,
                # Lambda's service sends the on-failure record, outside the faults injected into the functions.
                on_failure=lambda record: service_sqs.send_message(
                    QueueUrl=queues["dispatch_failures"].url, MessageBody=json.dumps(record)
                ),
            )
            issuer = LocalIssuer.load()
            yield LocalStack(
                dynamodb=dynamodb,
                sqs=sqs,
                stream=stream,
                clock=clock,
                faults=faults,
                reads=reads,
                realizer=worker,
                issuer=issuer,
                authorizer=JwtAuthorizer(issuer.jwks()),
                realize_queue=queues["realize_queue"],
                screen_queue=queues["screen_queue"],
                realize_dlq=queues["realize_dlq"],
                screen_dlq=queues["screen_dlq"],
                dispatch_failures=queues["dispatch_failures"],
                sent_messages=sent,
                labels=labels,
                s3=s3,
                origin_verify=origin_verify,
            )
    finally:
        reset_caches()
        boto3.DEFAULT_SESSION = None
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
