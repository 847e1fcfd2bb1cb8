"""The desk's figures on the conversation table: counters in the `STATS` partition (TOTAL, and
`DAY#<YYYY-MM-DD>` per UTC day of decisions, which expire), added to (`ADD`) in the transaction of each
decision and close (dialogue.aws.queues); open work counted on the open-queue index. Reading the figures
takes four requests, however long the history (dialogue.desk's statistics)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, time, timedelta
from typing import Any

from dialogue.actions import Queue
from dialogue.aws.table import OPEN_QUEUE, OPEN_QUEUE_INDEX, DynamoTable, store_errors, ttl_epoch
from dialogue.desk import CounterAdds
from dialogue.desk_rules import DeskCounters

STATS_PK = "STATS"
"""The desk's counters (dialogue.desk's statistics): sort key TOTAL, since counting began, and
`DAY#<YYYY-MM-DD>`, one item per UTC day that had a decision (closes are counted in TOTAL only)."""
STATS_TOTAL_SK = "TOTAL"
STATS_DAY_PREFIX = "DAY#"
STATS_DAY_RETENTION = timedelta(days=90)
"""A day's counters expire this long after the day began; the figures show the last 30 days that had any."""
STATS_DAYS_SHOWN = 30


class DeskFigures(DynamoTable):
    """The desk's counters and its open-work counts (it needs the table only)."""

    def open_count(self, queue: Queue) -> int:
        """How many items of `queue` wait for a person: a COUNT query on the open-queue index, which holds
        only them (so the count costs what the open work is, not what the history is)."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": OPEN_QUEUE_INDEX,
            "KeyConditionExpression": "#queue = :queue",
            "ExpressionAttributeNames": {"#queue": OPEN_QUEUE},
            "ExpressionAttributeValues": self._item({":queue": str(queue)}),
            "Select": "COUNT",
        }
        count = 0
        while True:
            with store_errors():
                response = self._client.query(**query)
            count += int(response.get("Count", 0))
            if "LastEvaluatedKey" not in response:
                return count
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def desk_counters(self, days: int = STATS_DAYS_SHOWN) -> DeskCounters:
        """What the desk's figures are read from, in four requests whatever the history: the TOTAL counters
        (GetItem), the last `days` days that had a decision (one Query, newest first, `days` items
        at most), and the two open-queue counts."""
        with store_errors():
            total = self._client.get_item(
                TableName=self._table,
                Key=self._item({"pk": STATS_PK, "sk": STATS_TOTAL_SK}),
                ConsistentRead=True,
            ).get("Item")
            recent = self._client.query(
                TableName=self._table,
                KeyConditionExpression="pk = :pk AND begins_with(sk, :day)",
                ExpressionAttributeValues=self._item({":pk": STATS_PK, ":day": STATS_DAY_PREFIX}),
                ScanIndexForward=False,
                Limit=days,
                ConsistentRead=True,
            ).get("Items", [])
        per_day = [self._counts(item) for item in reversed(recent)]
        return DeskCounters(
            total=self._counts(total or {})[1],
            days=[(datetime.strptime(day, f"{STATS_DAY_PREFIX}%Y-%m-%d").date(), counts) for day, counts in per_day],
            pending_reviews=self.open_count(Queue.REVIEW),
            open_handoffs=self.open_count(Queue.HANDOFF),
        )

    def _counts(self, item: Mapping[str, Any]) -> tuple[str, dict[str, int]]:
        """A counter item's sort key and its counters."""
        plain = self._plain(item)
        sort_key = str(plain.pop("sk", ""))
        return sort_key, {name: int(value) for name, value in plain.items() if name not in ("pk", "expires_at")}

    def added(self, adds: CounterAdds) -> list[dict[str, Any]]:
        """Transaction items that make `adds` (dialogue.desk): 1 added to each of its counters in the TOTAL
        item and, where it names a day, in that day's item, which expires STATS_DAY_RETENTION after the day
        began."""
        placeholders = {f"#c{number}": name for number, name in enumerate(adds.names)}
        adding = "ADD " + ", ".join(f"{placeholder} :one" for placeholder in placeholders)

        def update(sort_key: str, expression: str, values: dict[str, Any]) -> dict[str, Any]:
            return {
                "Update": {
                    "TableName": self._table,
                    "Key": self._item({"pk": STATS_PK, "sk": sort_key}),
                    "UpdateExpression": expression,
                    "ExpressionAttributeNames": placeholders,
                    "ExpressionAttributeValues": self._item(values),
                }
            }

        total = update(STATS_TOTAL_SK, adding, {":one": 1})
        if adds.day is None:
            return [total]
        day_key = f"{STATS_DAY_PREFIX}{adds.day.isoformat()}"
        expires = ttl_epoch(datetime.combine(adds.day, time(), UTC) + STATS_DAY_RETENTION)
        return [total, update(day_key, f"SET expires_at = :expires {adding}", {":one": 1, ":expires": expires})]
