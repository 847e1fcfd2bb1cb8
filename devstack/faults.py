"""AWS calls that fail on cue, for the fault tests: throttling, server errors, timeouts, a response
lost after the call took effect, transaction conflicts and conditional failures.

A `FaultInjector` hooks botocore's event system on the session every client of the local stack and
of the handlers is made from. A cue names an operation (`dynamodb.TransactWriteItems`,
`sqs.SendMessage`, ...), a fault, how many matching calls to let through first and how many to
fail. Most faults answer instead of the service (`before-call`), with the error response the
service would send, so botocore raises the same modeled exception; `LOST_RESPONSE` lets the call
take effect and then times out (`after-call`), the ambiguous failure a caller cannot see through.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError

_HOOK_ID = "devstack-faults"


class Fault(StrEnum):
    THROTTLING = "throttling"
    INTERNAL_ERROR = "internal_error"  # HTTP 500
    UNAVAILABLE = "unavailable"  # HTTP 503
    TIMEOUT = "timeout"  # the connection timed out: the call never reached the service
    LOST_RESPONSE = "lost_response"  # the call took effect, then reading its response timed out
    TRANSACTION_CONFLICT = "transaction_conflict"  # another transaction held an item
    CONDITIONAL_FAILURE = "conditional_failure"  # a condition did not hold (nothing written)


# The error each fault answers with: (HTTP status, code by service). A transaction's conflicts and
# conditional failures arrive as TransactionCanceledException with a reason per item.
_ERRORS: dict[Fault, tuple[int, dict[str, str]]] = {
    Fault.THROTTLING: (400, {"dynamodb": "ThrottlingException", "sqs": "ThrottlingException", "s3": "SlowDown"}),
    Fault.INTERNAL_ERROR: (500, {"dynamodb": "InternalServerError", "sqs": "InternalError", "s3": "InternalError"}),
    Fault.UNAVAILABLE: (
        503,
        {"dynamodb": "ServiceUnavailable", "sqs": "ServiceUnavailable", "s3": "ServiceUnavailable"},
    ),
    Fault.CONDITIONAL_FAILURE: (400, {"dynamodb": "ConditionalCheckFailedException"}),
}
_CANCELLATION_CODE = {
    Fault.TRANSACTION_CONFLICT: "TransactionConflict",
    Fault.CONDITIONAL_FAILURE: "ConditionalCheckFailed",
    Fault.THROTTLING: "ThrottlingError",
}


@dataclass
class Cue:
    """Fail `times` calls of `operation` with `fault`, after letting `skip` of them through."""

    operation: str
    fault: Fault
    skip: int = 0
    times: int = 1
    seen: int = 0
    fired: int = 0

    def due(self) -> bool:
        self.seen += 1
        if self.seen > self.skip and self.fired < self.times:
            self.fired += 1
            return True
        return False


class FaultInjector:
    """The cues in force; `install` hooks them into a botocore event emitter (before any client exists)."""

    def __init__(self) -> None:
        self.cues: list[Cue] = []

    def inject(self, operation: str, fault: Fault, *, skip: int = 0, times: int = 1) -> Cue:
        service, _, name = operation.partition(".")
        if service not in ("dynamodb", "sqs", "s3") or not name:
            raise ValueError("name a DynamoDB, SQS or S3 operation as service.OperationName, e.g. sqs.SendMessage")
        transaction = name.startswith("Transact")
        if fault is Fault.TRANSACTION_CONFLICT and not transaction:
            raise ValueError("only a transaction meets a transaction conflict")
        if fault is Fault.CONDITIONAL_FAILURE and service != "dynamodb":
            raise ValueError("only a DynamoDB write has conditions")
        cue = Cue(operation=operation, fault=Fault(fault), skip=skip, times=times)
        self.cues.append(cue)
        return cue

    def clear(self) -> None:
        self.cues.clear()

    def install(self, events: Any) -> None:
        events.register("before-call", self._before_call, unique_id=f"{_HOOK_ID}-before")
        events.register("after-call", self._after_call, unique_id=f"{_HOOK_ID}-after")

    # --- the hooks --------------------------------------------------------------------------------

    def _due(self, event_name: str, *, lost: bool) -> Cue | None:
        operation = event_name.split(".", 1)[1]  # before-call.dynamodb.PutItem -> dynamodb.PutItem
        for cue in self.cues:
            if cue.operation == operation and (cue.fault is Fault.LOST_RESPONSE) == lost and cue.due():
                return cue
        return None

    def _before_call(self, event_name: str, model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        cue = self._due(event_name, lost=False)
        if cue is None:
            return None
        if cue.fault is Fault.TIMEOUT:
            raise ConnectTimeoutError(endpoint_url=f"https://{cue.operation.split('.')[0]}.fault.invalid")
        return _error_response(cue, model.name)

    def _after_call(self, event_name: str, **_: Any) -> None:
        cue = self._due(event_name, lost=True)
        if cue is not None:
            raise ReadTimeoutError(endpoint_url=f"https://{cue.operation.split('.')[0]}.fault.invalid")


def _error_response(cue: Cue, operation_name: str) -> tuple[AWSResponse, dict[str, Any]]:
    service = cue.operation.split(".")[0]
    parsed: dict[str, Any]
    if operation_name in ("TransactWriteItems", "TransactGetItems") and cue.fault in _CANCELLATION_CODE:
        status = 400
        reasons = [{"Code": _CANCELLATION_CODE[cue.fault]}, {"Code": "None"}]
        parsed = {
            "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled (injected)."},
            "CancellationReasons": reasons,
        }
    else:
        status, codes = _ERRORS[cue.fault]
        parsed = {"Error": {"Code": codes[service], "Message": f"{cue.fault} (injected)."}}
    parsed["ResponseMetadata"] = {"HTTPStatusCode": status, "HTTPHeaders": {}, "RetryAttempts": 0}
    return AWSResponse(f"https://{service}.fault.invalid/", status, {}, io.BytesIO(b"")), parsed
