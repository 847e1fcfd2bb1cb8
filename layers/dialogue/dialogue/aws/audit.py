"""The staff audit on the conversation table and in the WORM bucket, its repair, and a deployed audit's check.

`AUDIT#<conversation id>` partitions hold one link per claim, release, decision, reply, close, look at a
contact form or correction of the record, put (`attribute_not_exists`) in the same transaction as the
change. The links of one turn are a hash chain (dialogue.audit_chain): sort key `TURN#<turn:06d>#<seq:06d>`,
each link holding the previous link's hash (`prev_hash`) and its own (`hash`, SHA-256 of its canonical
fields). The store reads the chain's last link (one consistent Query) before it writes the next; a writer
that raced it to the same sequence number fails `attribute_not_exists`, and the staff member is asked to
try again (StaffWriteConflict).

What IAM enforces, and what it does not: the staff role is denied UpdateItem and DeleteItem on audit
partitions, but it needs PutItem on the table for its other writes, and IAM has no condition key that
requires a ConditionExpression. So the role *could* overwrite a link with a plain PutItem; only this code's
condition keeps it from doing so. The record is therefore the WORM copy: once the transaction commits,
each new link's JSON is put, once (If-None-Match), in the audit bucket under S3 Object Lock (AUDIT_BUCKET;
`audit/<conversation id>/<turn:06d>/<seq:06d>.json`), whose policy refuses any put without If-None-Match
and any delete, to everyone. Every reader compares the table with it (`verify_table_audit`, `turn_copies`).

The copy is made after the commit, so it can fail (S3 down, the Lambda timing out, the commit's answer
lost). The same transaction therefore also puts a pending-copy marker per link (`AUDITCOPY#pending`,
ids and times only, kept as long as the link); the staff function deletes it once the copy is written,
and the sweeper repairs every marker older than a minute (`AuditCopyRepair`): it checks the link's own
hash and its `prev_hash` against the link before it (as its copy holds it, where it has one), writes the
copy, and removes the marker. A failed copy is logged and counted (AuditCopyFailed, alarmed), never the
staff request's failure. Links hold ids, a staff subject, codes and times: never resident or staff text.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from aws_lambda_powertools.metrics import MetricUnit
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError, ClientError

from dialogue import audit_chain
from dialogue.aws.observability import logger, metrics
from dialogue.aws.table import DynamoDBClient, DynamoTable, store_errors, stored_time, ttl_epoch
from dialogue.desk_rules import AuditEntry


class AuditLinks(DynamoTable):
    """The staff audit's links on the conversation table, each kept `audit_retention`, and their WORM copies
    (none without a bucket)."""

    def __init__(
        self,
        client: DynamoDBClient,
        table_name: str,
        *,
        audit_retention: timedelta,
        audit_s3: Any = None,
        audit_bucket: str = "",
    ) -> None:
        super().__init__(client, table_name)
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

    def next_link(self, entry: AuditEntry) -> dict[str, Any]:
        """A transaction item that puts the item's next audit link, once (`attribute_not_exists`): what
        `entry` records (dialogue.desk_rules.AuditEntry: who, when, what, on which turn; never staff or
        resident text), chained to the link before it (read now)."""
        link = audit_chain.new_link(
            entry.conversation_id,
            entry.turn_id,
            self._last_link(entry.conversation_id, entry.turn_id),
            staff=entry.staff,
            action=entry.action,
            queue=str(entry.queue),
            outcome=entry.outcome,
            reason=entry.reason,
            at=stored_time(entry.at),
            expires_at=ttl_epoch(entry.at + self._audit_retention),
        )
        stored = {key: value for key, value in link.items() if key != "conversation_id"}
        return {
            "Put": {
                "TableName": self._table,
                "Item": self._item(
                    {
                        "pk": audit_chain.audit_partition(entry.conversation_id),
                        "sk": audit_chain.link_sort_key(entry.turn_id, link["seq"]),
                        **stored,
                    }
                ),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }

    def _new_links(self, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The audit links a transaction's items put."""
        return [
            audit_chain.link_from_item(self._plain(entry["Put"]["Item"]))
            for entry in items
            if str(entry.get("Put", {}).get("Item", {}).get("pk", {}).get("S", "")).startswith(audit_chain.AUDIT_PREFIX)
        ]

    def with_copy_markers(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`items` and, where there is a WORM bucket, a pending-copy marker for each audit link they put:
        committed with the link or not at all, so no link can lose its copy unseen. One more item per link
        (a staff transaction puts one link, far inside DynamoDB's 100 items a transaction)."""
        if self._audit_s3 is None:
            return items
        return [
            *items,
            *(
                {"Put": {"TableName": self._table, "Item": self._item(marker_item(link))}}
                for link in self._new_links(items)
            ),
        ]

    def copy_links(self, items: list[dict[str, Any]]) -> None:
        """After a commit: each audit link the transaction put, written once to the WORM bucket, and its
        pending-copy marker removed. A failure is logged (ids only) and counted, and the staff request goes
        on: the link and its marker are in the table, and the sweeper writes the copy."""
        if self._audit_s3 is None:
            return
        for link in self._new_links(items):
            try:
                put_copy(self._audit_s3, self._audit_bucket, link)
            except (ClientError, BotoCoreError) as error:
                logger.warning(
                    "audit copy failed",
                    conversation_id=link["conversation_id"],
                    turn_id=link["turn_id"],
                    seq=link["seq"],
                    error=_code(error),
                )
                metrics.add_metric(name="AuditCopyFailed", unit=MetricUnit.Count, value=1)
                continue
            try:
                self._client.delete_item(TableName=self._table, Key=self._item(marker_key(link)))
            except (ClientError, BotoCoreError) as error:  # the sweeper finds the copy written, and removes it
                logger.info("pending-copy marker kept", conversation_id=link["conversation_id"], error=_code(error))

    def turn_copies(
        self, conversation_id: UUID, turn_id: int
    ) -> tuple[dict[audit_chain.LinkKey, bytes], set[audit_chain.LinkKey]] | None:
        """One item's WORM copies and the copies written more than once (`read_copies`); None where there
        is no WORM bucket, so nothing to compare with."""
        if self._audit_s3 is None:
            return None
        with store_errors():
            return read_copies(self._audit_s3, self._audit_bucket, str(conversation_id), turn_id)


def _code(error: Exception) -> str:
    """An AWS error's code (or its type's name): never its message."""
    code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else None
    return str(code or type(error).__name__)


def put_copy(s3: Any, bucket: str, link: dict[str, Any]) -> None:
    """A link's WORM copy, put only where none is (If-None-Match: S3 answers 412 where one is)."""
    s3.put_object(
        Bucket=bucket,
        Key=audit_chain.object_key(link["conversation_id"], link["turn_id"], link["seq"]),
        Body=audit_chain.link_document(link),
        ContentType="application/json",
        IfNoneMatch="*",
    )


def marker_key(link: dict[str, Any]) -> dict[str, str]:
    """The key of a link's pending-copy marker."""
    return {
        "pk": audit_chain.COPY_PENDING,
        "sk": audit_chain.copy_marker_sort_key(
            str(link["at"]), str(link["conversation_id"]), int(link["turn_id"]), int(link["seq"])
        ),
    }


def marker_item(link: dict[str, Any]) -> dict[str, Any]:
    """A link's pending-copy marker: its ids, its time and its TTL (the link's), nothing else."""
    return {
        **marker_key(link),
        "conversation_id": str(link["conversation_id"]),
        "turn_id": int(link["turn_id"]),
        "seq": int(link["seq"]),
        "expires_at": int(link["expires_at"]),
    }


# --- reading a table and a bucket -------------------------------------------------------------------


@dataclass
class AuditRead:
    """What the readers found: the links, and a problem for each item under an audit partition whose sort
    key is not a link's (no link of a chain, so nothing there can be verified: it should not be there)."""

    links: list[dict[str, Any]]
    strays: list[audit_chain.Problem] = field(default_factory=list)


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
                conversation = str(plain["pk"]).removeprefix(audit_chain.AUDIT_PREFIX)
                what = f"an item whose sort key is not a link's ({str(plain['sk'])[:40]!r}) is under the audit's keys"
                read.strays.append(audit_chain.Problem(conversation, None, None, what))
                continue
            read.links.append(audit_chain.link_from_item(plain))
    return read


def read_copies(
    s3: Any, bucket: str, conversation_id: str | None = None, turn_id: int | None = None
) -> tuple[dict[audit_chain.LinkKey, bytes], set[audit_chain.LinkKey]]:
    """Each link's WORM copy (the first version written of its object) and the objects written more than
    once: the bucket's, one conversation's, or one of its turns'. S3 lists a key's versions newest first."""
    prefix = audit_chain.OBJECT_PREFIX + (f"{conversation_id}/" if conversation_id else "")
    if conversation_id and turn_id is not None:
        prefix += f"{turn_id:06d}/"
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


def first_version(s3: Any, bucket: str, key: str) -> bytes | None:
    """The first version written of one object (the record), or None where it has none. Listed, then read
    by its version id: no GetObject, whose answer for a missing key needs ListBucket to be a 404."""
    oldest: str | None = None
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=key):
        for version in page.get("Versions", []):
            if version["Key"] == key:
                oldest = version["VersionId"]  # the last listed is the oldest
    if oldest is None:
        return None
    body: bytes = s3.get_object(Bucket=bucket, Key=key, VersionId=oldest)["Body"].read()
    return body


def verify_table_audit(
    dynamodb_client: Any,
    table_name: str,
    s3_client: Any = None,
    bucket: str | None = None,
    *,
    conversation_id: str | None = None,
    now: float | None = None,
) -> list[audit_chain.Problem]:
    """Every audit chain in the table verified and, with a bucket, compared with its WORM copies (the
    record): the problems found, an item under the audit's keys that is not a link among them. None
    means the audit is whole only where a bucket was given: without one, only the chains were checked,
    which a rewrite that recomputes their hashes passes. AWS errors are the caller's to handle."""
    read = read_table_links(dynamodb_client, table_name, conversation_id)
    problems = [*read.strays, *audit_chain.verify_links(read.links, now=now)]
    if s3_client is not None and bucket:
        copies, rewritten = read_copies(s3_client, bucket, conversation_id)
        problems.extend(audit_chain.compare_copies(read.links, copies, rewritten=rewritten, now=now))
    return problems


# --- repairing the WORM copy ------------------------------------------------------------------------

REPAIR_AFTER = timedelta(minutes=1)
"""A pending-copy marker younger than this is left to the staff function that is writing its copy now."""
REPAIR_LIMIT = 500
"""Markers one repair run looks at, at most; the rest wait for the next run."""

RepairOutcome = Literal["repaired", "already_copied", "retired"]


@dataclass
class CopyNotRepaired:
    """A link whose copy a repair run did not write: its ids and why (a fixed phrase or an error's code)."""

    conversation_id: str
    turn_id: int
    seq: int
    why: str


@dataclass
class CopyRepair:
    """What one repair run did: copies it wrote (`repaired`); markers whose copy was there already and
    matched (`already_copied`: the staff function's removal of the marker failed); markers of links past
    their retention (`retired`); links it would not copy (`refused`: the link fails its chain, its copy
    differs, or it is gone from the table; the marker is kept, so each run counts it again until someone
    looks); markers it failed on (`failed`: an AWS error; the next run tries again); and whether it looked
    at every marker due (`complete`)."""

    repaired: int = 0
    already_copied: int = 0
    retired: int = 0
    refused: int = 0
    failed: int = 0
    complete: bool = True
    not_repaired: list[CopyNotRepaired] = field(default_factory=list)


class _Refused(Exception):
    """A link the repair will not copy, and why (a fixed phrase, no text)."""


class AuditCopyRepair:
    """The sweeper's half of the WORM copy: every pending-copy marker older than REPAIR_AFTER gets its copy
    written (or found written), and is removed."""

    def __init__(self, dynamodb: Any, table_name: str, s3: Any, bucket: str) -> None:
        self._dynamodb = dynamodb
        self._table = table_name
        self._s3 = s3
        self._bucket = bucket
        self._deserializer = TypeDeserializer()

    def run(self, now: datetime, *, limit: int = REPAIR_LIMIT) -> CopyRepair:
        """Repair each due marker on its own: one that fails or is refused is reported, and the run goes on."""
        result = CopyRepair()
        for seen, marker in enumerate(self._due_markers(now)):
            if seen >= limit:
                result.complete = False
                break
            key = audit_chain.parse_copy_marker_sort_key(str(marker["sk"]))
            if key is None:
                result.refused += 1
                result.not_repaired.append(CopyNotRepaired("", 0, 0, "a marker whose sort key is not a marker's"))
                continue
            try:
                outcome = self._repair(marker, key, now)
            except _Refused as refusal:
                result.refused += 1
                result.not_repaired.append(CopyNotRepaired(*key, str(refusal)))
                continue
            except Exception as error:  # any one marker's failure, whatever it is, must not stop the others
                result.failed += 1
                result.complete = False
                result.not_repaired.append(CopyNotRepaired(*key, _code(error)))
                continue
            setattr(result, outcome, getattr(result, outcome) + 1)
        return result

    def _due_markers(self, now: datetime) -> Iterator[dict[str, Any]]:
        """The markers older than REPAIR_AFTER, oldest first (so a link's copy before the next link's)."""
        pages = self._dynamodb.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND sk < :due",
            ExpressionAttributeValues={
                ":pk": {"S": audit_chain.COPY_PENDING},
                ":due": {"S": stored_time(now - REPAIR_AFTER)},
            },
            ConsistentRead=True,
        )
        for page in pages:
            for item in page.get("Items", []):
                yield self._plain(item)

    def _plain(self, item: dict[str, Any]) -> dict[str, Any]:
        return {name: self._deserializer.deserialize(value) for name, value in item.items()}

    def _repair(self, marker: dict[str, Any], key: audit_chain.LinkKey, now: datetime) -> RepairOutcome:
        conversation_id, turn_id, seq = key
        links = self._links(conversation_id, turn_id, seq)
        link = links.get(seq)
        if link is None:
            if audit_chain.retired(marker, now.timestamp()):
                self._remove(marker)
                return "retired"
            raise _Refused("is missing from the table before its copy was written")
        if audit_chain.retired(link, now.timestamp()):
            self._remove(marker)
            return "retired"
        before = self._copy(conversation_id, turn_id, seq - 1) if seq > 1 else None
        if refusal := audit_chain.copy_refusal(link, before or links.get(seq - 1), now=now.timestamp()):
            raise _Refused(refusal)
        try:
            put_copy(self._s3, self._bucket, link)
        except ClientError as error:
            if _code(error) not in ("PreconditionFailed", "412"):
                raise
            existing = first_version(self._s3, self._bucket, audit_chain.object_key(conversation_id, turn_id, seq))
            if existing != audit_chain.link_document(link):
                raise _Refused("differs from its WORM copy") from None
            self._remove(marker)
            return "already_copied"
        self._remove(marker)
        return "repaired"

    def _links(self, conversation_id: str, turn_id: int, seq: int) -> dict[int, dict[str, Any]]:
        """The link `seq` of an item's chain and the one before it, by seq (one consistent Query)."""
        response = self._dynamodb.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :first AND :last",
            ExpressionAttributeValues={
                ":pk": {"S": audit_chain.audit_partition(conversation_id)},
                ":first": {"S": audit_chain.link_sort_key(turn_id, max(seq - 1, 1))},
                ":last": {"S": audit_chain.link_sort_key(turn_id, seq)},
            },
            ConsistentRead=True,
        )
        links = [audit_chain.link_from_item(self._plain(item)) for item in response.get("Items", [])]
        return {int(link["seq"]): link for link in links}

    def _copy(self, conversation_id: str, turn_id: int, seq: int) -> dict[str, Any] | None:
        """A link's WORM copy as fields (None: it has none yet)."""
        body = first_version(self._s3, self._bucket, audit_chain.object_key(conversation_id, turn_id, seq))
        if body is None:
            return None
        fields = json.loads(body)
        return fields if isinstance(fields, dict) else None

    def _remove(self, marker: dict[str, Any]) -> None:
        self._dynamodb.delete_item(
            TableName=self._table, Key={"pk": {"S": str(marker["pk"])}, "sk": {"S": str(marker["sk"])}}
        )
