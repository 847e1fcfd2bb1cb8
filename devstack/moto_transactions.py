"""moto's DynamoDB transactions, undone from a snapshot of what they touch rather than the whole table.

To undo a cancelled TransactWriteItems, moto deep-copies each table the transaction names, once per
item, before it starts: with every item and every stream record in it. The cost grows with the table,
so a long `devstack serve` session or a 10,000-request fuzz run slows from milliseconds a turn to
seconds. `light_transaction_snapshots()` hands moto, instead, a table that shares everything with the
live one except what a transaction can change: the key maps (a put or delete changes them), a deep
copy of each item the transaction names (an update changes it in place), and the stream's record list.
Undoing with it gives the same table as undoing with a full copy; tests/integration/test_devstack.py
checks a cancelled transaction that updated, put and deleted leaves items and stream as they were.
"""

from __future__ import annotations

import contextlib
import copy
import threading
from collections import defaultdict
from collections.abc import Iterator
from typing import Any
from unittest import mock

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

_current = threading.local()


def _named_keys(table: Table, transact_items: list[dict[str, Any]]) -> list[tuple[DynamoType, DynamoType | None]]:
    """The (hash, range) keys of the items a transaction names in `table`."""
    keys = []
    for entry in transact_items:
        ((_, operation),) = entry.items()
        if operation.get("TableName") != table.name:
            continue
        attributes = operation.get("Key") or operation.get("Item") or {}
        hash_value = DynamoType(attributes[table.hash_key_attr])
        range_value = DynamoType(attributes[table.range_key_attr]) if table.range_key_attr else None
        keys.append((hash_value, range_value))
    return keys


def snapshot(table: Table, transact_items: list[dict[str, Any]]) -> Table:
    """A table to restore if the transaction is cancelled (see the module's docstring)."""
    saved = copy.copy(table)
    saved.items = defaultdict(dict)
    for hash_value, stored in table.items.items():
        saved.items[hash_value] = dict(stored) if table.range_key_attr else stored
    for hash_value, range_value in _named_keys(table, transact_items):
        if range_value is None:
            if hash_value in table.items:
                saved.items[hash_value] = copy.deepcopy(table.items[hash_value])
        elif range_value in table.items.get(hash_value, {}):
            saved.items[hash_value][range_value] = copy.deepcopy(table.items[hash_value][range_value])
    if table.stream_shard is not None:
        shard = copy.copy(table.stream_shard)
        shard.items = list(table.stream_shard.items)
        shard.table = saved
        saved.stream_shard = shard
    return saved


class _CopyModule:
    """Stands in for the `copy` module inside moto's DynamoDB models: a table copied during a
    transaction is snapshotted; anything else is copied as usual."""

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)

    @staticmethod
    def deepcopy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        transact_items = getattr(_current, "transact_items", None)
        if isinstance(value, Table) and transact_items is not None:
            return snapshot(value, transact_items)
        return copy.deepcopy(value, memo)


@contextlib.contextmanager
def light_transaction_snapshots() -> Iterator[None]:
    original = DynamoDBBackend.transact_write_items

    def transact_write_items(self: DynamoDBBackend, transact_items: list[dict[str, Any]]) -> None:
        _current.transact_items = transact_items
        try:
            original(self, transact_items)
        finally:
            _current.transact_items = None

    with (
        mock.patch.object(dynamodb_models, "copy", _CopyModule()),
        mock.patch.object(DynamoDBBackend, "transact_write_items", transact_write_items),
    ):
        yield
