"""moto's DynamoDB transactions, undone from a snapshot of what they touch rather than the whole table.

To undo a cancelled TransactWriteItems, moto deep-copies each table the transaction names, once per
item, before it starts: with every item and every stream record in it. The cost grows with the table,
so a long `devstack serve` session or a 10,000-request fuzz run slows from milliseconds a turn to
seconds. `light_transaction_snapshots()` hands moto, instead, a table that shares everything with the
live one except what a transaction can change: the key maps (a put or delete changes them), a deep
copy of each item the transaction names (an update changes it in place), and the stream's record list.
Undoing with it gives the same table as undoing with a full copy; tests/integration/test_devstack.py
checks a cancelled transaction that updated, put and deleted leaves items and stream as they were.

It reaches into moto's internals (the `copy` module its DynamoDB models use, `transact_write_items`,
a table's `items` and `stream_shard`), because moto offers no setting or public hook for this: as of
moto 5.1.22 (pinned), 5.2.5 and the upstream source, `transact_write_items` deep-copies each table it
names, with no option. Without it, 300 conversations of four requests take 424 s instead of 32 s on devstack (each
request ~400 ms at 1,200 items and growing with the table), so the fuzz tier's thousands of requests
would not fit CI. moto is pinned (requirements-test.txt); where a release no longer copies through
its models' `copy` module or lacks `transact_write_items`, `light_transaction_snapshots` warns and leaves
moto as it is, and a table without the fields `snapshot` reads is copied whole: slower, not broken.
The test above is what shows a release that changed what a transaction touches.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import warnings
from collections import defaultdict
from collections.abc import Iterator
from typing import Any
from unittest import mock

import moto.dynamodb.models as dynamodb_models
from moto.dynamodb.models import DynamoDBBackend
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table

_current = threading.local()
# What `snapshot` reads of a table; a table without them (another moto release) is copied whole.
_TABLE_FIELDS = frozenset({"items", "stream_shard", "hash_key_attr", "range_key_attr", "name"})


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
        if isinstance(value, Table) and transact_items is not None and vars(value).keys() >= _TABLE_FIELDS:
            return snapshot(value, transact_items)
        return copy.deepcopy(value, memo)


def _moto_has_what_it_needs() -> bool:
    """Whether this moto's DynamoDB models still use the `copy` module and have `transact_write_items`."""
    return getattr(dynamodb_models, "copy", None) is copy and callable(
        getattr(DynamoDBBackend, "transact_write_items", None)
    )


@contextlib.contextmanager
def light_transaction_snapshots() -> Iterator[None]:
    """Within: moto's DynamoDB transactions undone from a light snapshot (see the module's note)."""
    if not _moto_has_what_it_needs():
        warnings.warn(
            "devstack.moto_transactions: this moto release changed what the light transaction snapshots "
            "patch; transactions keep moto's whole-table copies (slower as tables grow)",
            RuntimeWarning,
            stacklevel=3,
        )
        yield
        return
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
