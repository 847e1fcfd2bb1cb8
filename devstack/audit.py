"""The privacy audit: everything a run kept, written out so anyone can check it holds no user text.

`replay --audit-dir DIR` and `serve --audit-dir DIR` write three JSON-lines files: every DynamoDB
item of the table (at the end), every SQS message body sent by any component and every log line the
handlers and the worker printed (as they happen, for a server that runs a long time).
"""

from __future__ import annotations

import itertools
import json
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from devstack.stack import TABLE_NAME, LocalStack

ITEMS, MESSAGES, LOGS = AUDIT_FILES = ("dynamodb_items.jsonl", "sqs_messages.jsonl", "log_lines.jsonl")


class AuditWriter:
    """Appends messages and log lines as a run goes, and the tables' items when it ends."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.counts = dict.fromkeys(AUDIT_FILES, 0)
        for name in AUDIT_FILES:
            (directory / name).write_text("", encoding="utf-8")

    def _append(self, name: str, records: Iterable[dict[str, Any]]) -> None:
        with (self.directory / name).open("a", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
                self.counts[name] += 1

    def add_messages(self, messages: Iterable[dict[str, str]]) -> None:
        self._append(MESSAGES, ({"queue_url": m["queue_url"], "body": m["body"]} for m in messages))

    def add_log_lines(self, lines: Iterable[str]) -> None:
        self._append(LOGS, ({"line": line} for line in lines))

    def add_items(self, stack: LocalStack) -> None:
        self._append(ITEMS, ({"table": TABLE_NAME, "item": item} for item in stack.table_items(TABLE_NAME)))


def write_audit(stack: LocalStack, directory: Path) -> dict[str, int]:
    """Write the audit files of a finished run into `directory`; returns how many records each holds."""
    writer = AuditWriter(directory)
    writer.add_items(stack)
    writer.add_messages(stack.sent_messages)
    writer.add_log_lines(stack.log_lines)
    return writer.counts


def approved_wording(pack_dir: Path) -> str:
    """The pack's own files and every fixed text it can render, lower-cased: what the system, not the
    user, wrote. A user's words that this also holds (a program's name) are not a leak when kept."""
    from dialogue.pack import get_pack
    from dialogue.replies import fixed_reply
    from dialogue.state import DialogueState

    pack = get_pack(pack_dir)
    domain = json.dumps(tomllib.loads((pack_dir / "domain.toml").read_text(encoding="utf-8")))
    rendered = [
        fixed_reply(action, DialogueState(slots=dict(zip(pack.frame.slot_names, values, strict=True))), pack)
        for action in pack.actions
        for values in itertools.product(*(slot.values for slot in pack.frame.slots))
    ]
    return "\n".join([domain, (pack_dir / "handbook.csv").read_text(encoding="utf-8"), *rendered]).lower()
