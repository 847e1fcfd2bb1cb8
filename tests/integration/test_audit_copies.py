"""The audit's write-once copy as its record, on the local stack: `GET /staff/audit` verifies a trail
against it (and says so), and a copy that failed is repaired by the sweeper from a pending-copy marker
committed with its link, never from a link that fails its chain.

Every tamper here is one the staff function's role could make (a PutItem over a link: IAM cannot require
the code's condition) or an administrator's (a delete)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import pytest
from boto3.dynamodb.types import TypeDeserializer
from desk_calls import new_conversation, say, staff

from devstack.faults import Fault
from devstack.stack import AUDIT_BUCKET, TABLE_NAME, LocalStack
from dialogue.audit_chain import COPY_PENDING, link_from_item, link_hash, object_key
from dialogue.aws.audit import verify_table_audit

HANDOFF_STEPS = ("claim", "release", "claim")


@pytest.fixture
def stack_with_handoff(stack: LocalStack) -> Iterator[tuple[LocalStack, str]]:
    conversation_id = new_conversation(stack)
    say(stack, conversation_id, "Can I talk to a person?")
    yield stack, conversation_id


def act(stack: LocalStack, conversation_id: str, *steps: str) -> None:
    for step in steps:
        stack.advance(1)
        staff(stack, "POST", f"/staff/handoffs/{conversation_id}/1/{step}")


def trail(stack: LocalStack, conversation_id: str, turn_id: int = 1) -> dict[str, Any]:
    return dict(staff(stack, "GET", "/staff/audit", query=f"conversation_id={conversation_id}&turn_id={turn_id}"))


def link_item(stack: LocalStack, conversation_id: str, seq: int, turn_id: int = 1) -> dict[str, Any]:
    key = {"pk": {"S": f"AUDIT#{conversation_id}"}, "sk": {"S": f"TURN#{turn_id:06d}#{seq:06d}"}}
    return dict(stack.dynamodb.get_item(TableName=TABLE_NAME, Key=key)["Item"])


def rehashed(item: dict[str, Any], conversation_id: str, **changes: dict[str, str]) -> dict[str, Any]:
    """An audit item with `changes` and its hash recomputed, as a rewrite that knows the scheme makes it."""
    changed = {**item, **changes}
    plain = {name: TypeDeserializer().deserialize(value) for name, value in changed.items()}
    plain["conversation_id"] = conversation_id
    return {**changed, "hash": {"S": link_hash(plain)}}


def markers(stack: LocalStack) -> list[dict[str, Any]]:
    return [item for item in stack.table_items() if item["pk"]["S"] == COPY_PENDING]


def copies(stack: LocalStack) -> list[str]:
    listed = stack.s3.list_object_versions(Bucket=AUDIT_BUCKET, Prefix="audit/").get("Versions", [])
    return sorted(version["Key"] for version in listed)


def verify(stack: LocalStack) -> list[str]:
    return [str(problem) for problem in verify_table_audit(stack.dynamodb, TABLE_NAME, stack.s3, AUDIT_BUCKET)]


def sweep_after_a_minute(stack: LocalStack) -> dict[str, Any]:
    stack.advance(61)
    return stack.run_sweeper()


# --- GET /staff/audit: verified against the write-once copy ---------------------------------------------


def test_the_trail_says_it_was_compared_with_the_write_once_copy(
    stack_with_handoff: tuple[LocalStack, str],
) -> None:
    stack, conversation_id = stack_with_handoff
    act(stack, conversation_id, *HANDOFF_STEPS)
    shown = trail(stack, conversation_id)
    assert shown["checked"] == {"against": "write_once_copy", "links": 3, "copies": 3, "problems": 0}
    assert shown["verified"] is True


def test_a_chain_rewritten_from_a_link_onward_with_its_hashes_recomputed_does_not_verify(
    stack_with_handoff: tuple[LocalStack, str],
) -> None:
    """The chain alone is whole again after the rewrite: only the copy tells."""
    stack, conversation_id = stack_with_handoff
    act(stack, conversation_id, *HANDOFF_STEPS)
    previous_hash: str | None = None
    for seq in (2, 3):
        item = link_item(stack, conversation_id, seq)
        changes: dict[str, dict[str, str]] = {"staff": {"S": "someone-else"}}
        if previous_hash is not None:
            changes["prev_hash"] = {"S": previous_hash}
        new = rehashed(item, conversation_id, **changes)
        stack.dynamodb.put_item(TableName=TABLE_NAME, Item=new)  # no condition: as the staff role could
        previous_hash = new["hash"]["S"]
    shown = trail(stack, conversation_id)
    assert [entry["staff"] for entry in shown["items"]][1:] == ["someone-else"] * 2  # the chain is whole again
    assert (shown["verified"], shown["checked"]["against"], shown["checked"]["problems"]) == (
        False,
        "write_once_copy",
        2,
    )


def test_a_removed_last_link_does_not_verify(stack_with_handoff: tuple[LocalStack, str]) -> None:
    stack, conversation_id = stack_with_handoff
    act(stack, conversation_id, *HANDOFF_STEPS)
    key = {"pk": {"S": f"AUDIT#{conversation_id}"}, "sk": {"S": "TURN#000001#000003"}}
    stack.dynamodb.delete_item(TableName=TABLE_NAME, Key=key)
    shown = trail(stack, conversation_id)
    assert len(shown["items"]) == 2
    assert (shown["verified"], shown["checked"]) == (
        False,
        {"against": "write_once_copy", "links": 2, "copies": 3, "problems": 1},
    )


def test_a_removed_whole_chain_does_not_verify(stack_with_handoff: tuple[LocalStack, str]) -> None:
    stack, conversation_id = stack_with_handoff
    act(stack, conversation_id, *HANDOFF_STEPS)
    for seq in (1, 2, 3):
        key = {"pk": {"S": f"AUDIT#{conversation_id}"}, "sk": {"S": f"TURN#000001#{seq:06d}"}}
        stack.dynamodb.delete_item(TableName=TABLE_NAME, Key=key)
    shown = trail(stack, conversation_id)
    assert shown["items"] == []
    assert (shown["verified"], shown["checked"]) == (
        False,
        {"against": "write_once_copy", "links": 0, "copies": 3, "problems": 3},
    )
    # A turn with neither links nor copies is an empty trail that verifies
    assert trail(stack, str(uuid4()))["verified"] is True


def test_without_a_bucket_the_trail_says_hash_chain_only_and_is_never_verified(
    stack_with_handoff: tuple[LocalStack, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dialogue.aws.factory import get_desk_store

    stack, conversation_id = stack_with_handoff
    act(stack, conversation_id, *HANDOFF_STEPS)
    monkeypatch.setattr(get_desk_store().audit, "_audit_s3", None)
    shown = trail(stack, conversation_id)
    assert shown["checked"] == {"against": "hash_chain_only", "links": 3, "copies": None, "problems": 0}
    assert shown["verified"] is False


def test_a_link_past_its_retention_is_not_reported_either_way(
    stack_with_handoff: tuple[LocalStack, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """S3's expiry can take a copy before DynamoDB's TTL (up to two days late) takes its link."""
    from datetime import timedelta

    import staff_api
    from dialogue import clock

    stack, conversation_id = stack_with_handoff
    stack.faults.inject("s3.PutObject", Fault.UNAVAILABLE, times=1)
    act(stack, conversation_id, "claim")  # its copy failed: as if S3 had expired it
    stack.faults.clear()
    assert trail(stack, conversation_id)["verified"] is False
    later = clock.now() + timedelta(days=366)
    monkeypatch.setattr(staff_api, "_now", lambda: later)
    shown = trail(stack, conversation_id)
    assert (shown["verified"], shown["checked"]["problems"]) == (True, 0)


# --- the repair ---------------------------------------------------------------------------------------


def test_a_commit_whose_copy_failed_is_repaired_by_one_sweep(stack_with_handoff: tuple[LocalStack, str]) -> None:
    stack, conversation_id = stack_with_handoff
    act(stack, conversation_id, "claim")
    stack.faults.inject("s3.PutObject", Fault.UNAVAILABLE, times=1)
    act(stack, conversation_id, "release")  # the staff request succeeds; the copy does not
    stack.faults.clear()
    assert stack.metric_total("AuditCopyFailed") == 1
    assert copies(stack) == [object_key(conversation_id, 1, 1)]
    ((marker,),) = [markers(stack)]
    assert set(marker) == {"pk", "sk", "conversation_id", "turn_id", "seq", "expires_at"}  # ids and times only
    assert marker["expires_at"] == link_item(stack, conversation_id, 2)["expires_at"]
    assert verify(stack) == [f"conversation {conversation_id} turn 1 link 2: has no WORM copy in the audit bucket"]
    assert stack.run_sweeper()["audit_copies_repaired"] == 0  # under a minute old: the staff function's yet

    summary = sweep_after_a_minute(stack)
    assert (summary["audit_copies_repaired"], summary["audit_copies_not_repaired"]) == (1, 0)
    assert copies(stack) == [object_key(conversation_id, 1, seq) for seq in (1, 2)]
    assert markers(stack) == [] and verify(stack) == []
    assert trail(stack, conversation_id)["verified"] is True
    assert stack.metric_total("AuditCopiesRepaired") == 1
    assert sweep_after_a_minute(stack)["audit_copies_repaired"] == 0  # nothing left


def test_a_commit_whose_answer_was_lost_leaves_a_marker_and_is_repaired(
    stack_with_handoff: tuple[LocalStack, str],
) -> None:
    """The transaction committed, its answer timed out: the staff function never tried the copy."""
    stack, conversation_id = stack_with_handoff
    stack.faults.inject("dynamodb.TransactWriteItems", Fault.LOST_RESPONSE)
    stack.advance(1)
    response = stack.call_staff_api("POST", f"/staff/handoffs/{conversation_id}/1/claim", staff="ana")
    stack.faults.clear()
    assert response.status == 503
    assert copies(stack) == [] and len(markers(stack)) == 1
    assert sweep_after_a_minute(stack)["audit_copies_repaired"] == 1
    assert verify(stack) == [] and markers(stack) == []


def test_each_successful_copy_removes_its_marker_in_one_transaction_with_its_link(
    stack_with_handoff: tuple[LocalStack, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One marker per link, put in the link's own transaction (far inside DynamoDB's 100 items), and gone
    once the copy is written."""
    from dialogue.aws.factory import get_desk_store

    stack, conversation_id = stack_with_handoff
    store = get_desk_store()
    written: list[list[dict[str, Any]]] = []
    original = store._write_transaction

    def recording(items: Any) -> Any:
        written.append(list(items))
        return original(items)

    monkeypatch.setattr(store, "_write_transaction", recording)
    act(stack, conversation_id, "claim")
    stack.advance(1)
    staff(stack, "POST", f"/staff/handoffs/{conversation_id}/1/reply", {"text": "We will call you today."})
    act(stack, conversation_id, "close")
    assert len(written) == 3
    for items in written:
        puts = [entry["Put"]["Item"]["pk"]["S"] for entry in items if "Put" in entry]
        assert puts.count(COPY_PENDING) == puts.count(f"AUDIT#{conversation_id}") == 1
        assert len(items) <= 100
    assert markers(stack) == [] and len(copies(stack)) == 3
    put_markers = [
        e["Put"]["Item"]
        for items in written
        for e in items
        if e.get("Put", {}).get("Item", {}).get("pk", {}).get("S") == COPY_PENDING
    ]
    assert len(put_markers) == 3 and "We will call" not in json.dumps(put_markers)  # ids and times only


def test_a_tampered_link_is_never_copied_and_is_counted_every_run(
    stack_with_handoff: tuple[LocalStack, str],
) -> None:
    stack, conversation_id = stack_with_handoff
    act(stack, conversation_id, "claim")
    stack.faults.inject("s3.PutObject", Fault.UNAVAILABLE, times=1)
    act(stack, conversation_id, "release")
    stack.faults.clear()
    item = link_item(stack, conversation_id, 2)
    stack.dynamodb.put_item(TableName=TABLE_NAME, Item={**item, "action": {"S": "claim"}})  # its hash kept
    summary = sweep_after_a_minute(stack)
    assert (summary["audit_copies_repaired"], summary["audit_copies_not_repaired"]) == (0, 1)
    assert copies(stack) == [object_key(conversation_id, 1, 1)] and len(markers(stack)) == 1
    assert sweep_after_a_minute(stack)["audit_copies_not_repaired"] == 1  # again, until someone looks
    assert stack.metric_total("AuditCopiesNotRepaired") == 2
    logged = [line for line in stack.log_lines if "audit copy not repaired" in line]
    assert logged and "its hash does not match its fields" in logged[-1]


def test_a_chain_rewritten_with_recomputed_hashes_over_a_copied_link_is_never_copied(
    stack_with_handoff: tuple[LocalStack, str],
) -> None:
    """Link 1 has its copy; link 2's failed. Both are rewritten in the table with their hashes recomputed:
    link 2 checks out against the table's link 1, not against link 1's copy (the record)."""
    stack, conversation_id = stack_with_handoff
    act(stack, conversation_id, "claim")
    stack.faults.inject("s3.PutObject", Fault.UNAVAILABLE, times=1)
    act(stack, conversation_id, "release")
    stack.faults.clear()
    first = rehashed(link_item(stack, conversation_id, 1), conversation_id, staff={"S": "someone-else"})
    second = rehashed(link_item(stack, conversation_id, 2), conversation_id, prev_hash=first["hash"])
    for item in (first, second):
        stack.dynamodb.put_item(TableName=TABLE_NAME, Item=item)
    summary = sweep_after_a_minute(stack)
    assert (summary["audit_copies_repaired"], summary["audit_copies_not_repaired"]) == (0, 1)
    assert copies(stack) == [object_key(conversation_id, 1, 1)]


def test_a_sweep_repairs_many_markers_each_on_its_own(stack: LocalStack) -> None:
    """Five conversations' copies failed; one of their links is then tampered with. One sweep writes the
    other four copies and counts the fifth."""
    conversations = []
    stack.faults.inject("s3.PutObject", Fault.UNAVAILABLE, times=5)
    for _ in range(5):
        conversation_id = new_conversation(stack)
        say(stack, conversation_id, "Can I talk to a person?")
        act(stack, conversation_id, "claim")
        conversations.append(conversation_id)
    stack.faults.clear()
    assert copies(stack) == [] and len(markers(stack)) == 5
    tampered = conversations[2]
    item = link_item(stack, tampered, 1)
    stack.dynamodb.put_item(TableName=TABLE_NAME, Item={**item, "queue": {"S": "review"}})
    summary = sweep_after_a_minute(stack)
    assert (summary["audit_copies_repaired"], summary["audit_copies_not_repaired"]) == (4, 1)
    assert copies(stack) == sorted(object_key(c, 1, 1) for c in conversations if c != tampered)
    ((marker,),) = [markers(stack)]
    assert marker["conversation_id"]["S"] == tampered


def test_a_copy_already_written_removes_its_marker_and_one_that_differs_is_counted(
    stack_with_handoff: tuple[LocalStack, str],
) -> None:
    """A marker whose copy is there (the staff function's removal of the marker failed) is removed when the
    copy matches its link; a copy that differs from its link is never overwritten, and is counted."""
    from boto3.dynamodb.types import TypeSerializer

    from dialogue.aws.audit import marker_item

    stack, conversation_id = stack_with_handoff
    act(stack, conversation_id, "claim", "release")
    for seq in (1, 2):
        plain = {k: TypeDeserializer().deserialize(v) for k, v in link_item(stack, conversation_id, seq).items()}
        marker = marker_item(link_from_item(plain))
        stack.dynamodb.put_item(
            TableName=TABLE_NAME, Item={k: TypeSerializer().serialize(v) for k, v in marker.items()}
        )
    # link 2 rewritten, its hash recomputed: it checks out against its chain, not against its copy
    item = rehashed(link_item(stack, conversation_id, 2), conversation_id, action={"S": "claim"})
    stack.dynamodb.put_item(TableName=TABLE_NAME, Item=item)
    summary = sweep_after_a_minute(stack)
    assert (summary["audit_copies_repaired"], summary["audit_copies_not_repaired"]) == (0, 1)
    ((left,),) = [markers(stack)]
    assert left["seq"]["N"] == "2"
    assert len(stack.s3.list_object_versions(Bucket=AUDIT_BUCKET, Prefix="audit/")["Versions"]) == 2
    logged = [line for line in stack.log_lines if "audit copy not repaired" in line]
    assert "differs from its WORM copy" in logged[-1]


def test_a_marker_past_retention_is_removed_without_a_copy(stack_with_handoff: tuple[LocalStack, str]) -> None:
    stack, conversation_id = stack_with_handoff
    stack.faults.inject("s3.PutObject", Fault.UNAVAILABLE, times=1)
    act(stack, conversation_id, "claim")
    stack.faults.clear()
    stack.advance(366 * 24 * 3600)
    stack.run_sweeper()
    assert markers(stack) == [] and copies(stack) == []


def test_the_repair_keeps_going_when_aws_fails_on_one_marker(stack: LocalStack) -> None:
    stack.faults.inject("s3.PutObject", Fault.UNAVAILABLE, times=3)
    for _ in range(3):
        conversation_id = new_conversation(stack)
        say(stack, conversation_id, "Can I talk to a person?")
        act(stack, conversation_id, "claim")
    stack.faults.clear()
    stack.faults.inject("s3.PutObject", Fault.INTERNAL_ERROR)  # the first marker's repair
    summary = sweep_after_a_minute(stack)
    stack.faults.clear()
    assert (summary["audit_copies_repaired"], summary["audit_copies_not_repaired"]) == (2, 1)
    assert len(markers(stack)) == 1
    logged = [line for line in stack.log_lines if "audit copy not repaired" in line]
    assert "InternalError" in logged[-1]
    assert stack.run_sweeper()["audit_copies_repaired"] == 1
    assert markers(stack) == [] and verify(stack) == []
