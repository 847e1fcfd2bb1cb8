"""Client retries: a turn posted again with the same `Idempotency-Key` gets the first answer (Powertools
idempotency, persisted in DynamoDB), and never a second turn (the store's REQUEST item, written in the
turn's own transaction, covers an attempt whose answer was lost after its write).

The key is the conversation id and the client's key, never the text: the idempotency table holds a
hash of those two and the answer sent (ids, action, fixed reply), nothing the user typed. A failed
attempt leaves no record, so the client may retry it with the same key.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any, TypeVar

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from dialogue.observability import metrics
from dialogue.settings import get_settings

IDEMPOTENCY_HEADER = "idempotency-key"
KEY_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
# Long enough for any client retry; the records expire by TTL.
RECORD_LIFETIME_SECONDS = 24 * 3600

Answer = TypeVar("Answer", bound=BaseModel)


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


def enabled() -> bool:
    """Whether an idempotency table is configured (every deployed turn API has one)."""
    return bool(get_settings().idempotency_table_name)


@lru_cache(maxsize=1)
def _persistence() -> DynamoDBPersistenceLayer:
    # A client of the default session, like the store's: one set of connections and settings per process.
    return DynamoDBPersistenceLayer(
        table_name=get_settings().idempotency_table_name, boto3_client=boto3.client("dynamodb")
    )


_decorated: dict[Callable[..., Any], Callable[..., Any]] = {}


def idempotent(function: Callable[..., Answer], answer: type[Answer]) -> Callable[..., Answer]:
    """`function`, run once per `request` keyword argument (a model with `conversation_id` and
    `idempotency_key`), its `answer` model stored and returned to every retry.

    This is Powertools' `idempotent_function`, applied when first needed rather than at import: its
    persistence layer needs the settings and a client, which a module must not make at import (the
    local stack swaps both).
    """
    if function not in _decorated:
        _decorated[function] = idempotent_function(
            function,
            data_keyword_argument="request",
            config=CONFIG,
            persistence_store=_persistence(),
            output_serializer=PydanticSerializer(answer),
        )
    decorated: Callable[..., Answer] = _decorated[function]
    return decorated


def reset() -> None:
    _decorated.clear()
    _persistence.cache_clear()
