"""The staff audit on the conversation table and in the WORM bucket, and a deployed audit's check.

`AUDIT#<conversation id>` partitions hold one link per claim, release, decision, reply, close, look at a
contact form or correction of the record, put once (`attribute_not_exists`) in the same transaction as
the change, and never updated (the template denies updates and deletes). The links of one turn are a hash
chain (dialogue.audit_chain): sort key `TURN#<turn:06d>#<seq:06d>`, each link holding the previous link's
hash (`prev_hash`) and its own (`hash`, SHA-256 of its canonical fields). The store reads the chain's
last link (one consistent Query) before it writes the next; a writer that raced it to the same sequence
number fails `attribute_not_exists`, and the staff member is asked to try again (StaffWriteConflict).
Once the transaction commits, each new link's JSON is also put, once (If-None-Match), in the audit bucket
under S3 Object Lock (AUDIT_BUCKET; `audit/<conversation id>/<turn:06d>/<seq:06d>.json`): the WORM copy a
rewritten table item is compared with (`verify_table_audit`). A failed copy is logged and counted
(AuditCopyFailed), never the staff request's failure. Links hold ids, a staff subject, codes and times:
never resident or staff text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from aws_lambda_powertools.metrics import MetricUnit
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError, ClientError

from dialogue import audit_chain
from dialogue.actions import Queue
from dialogue.aws.observability import logger, metrics
from dialogue.aws.table import DynamoTable, store_errors, stored_time, ttl_epoch
from dialogue.desk import StaffMember

AuditAction = Literal["claim", "release", "decision", "reply", "close", "read_contact", "correct_record"]
"""What a link records. `correct_record` keeps the slot's name as its reason and the new value as its outcome:
the pack's names, never text."""


class AuditLinks(DynamoTable):
    """The staff audit's links on the conversation table, and their WORM copies."""

    def __init__(
        self, *args: Any, audit_retention: timedelta, audit_s3: Any = None, audit_bucket: str = "", **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._audit_retention = audit_retention
        self._audit_s3 = audit_s3 if audit_bucket else None  # no bucket, no WORM copy
        self._audit_bucket = audit_bucket

    def audit_trail(self, conversation_id: UUID, turn_id: int) -> list[dict[str, Any]]:
        """One item's audit links, oldest first (one Query on its chain's sort-key prefix, page by page)."""
        links: list[dict[str, Any]] = []
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :chain)",
            "ExpressionAttributeValues": self._item(
                {":pk": audit_chain.audit_partition(conversation_id), ":chain": audit_chain.chain_prefix(turn_id)}
            ),
            "ConsistentRead": True,
        }
        while True:
            with store_errors():
                response = self._client.query(**query)
            links.extend(audit_chain.link_from_item(self._plain(item)) for item in response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return links
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def _last_link(self, conversation_id: UUID, turn_id: int) -> dict[str, Any] | None:
        """The item's newest audit link, read consistently (the one the next link follows)."""
        with store_errors():
            response = self._client.query(
                TableName=self._table,
                KeyConditionExpression="pk = :pk AND begins_with(sk, :chain)",
                ExpressionAttributeValues=self._item(
                    {":pk": audit_chain.audit_partition(conversation_id), ":chain": audit_chain.chain_prefix(turn_id)}
                ),
                ScanIndexForward=False,
                Limit=1,
                ConsistentRead=True,
            )
        items = response.get("Items", [])
        return audit_chain.link_from_item(self._plain(items[0])) if items else None

    def _audit(
        self,
        conversation_id: UUID,
        turn_id: int,
        queue: Queue,
        staff: StaffMember,
        now: datetime,
        action: AuditAction,
        outcome: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """The item's next audit link, put once: who, when, what, on which turn, chained to the link before
        it (read now). Never staff or resident text."""
        link = audit_chain.new_link(
            conversation_id,
            turn_id,
            self._last_link(conversation_id, turn_id),
            staff=staff.subject,
            action=action,
            queue=str(queue),
            outcome=outcome,
            reason=reason,
            at=stored_time(now),
            expires_at=ttl_epoch(now + self._audit_retention),
        )
        stored = {key: value for key, value in link.items() if key != "conversation_id"}
        return {
            "Put": {
                "TableName": self._table,
                "Item": self._item(
                    {
                        "pk": audit_chain.audit_partition(conversation_id),
                        "sk": audit_chain.link_sort_key(turn_id, link["seq"]),
                        **stored,
                    }
                ),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }

    def _copy_links(self, items: list[dict[str, Any]]) -> None:
        """After a commit: each audit link the transaction put, written once to the WORM bucket. A failure
        is logged (ids only) and counted, and the staff request goes on: the link is in the table."""
        if self._audit_s3 is None:
            return
        for entry in items:
            put = entry.get("Put", {})
            if not str(put.get("Item", {}).get("pk", {}).get("S", "")).startswith(audit_chain.AUDIT_PREFIX):
                continue
            link = audit_chain.link_from_item(self._plain(put["Item"]))
            key = audit_chain.object_key(link["conversation_id"], link["turn_id"], link["seq"])
            try:
                self._audit_s3.put_object(
                    Bucket=self._audit_bucket,
                    Key=key,
                    Body=audit_chain.link_document(link),
                    ContentType="application/json",
                    IfNoneMatch="*",
                )
            except (ClientError, BotoCoreError) as error:
                code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else None
                logger.warning(
                    "audit copy failed",
                    conversation_id=link["conversation_id"],
                    turn_id=link["turn_id"],
                    seq=link["seq"],
                    error=code or type(error).__name__,
                )
                metrics.add_metric(name="AuditCopyFailed", unit=MetricUnit.Count, value=1)


# --- reading a table and a bucket -------------------------------------------------------------------


@dataclass
class AuditRead:
    """What the readers found: the links, and the audit items from before the chain (not verifiable)."""

    links: list[dict[str, Any]]
    unchained: int = 0


def read_table_links(dynamodb: Any, table_name: str, conversation_id: str | None = None) -> AuditRead:
    """Every link of the table (a Scan filtered to AUDIT# partitions), or one conversation's (a Query)."""
    deserializer = TypeDeserializer()
    if conversation_id is not None:
        pages: Iterator[dict[str, Any]] = dynamodb.get_paginator("query").paginate(
            TableName=table_name,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": audit_chain.audit_partition(conversation_id)}},
            ConsistentRead=True,
        )
    else:
        pages = dynamodb.get_paginator("scan").paginate(
            TableName=table_name,
            FilterExpression="begins_with(pk, :audit)",
            ExpressionAttributeValues={":audit": {"S": audit_chain.AUDIT_PREFIX}},
            ConsistentRead=True,
        )
    read = AuditRead(links=[])
    for page in pages:
        for item in page.get("Items", []):
            plain = {name: deserializer.deserialize(value) for name, value in item.items()}
            if audit_chain.parse_link_sort_key(str(plain["sk"])) is None:
                read.unchained += 1
                continue
            read.links.append(audit_chain.link_from_item(plain))
    return read


def read_copies(
    s3: Any, bucket: str, conversation_id: str | None = None
) -> tuple[dict[audit_chain.LinkKey, bytes], set[audit_chain.LinkKey]]:
    """Each link's WORM copy (the first version written of its object) and the objects written more than
    once. S3 lists a key's versions newest first."""
    prefix = audit_chain.OBJECT_PREFIX + (f"{conversation_id}/" if conversation_id else "")
    first_versions: dict[audit_chain.LinkKey, tuple[str, str]] = {}
    counts: dict[audit_chain.LinkKey, int] = defaultdict(int)
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        for version in page.get("Versions", []):
            key = audit_chain.parse_object_key(version["Key"])
            if key is None:
                continue
            counts[key] += 1
            first_versions[key] = (version["Key"], version["VersionId"])  # the last listed is the oldest
    copies = {
        key: s3.get_object(Bucket=bucket, Key=name, VersionId=version)["Body"].read()
        for key, (name, version) in first_versions.items()
    }
    return copies, {key for key, count in counts.items() if count > 1}


def verify_table_audit(
    dynamodb_client: Any,
    table_name: str,
    s3_client: Any = None,
    bucket: str | None = None,
    *,
    conversation_id: str | None = None,
    now: float | None = None,
) -> list[audit_chain.Problem]:
    """Every audit chain in the table verified and, with a bucket, compared with its WORM copies: the
    problems found (none: the audit is whole). AWS errors are the caller's to handle."""
    read = read_table_links(dynamodb_client, table_name, conversation_id)
    problems = audit_chain.verify_links(read.links, now=now)
    if s3_client is not None and bucket:
        copies, rewritten = read_copies(s3_client, bucket, conversation_id)
        problems.extend(audit_chain.compare_copies(read.links, copies, rewritten=rewritten, now=now))
    return problems
