"""The staff audit as one hash chain per item (a conversation's turn), and how to verify it.

Each audit item (a *link*) belongs to one item: `AUDIT#<conversation id>`, sort key
`TURN#<turn:06d>#<seq:06d>`, seq counting that item's links from 1. A link carries `prev_hash`, the
`hash` of the link before it (GENESIS for the first), and its own `hash`: SHA-256 of the canonical
JSON of its fields (LINK_FIELDS: every field but `hash`, with sorted keys and no spaces). So a link
changed in place no longer matches its hash; a link rewritten with a new hash breaks the next link's
`prev_hash`; a link deleted leaves a gap in the sequence. What the chain alone cannot show (every
link after a rewrite recomputed, or the last link rewritten) the WORM copy shows: each link's JSON is
also written, once, to an S3 bucket under Object Lock (`audit/<conversation id>/<turn:06d>/<seq:06d>.json`),
and `verify_table_audit` compares the two.

The copy, not the table, is the record. IAM has no condition key that requires a write's
ConditionExpression, so the role that writes a link with `attribute_not_exists` could also overwrite one
with a plain PutItem; the bucket's policy, by contrast, refuses any put without If-None-Match and any
delete. So every reader compares the table with the copy, and a link is trusted as far as its copy holds
it. A link whose copy failed is put on a small *pending copy* marker in the same transaction
(`AUDITCOPY#pending`, sort key `<at>#<conversation id>#<turn:06d>#<seq:06d>`), which the sweeper repairs.

Links hold ids, a staff subject, codes and times, never resident or staff text. A link also keeps
`prev_expires_at`, the TTL of the link before it, so a chain whose first links the table's TTL has
already removed is told from one whose first links were deleted. A link (or copy) past its `expires_at`
is retired: DynamoDB's TTL and S3's lifecycle each remove theirs in their own time (the TTL up to about
two days late), so neither its presence nor its absence is reported.

Everything here is pure; dialogue.aws.audit writes the links, reads them back and verifies a table's.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from uuid import UUID

AUDIT_PREFIX = "AUDIT#"
LINK_PREFIX = "TURN#"
OBJECT_PREFIX = "audit/"
GENESIS = "0" * 64
"""The `prev_hash` of an item's first link."""
LINK_FIELDS = (
    "conversation_id",
    "turn_id",
    "seq",
    "staff",
    "action",
    "queue",
    "outcome",
    "reason",
    "at",
    "expires_at",
    "prev_hash",
    "prev_expires_at",
)
"""The fields a link's hash covers, in the canonical JSON (the conversation id comes from the key)."""
STORED_FIELDS = frozenset({"pk", "sk", "hash", *LINK_FIELDS} - {"conversation_id"})
"""The attributes a link's table item may have."""

COPY_PENDING = "AUDITCOPY#pending"
"""The partition of the pending-copy markers: one per link whose WORM copy is not yet known written."""

ChainKey = tuple[str, int]
LinkKey = tuple[str, int, int]


@dataclass(frozen=True)
class Problem:
    """What broke, and where: one line each, ids and numbers only."""

    conversation_id: str
    turn_id: int | None
    seq: int | None
    what: str

    def __str__(self) -> str:
        where = f"conversation {self.conversation_id}"
        if self.turn_id is not None:
            where += f" turn {self.turn_id}"
        if self.seq is not None:
            where += f" link {self.seq}"
        return f"{where}: {self.what}"


# --- keys -------------------------------------------------------------------------------------------


def audit_partition(conversation_id: UUID | str) -> str:
    return f"{AUDIT_PREFIX}{conversation_id}"


def chain_prefix(turn_id: int) -> str:
    """The sort keys of one item's links begin so (a Query's begins_with)."""
    return f"{LINK_PREFIX}{turn_id:06d}#"


def link_sort_key(turn_id: int, seq: int) -> str:
    return f"{chain_prefix(turn_id)}{seq:06d}"


def parse_link_sort_key(sort_key: str) -> tuple[int, int] | None:
    """(turn id, seq) from a link's sort key; None for any other (an audit item from before the chain)."""
    parts = sort_key.split("#")
    if len(parts) != 3 or parts[0] + "#" != LINK_PREFIX or not all(p.isdigit() and len(p) == 6 for p in parts[1:]):
        return None
    return int(parts[1]), int(parts[2])


def object_key(conversation_id: str, turn_id: int, seq: int) -> str:
    """Where a link's WORM copy lives in the audit bucket."""
    return f"{OBJECT_PREFIX}{conversation_id}/{turn_id:06d}/{seq:06d}.json"


def parse_object_key(key: str) -> LinkKey | None:
    parts = key.removeprefix(OBJECT_PREFIX).split("/")
    if not key.startswith(OBJECT_PREFIX) or len(parts) != 3 or not parts[2].endswith(".json"):
        return None
    turn, seq = parts[1], parts[2].removesuffix(".json")
    if not (turn.isdigit() and seq.isdigit()):
        return None
    return parts[0], int(turn), int(seq)


def copy_marker_sort_key(at: str, conversation_id: str, turn_id: int, seq: int) -> str:
    """A pending-copy marker's sort key: the link's time first, so a range on it finds the older ones."""
    return f"{at}#{conversation_id}#{turn_id:06d}#{seq:06d}"


def parse_copy_marker_sort_key(sort_key: str) -> LinkKey | None:
    """The link a marker names (conversation id, turn id, seq); None for a key of any other form."""
    parts = sort_key.rsplit("#", 3)
    if len(parts) != 4 or not parts[1] or not all(p.isdigit() and len(p) == 6 for p in parts[2:]):
        return None
    return parts[1], int(parts[2]), int(parts[3])


# --- a link -----------------------------------------------------------------------------------------


def _plain_value(value: Any) -> Any:
    """A value as the canonical JSON holds it: DynamoDB's Decimals as ints."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else str(value)
    return value


def canonical(link: Mapping[str, Any]) -> bytes:
    """The bytes a link's hash is taken of: LINK_FIELDS (absent ones as null), sorted, compact, ASCII."""
    fields = {name: _plain_value(link.get(name)) for name in LINK_FIELDS}
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def link_hash(link: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(link)).hexdigest()


def new_link(
    conversation_id: UUID | str,
    turn_id: int,
    previous: Mapping[str, Any] | None,
    *,
    staff: str,
    action: str,
    queue: str,
    outcome: str | None,
    reason: str | None,
    at: str,
    expires_at: int,
) -> dict[str, Any]:
    """The next link of an item's chain after `previous` (None: the first), with its hash."""
    link: dict[str, Any] = {
        "conversation_id": str(conversation_id),
        "turn_id": turn_id,
        "seq": int(previous["seq"]) + 1 if previous else 1,
        "staff": staff,
        "action": action,
        "queue": queue,
        "outcome": outcome,
        "reason": reason,
        "at": at,
        "expires_at": expires_at,
        "prev_hash": str(previous["hash"]) if previous else GENESIS,
        "prev_expires_at": int(previous["expires_at"]) if previous else None,
    }
    link["hash"] = link_hash(link)
    return link


def link_from_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A link from its table item as boto3's deserializer gives it (pk and sk kept, numbers as ints)."""
    link = {name: _plain_value(value) for name, value in item.items()}
    link["conversation_id"] = str(item["pk"]).removeprefix(AUDIT_PREFIX)
    return link


def link_document(link: Mapping[str, Any]) -> bytes:
    """A link's WORM copy: its canonical fields and its hash, as JSON."""
    fields = {name: _plain_value(link.get(name)) for name in (*LINK_FIELDS, "hash")}
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


# --- verifying --------------------------------------------------------------------------------------


def _now() -> float:
    return time.time()


def retired(link: Mapping[str, Any], now: float) -> bool:
    """Whether a link (or its copy's fields) is past its retention: its `expires_at` at or before `now`."""
    try:
        return link.get("expires_at") is not None and float(link["expires_at"]) <= now
    except (TypeError, ValueError):
        return False  # a changed link whose expiry is no number: still verified


def copy_refusal(link: Mapping[str, Any], before: Mapping[str, Any] | None, *, now: float | None = None) -> str | None:
    """Why a table link must not be written as its WORM copy (None: it may): its fields no longer match its
    hash or its key, or its `prev_hash` is not the hash of `before` (the link before it as the record holds
    it; None: there is none) or GENESIS for a first link. A link whose link before is gone by its TTL can
    only be checked against itself."""
    now = _now() if now is None else now
    turn_id, seq = int(link["turn_id"]), int(link["seq"])
    if "sk" in link and parse_link_sort_key(str(link["sk"])) != (turn_id, seq):
        return "its key does not match its turn and sequence number"
    if link.get("hash") != link_hash(link) or set(link) - STORED_FIELDS - {"conversation_id"}:
        return "its hash does not match its fields"
    if seq == 1:
        return None if link.get("prev_hash") == GENESIS else "the first link does not start the chain"
    if before is None:
        gone_by_ttl = link.get("prev_expires_at") is not None and float(link["prev_expires_at"]) <= now
        return None if gone_by_ttl else f"link {seq - 1} is missing (not yet expired)"
    if link.get("prev_hash") != before.get("hash"):
        return f"its prev_hash is not the hash of link {seq - 1}"
    return None


def _missing(first: int, last: int) -> str:
    return f"link {first} is missing" if first == last else f"links {first} to {last} are missing"


def verify_chain(links: Sequence[Mapping[str, Any]], *, now: float | None = None) -> list[Problem]:
    """The problems of one item's links (any order): a changed link (its hash no longer matches its
    fields, or its key its fields), a missing link (a gap, or first links gone before their TTL), and a
    broken `prev_hash` (not the hash of the link before it, or not GENESIS on the first). Retired links
    (past their `expires_at`) are left out: the TTL removes them in its own time."""
    now = _now() if now is None else now
    links = [link for link in links if not retired(link, now)]
    if not links:
        return []
    problems: list[Problem] = []
    ordered = sorted(links, key=lambda link: int(link.get("seq") or 0))
    conversation_id = str(ordered[0]["conversation_id"])
    turn_id = int(ordered[0]["turn_id"])
    previous: Mapping[str, Any] | None = None
    for link in ordered:
        seq = int(link["seq"])

        def problem(what: str, seq: int = seq) -> None:
            problems.append(Problem(conversation_id, turn_id, seq, what))

        if "sk" in link and parse_link_sort_key(str(link["sk"])) != (turn_id, seq):
            problem("changed: its key does not match its turn and sequence number")
        if link.get("hash") != link_hash(link):
            problem("changed: its hash does not match its fields")
        if extra := sorted(set(link) - STORED_FIELDS - {"conversation_id"}):
            problem(f"changed: it holds attributes no link has ({', '.join(extra)})")
        if previous is None:
            if seq == 1:
                if link.get("prev_hash") != GENESIS:
                    problem("broken prev_hash: the first link does not start the chain")
            else:
                gone_by_ttl = link.get("prev_expires_at") is not None and float(link["prev_expires_at"]) <= now
                if not gone_by_ttl:
                    problem(_missing(1, seq - 1) + " (not yet expired)")
        else:
            expected = int(previous["seq"]) + 1
            if seq < expected:
                problem("changed: two links have this sequence number")
            elif seq > expected:
                problem(_missing(expected, seq - 1))  # the hashes cannot be compared across the gap
            elif link.get("prev_hash") != previous.get("hash"):
                problem(f"broken prev_hash: it is not the hash of link {seq - 1}")
        previous = link
    return problems


def chains(links: Iterable[Mapping[str, Any]]) -> dict[ChainKey, list[Mapping[str, Any]]]:
    """Links grouped by item: (conversation id, turn id) -> its links."""
    grouped: dict[ChainKey, list[Mapping[str, Any]]] = defaultdict(list)
    for link in links:
        grouped[(str(link["conversation_id"]), int(link["turn_id"]))].append(link)
    return dict(grouped)


def verify_links(links: Iterable[Mapping[str, Any]], *, now: float | None = None) -> list[Problem]:
    """Every item's chain verified; the problems in conversation, turn and sequence order."""
    problems: list[Problem] = []
    for _, chain in sorted(chains(links).items()):
        problems.extend(verify_chain(chain, now=now))
    return problems


def compare_copies(
    links: Iterable[Mapping[str, Any]],
    copies: Mapping[LinkKey, bytes],
    *,
    rewritten: Iterable[LinkKey] = (),
    now: float | None = None,
) -> list[Problem]:
    """The table's links against their WORM copies (the first version of each object): a link that differs
    from its copy, a link with no copy, a copy whose link is gone from the table, and an object written
    more than once (`rewritten`). A link past its retention is not reported either way: its expiry is the
    copy's where there is one (the record; a link's own could have been changed), else the link's."""
    now = _now() if now is None else now
    problems: list[Problem] = []
    in_table = {(str(link["conversation_id"]), int(link["turn_id"]), int(link["seq"])): link for link in links}
    for key in sorted(set(in_table) | set(copies)):
        conversation_id, turn_id, seq = key
        link, copy = in_table.get(key), copies.get(key)
        record = _copy_fields(copy) if copy is not None else link
        if record is not None and retired(record, now):
            continue
        if link is not None and copy is None:
            problems.append(Problem(conversation_id, turn_id, seq, "has no WORM copy in the audit bucket"))
        elif link is None and copy is not None:
            problems.append(Problem(conversation_id, turn_id, seq, "is missing from the table; its WORM copy holds it"))
        elif link is not None and copy is not None and link_document(link) != copy:
            problems.append(Problem(conversation_id, turn_id, seq, "differs from its WORM copy"))
    for conversation_id, turn_id, seq in sorted(set(rewritten)):
        problems.append(Problem(conversation_id, turn_id, seq, "its WORM copy was written more than once"))
    return problems


def _copy_fields(copy: bytes) -> dict[str, Any]:
    """A WORM copy's fields; an unreadable copy as none (so never retired: it is compared, and differs)."""
    try:
        fields = json.loads(copy)
    except ValueError:
        return {}
    return fields if isinstance(fields, dict) else {}
