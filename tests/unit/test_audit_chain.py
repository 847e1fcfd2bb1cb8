"""The audit's hash chain, pure: its canonical form, and what verifying a chain names when it breaks."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from dialogue.audit_chain import (
    GENESIS,
    canonical,
    compare_copies,
    copy_marker_sort_key,
    copy_refusal,
    link_document,
    link_hash,
    link_sort_key,
    new_link,
    object_key,
    parse_copy_marker_sort_key,
    parse_link_sort_key,
    parse_object_key,
    retired,
    verify_chain,
    verify_links,
)

CONVERSATION = "7f0c2a52-3f5e-4b8e-9d55-2f6a1f0c9e11"
NOW = 1_800_000_000.0
STEPS = [("claim", None, None), ("release", None, None), ("claim", None, None), ("decision", "corrected", "promise")]


def chain(turn_id: int = 2, steps: list[tuple[str, str | None, str | None]] = STEPS) -> list[dict[str, Any]]:
    links: list[dict[str, Any]] = []
    for number, (action, outcome, reason) in enumerate(steps):
        links.append(
            new_link(
                CONVERSATION,
                turn_id,
                links[-1] if links else None,
                staff="sub-ana",
                action=action,
                queue="review",
                outcome=outcome,
                reason=reason,
                at=f"2027-01-15T10:00:{number:02d}.000+00:00",
                expires_at=int(NOW) + 86_400 * 365 + number,
            )
        )
    return links


def whats(problems: list[Any]) -> list[tuple[int | None, str]]:
    return [(problem.seq, problem.what) for problem in problems]


def test_a_link_is_hashed_over_its_canonical_fields_and_chained_to_the_one_before() -> None:
    first, second, *_ = chain()
    assert (first["seq"], first["prev_hash"], first["prev_expires_at"]) == (1, GENESIS, None)
    assert (second["seq"], second["prev_hash"], second["prev_expires_at"]) == (2, first["hash"], first["expires_at"])
    # SHA-256 of sorted, compact JSON of every field but the hash: anyone can recompute it
    fields = {name: value for name, value in first.items() if name != "hash"}
    expected = hashlib.sha256(json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert first["hash"] == link_hash(first) == expected
    assert b'"hash"' not in canonical(first) and b" " not in canonical(first)
    # The table's extra attributes (its keys) do not change the hash; DynamoDB's Decimals read as ints
    from decimal import Decimal

    stored = {**first, "pk": f"AUDIT#{CONVERSATION}", "sk": link_sort_key(2, 1), "turn_id": Decimal(2)}
    assert link_hash(stored) == first["hash"]
    assert json.loads(link_document(first))["hash"] == first["hash"]


def test_keys_read_back_to_the_link_they_name() -> None:
    assert link_sort_key(2, 13) == "TURN#000002#000013"
    assert parse_link_sort_key("TURN#000002#000013") == (2, 13)
    assert parse_link_sort_key("2026-01-01T00:00:00.000+00:00#ab12") is None  # an item from before the chain
    assert object_key(CONVERSATION, 2, 13) == f"audit/{CONVERSATION}/000002/000013.json"
    assert parse_object_key(object_key(CONVERSATION, 2, 13)) == (CONVERSATION, 2, 13)
    assert parse_object_key("audit/x/y.json") is None


def test_a_whole_chain_verifies_in_any_order() -> None:
    links = chain()
    assert verify_chain(links, now=NOW) == []
    assert verify_chain(list(reversed(links)), now=NOW) == []
    assert verify_links([*chain(1), *chain(2), *chain(3)], now=NOW) == []


def test_a_changed_field_is_named_as_a_changed_link() -> None:
    links = chain()
    links[3] = {**links[3], "outcome": "approved"}  # rewritten, hash kept
    (problem,) = verify_chain(links, now=NOW)
    assert (problem.conversation_id, problem.turn_id, problem.seq) == (CONVERSATION, 2, 4)
    assert problem.what == "changed: its hash does not match its fields"
    assert str(problem) == f"conversation {CONVERSATION} turn 2 link 4: changed: its hash does not match its fields"


def test_a_rehashed_link_breaks_the_next_links_prev_hash() -> None:
    links = chain()
    rewritten = {**links[1], "staff": "sub-bo"}
    links[1] = {**rewritten, "hash": link_hash(rewritten)}
    assert whats(verify_chain(links, now=NOW)) == [(3, "broken prev_hash: it is not the hash of link 2")]


def test_a_deleted_middle_link_is_named_as_missing() -> None:
    links = chain()
    del links[1]
    assert whats(verify_chain(links, now=NOW)) == [(3, "link 2 is missing")]
    del links[1]
    assert whats(verify_chain(links, now=NOW)) == [(4, "links 2 to 3 are missing")]


def test_first_links_gone_are_missing_unless_their_ttl_removed_them() -> None:
    links = chain()[2:]
    assert whats(verify_chain(links, now=NOW)) == [(3, "links 1 to 2 are missing (not yet expired)")]
    after_ttl = float(links[0]["prev_expires_at"]) + 1
    assert verify_chain(links, now=after_ttl) == []


def test_a_first_link_that_does_not_start_from_genesis_is_a_broken_prev_hash() -> None:
    links = chain()
    forged = {**links[0], "prev_hash": "f" * 64}
    links[0] = {**forged, "hash": link_hash(forged)}
    problems = whats(verify_chain(links, now=NOW))
    assert (1, "broken prev_hash: the first link does not start the chain") in problems
    assert (2, "broken prev_hash: it is not the hash of link 1") in problems


def test_a_key_or_an_attribute_out_of_place_is_a_changed_link() -> None:
    links = [{**link, "sk": link_sort_key(2, link["seq"])} for link in chain()]
    links[0] = {**links[0], "sk": link_sort_key(5, 1)}
    links[2] = {**links[2], "note": "added"}
    assert whats(verify_chain(links, now=NOW)) == [
        (1, "changed: its key does not match its turn and sequence number"),
        (3, "changed: it holds attributes no link has (note)"),
    ]


def test_the_table_is_compared_with_its_worm_copies() -> None:
    links = chain()
    copies = {(CONVERSATION, 2, link["seq"]): link_document(link) for link in links}
    assert compare_copies(links, copies, now=NOW) == []
    # the last link rewritten with its hash recomputed: the chain alone cannot tell, the copy can
    last = {**links[3], "outcome": "approved"}
    rehashed = [*links[:3], {**last, "hash": link_hash(last)}]
    assert verify_chain(rehashed, now=NOW) == []
    assert whats(compare_copies(rehashed, copies, now=NOW)) == [(4, "differs from its WORM copy")]
    # a link with no copy; a copy whose link is gone before its TTL; an object written twice
    missing_copy = {key: value for key, value in copies.items() if key[2] != 2}
    assert whats(compare_copies(links, missing_copy, now=NOW)) == [(2, "has no WORM copy in the audit bucket")]
    assert whats(compare_copies(links[:3], copies, now=NOW)) == [
        (4, "is missing from the table; its WORM copy holds it")
    ]
    assert compare_copies(links[:3], copies, now=float(links[3]["expires_at"]) + 1) == []
    assert whats(compare_copies(links, copies, rewritten=[(CONVERSATION, 2, 1)], now=NOW)) == [
        (1, "its WORM copy was written more than once")
    ]


# --- retention, and what the repair copies ------------------------------------------------------------


def test_a_link_or_copy_past_its_retention_is_not_reported_either_way() -> None:
    """S3's lifecycle can remove a copy before DynamoDB's TTL (up to two days late) removes its link, and
    the TTL can leave a link whose copy is gone: once `expires_at` has passed, neither is a problem."""
    links = chain()
    copies = {(CONVERSATION, 2, link["seq"]): link_document(link) for link in links}
    last_expiry = float(links[-1]["expires_at"])
    assert whats(compare_copies(links, {}, now=NOW)) == [
        (n, "has no WORM copy in the audit bucket") for n in (1, 2, 3, 4)
    ]
    assert compare_copies(links, {}, now=last_expiry) == []  # every copy expired first, links linger
    assert compare_copies([], copies, now=last_expiry) == []  # and the other way round
    # one link retired, the others not: only the others are compared
    assert whats(compare_copies(links, {}, now=float(links[0]["expires_at"]))) == [
        (n, "has no WORM copy in the audit bucket") for n in (2, 3, 4)
    ]
    # a chain whose first links are retired but still in the table verifies
    assert verify_chain(links, now=float(links[1]["expires_at"])) == []
    assert retired(links[0], float(links[0]["expires_at"])) and not retired(links[0], NOW)
    assert not retired({"expires_at": None}, NOW) and not retired({}, NOW)


def test_a_link_whose_expiry_was_moved_into_the_past_is_still_compared_with_its_copy() -> None:
    """The copy's expiry is the record's: a link's own could have been rewritten to hide it."""
    links = chain()
    copies = {(CONVERSATION, 2, link["seq"]): link_document(link) for link in links}
    hidden = {**links[3], "expires_at": int(NOW) - 1}
    hidden["hash"] = link_hash(hidden)
    assert whats(compare_copies([*links[:3], hidden], copies, now=NOW)) == [(4, "differs from its WORM copy")]


def test_a_pending_copy_markers_key_names_its_link_and_sorts_by_time() -> None:
    key = copy_marker_sort_key("2027-01-15T10:00:01.000+00:00", CONVERSATION, 2, 3)
    assert parse_copy_marker_sort_key(key) == (CONVERSATION, 2, 3)
    assert (
        key
        < "2027-01-15T10:00:02.000+00:00"
        < copy_marker_sort_key("2027-01-15T10:00:02.000+00:00", CONVERSATION, 1, 1)
    )
    for bad in ("", "TURN#000001#000001", "2027#x#1#1", f"2027##{2:06d}#{3:06d}"):
        assert parse_copy_marker_sort_key(bad) is None, bad


def test_the_repair_copies_only_a_link_that_checks_out_against_the_link_before_it() -> None:
    links = chain()
    assert [copy_refusal(link, links[n - 1] if n else None, now=NOW) for n, link in enumerate(links)] == [None] * 4
    changed = {**links[2], "outcome": "approved"}
    assert copy_refusal(changed, links[1], now=NOW) == "its hash does not match its fields"
    assert copy_refusal({**links[2], "note": "x"}, links[1], now=NOW) == "its hash does not match its fields"
    assert copy_refusal({**links[2], "sk": link_sort_key(2, 9)}, links[1], now=NOW) == (
        "its key does not match its turn and sequence number"
    )
    # the link before rewritten with its hash recomputed: the next link no longer follows it
    before = {**links[1], "staff": "sub-bo"}
    before["hash"] = link_hash(before)
    assert copy_refusal(links[2], before, now=NOW) == "its prev_hash is not the hash of link 2"
    forged_first = {**links[0], "prev_hash": "f" * 64}
    forged_first["hash"] = link_hash(forged_first)
    assert copy_refusal(forged_first, None, now=NOW) == "the first link does not start the chain"
    # the link before missing: only its TTL excuses it
    assert copy_refusal(links[2], None, now=NOW) == "link 2 is missing (not yet expired)"
    assert copy_refusal(links[2], None, now=float(links[1]["expires_at"])) is None
