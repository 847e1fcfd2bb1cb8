"""Client retries: a turn posted again with the same `Idempotency-Key` gets the first answer and
creates no second turn (Powertools idempotency, persisted in DynamoDB).

The key is the conversation id and the client's key, never the text: the idempotency table holds a
hash of those two and the answer sent (ids, action, fixed reply), nothing the user typed. A failed
attempt leaves no record, so the client may retry it with the same key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from dialogue.observability import metrics
from dialogue.settings import get_settings

IDEMPOTENCY_HEADER = "idempotency-key"
KEY_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# Long enough for any client retry; the records expire by TTL.
RECORD_LIFETIME_SECONDS = 24 * 3600

Answer = dict[str, Any]


def valid_key(key: str) -> bool:
    return KEY_PATTERN.fullmatch(key) is not None


def _count_replay(response: Any, idempotent_data: DataRecord) -> Any:
    """Called when a retry is answered from the record: count it, answer unchanged."""
    metrics.add_metric(name="IdempotentRetriesAnswered", unit=MetricUnit.Count, value=1)
    return response


CONFIG = IdempotencyConfig(
    event_key_jmespath="[conversation_id, idempotency_key]",
    raise_on_no_idempotency_key=True,
    expires_after_seconds=RECORD_LIFETIME_SECONDS,
    response_hook=_count_replay,
)


def register_lambda_context(context: LambdaContext) -> None:
    """Lets an in-progress record expire with the invocation if the function times out."""
    CONFIG.register_lambda_context(context)


@lru_cache(maxsize=1)
def _idempotent_runner() -> Callable[..., Answer]:
    config = CONFIG
    # A client of the default session, like the store's: one set of connections and settings per process.
    persistence = DynamoDBPersistenceLayer(
        table_name=get_settings().idempotency_table_name, boto3_client=boto3.client("dynamodb")
    )

    def run(*, request_key: dict[str, str], produce: Callable[[], Answer]) -> Answer:
        return produce()

    wrapped: Callable[..., Answer] = idempotent_function(
        run, data_keyword_argument="request_key", config=config, persistence_store=persistence
    )
    return wrapped


def idempotently(conversation_id: str, idempotency_key: str | None, produce: Callable[[], Answer]) -> Answer:
    """`produce()` once per (conversation, key); without a key, or without a table, just `produce()`."""
    if not idempotency_key or not get_settings().idempotency_table_name:
        return produce()
    runner = _idempotent_runner()
    return runner(request_key={"conversation_id": conversation_id, "idempotency_key": idempotency_key}, produce=produce)


def reset() -> None:
    _idempotent_runner.cache_clear()
