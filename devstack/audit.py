"""The privacy audit: everything a run kept, written out so anyone can check it holds no user text.

`replay --audit-dir DIR` writes three JSON-lines files: every DynamoDB item of both tables, every SQS
message body sent by any component, and every log line the handlers and the worker printed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devstack.stack import IDEMPOTENCY_TABLE_NAME, TABLE_NAME, LocalStack

AUDIT_FILES = ("dynamodb_items.jsonl", "sqs_messages.jsonl", "log_lines.jsonl")


def write_audit(stack: LocalStack, directory: Path) -> dict[str, int]:
    """Write the audit files into `directory`; returns how many records each holds."""
    directory.mkdir(parents=True, exist_ok=True)
    items: list[dict[str, Any]] = [
        {"table": table, "item": item}
        for table in (TABLE_NAME, IDEMPOTENCY_TABLE_NAME)
        for item in stack.table_items(table)
    ]
    messages: list[dict[str, Any]] = [{"queue_url": m["queue_url"], "body": m["body"]} for m in stack.sent_messages]
    logs: list[dict[str, Any]] = [{"line": line} for line in stack.log_lines]
    counts = {}
    for name, records in zip(AUDIT_FILES, (items, messages, logs), strict=True):
        with (directory / name).open("w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        counts[name] = len(records)
    return counts
