"""How many DynamoDB items a piece of work reads, counted on every client of the local stack.

`ItemReads` hooks botocore's `after-call` event for DynamoDB on the session every client of the stack and
of the handlers is made from (as devstack.faults does), and adds up, per answered read request, the items
DynamoDB read for it: a Query's or Scan's ScannedCount (the items it examined, a filter's rejects and a
COUNT query's counted items included: what DynamoDB bills), a GetItem's item, a BatchGetItem's and a
TransactGetItems' items. Writes are not counted. `stack.reads.counting()` counts what runs inside it.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_HOOK_ID = "devstack-item-reads"


@dataclass
class ReadCount:
    """Items read, read requests, and items read per operation (Query, GetItem, ...)."""

    items: int = 0
    requests: int = 0
    by_operation: Counter[str] = field(default_factory=Counter)

    def add(self, operation: str, items: int) -> None:
        self.items += items
        self.requests += 1
        self.by_operation[operation] += items


def items_read(operation: str, parsed: dict[str, Any]) -> int | None:
    """The items DynamoDB read to answer `operation` (None: not a read, or it failed)."""
    if "Error" in parsed:
        return None
    if operation in ("Query", "Scan"):
        return int(parsed.get("ScannedCount", parsed.get("Count", len(parsed.get("Items", [])))))
    if operation == "GetItem":
        return 1 if "Item" in parsed else 0
    if operation == "BatchGetItem":
        return sum(len(items) for items in parsed.get("Responses", {}).values())
    if operation == "TransactGetItems":
        return sum(1 for response in parsed.get("Responses", []) if response.get("Item"))
    return None


class ItemReads:
    """The counts in force; `install` hooks them into a botocore event emitter (before any client exists)."""

    def __init__(self) -> None:
        self._open: list[ReadCount] = []

    def install(self, events: Any) -> None:
        events.register("after-call.dynamodb", self._after_call, unique_id=_HOOK_ID)

    @contextlib.contextmanager
    def counting(self) -> Iterator[ReadCount]:
        """A count of the items read by every DynamoDB call made inside the block."""
        count = ReadCount()
        self._open.append(count)
        try:
            yield count
        finally:
            self._open.remove(count)

    def _after_call(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        if not self._open:
            return
        items = items_read(model.name, parsed)
        if items is None:
            return
        for count in self._open:
            count.add(model.name, items)
