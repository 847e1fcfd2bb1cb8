"""`python -m ops verify-audit` on a moto stack: its table and audit bucket found by logical id, chains
written by the desk store as the staff function writes them, then rewritten, deleted and overwritten
as someone with the staff role (or more) could."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import boto3
import pytest

from dialogue.actions import Queue
from dialogue.audit_chain import link_hash, object_key
from dialogue.aws.audit import AuditLinks
from dialogue.desk_rules import AuditEntry
from ops import verify_audit
from ops.__main__ import main as ops_main
from tests.fake_aws import mocked_aws

REGION = "us-east-1"
STACK = "enrollment-desk"
TABLE = "desk-conversations"
BUCKET = "desk-audit-copies"
STACK_TEMPLATE = {
    "Resources": {
        "ConversationTable": {
            "Type": "AWS::DynamoDB::Table",
            "Properties": {
                "TableName": TABLE,
                "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                ],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            },
        },
        "AuditBucket": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": BUCKET}},
    }
}
STEPS = [
    (Queue.REVIEW, "claim", None, None),
    (Queue.REVIEW, "release", None, None),
    (Queue.REVIEW, "claim", None, None),
    (Queue.REVIEW, "decision", "corrected", "promise"),
]


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    with mocked_aws(monkeypatch, REGION):
        clients = {name: boto3.client(name, region_name=REGION) for name in ("cloudformation", "dynamodb", "s3")}
        clients["cloudformation"].create_stack(StackName=STACK, TemplateBody=json.dumps(STACK_TEMPLATE))
        # The template's bucket is under Object Lock (moto's CloudFormation leaves that out): a copy's first
        # version can be neither deleted nor changed, only covered by a newer version.
        clients["s3"].delete_bucket(Bucket=BUCKET)
        from devstack.stack import create_audit_bucket

        create_audit_bucket(clients["s3"], BUCKET)
        yield clients


def audit_links(aws: dict[str, Any], *, copies: bool = True) -> AuditLinks:
    return AuditLinks(
        aws["dynamodb"],
        TABLE,
        audit_retention=timedelta(days=365),
        audit_s3=aws["s3"] if copies else None,
        audit_bucket=BUCKET if copies else "",
    )


def write_chain(store: AuditLinks, conversation_id: UUID, turn_id: int) -> None:
    """The links a claim, release, claim and decision write, each in its transaction, then copied."""
    now = datetime.now(UTC)
    for number, (queue, action, outcome, reason) in enumerate(STEPS):
        at = now + timedelta(seconds=number)
        put = store.next_link(AuditEntry(conversation_id, turn_id, queue, "sub-ana", action, at, outcome, reason))
        store._client.transact_write_items(TransactItems=[put])
        store.copy_links([put])


def audit_item(aws: dict[str, Any], conversation_id: UUID, turn_id: int, seq: int) -> dict[str, Any]:
    key = {"pk": {"S": f"AUDIT#{conversation_id}"}, "sk": {"S": f"TURN#{turn_id:06d}#{seq:06d}"}}
    return dict(aws["dynamodb"].get_item(TableName=TABLE, Key=key)["Item"])


def run(*args: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = verify_audit.main(["--stack", STACK, "--region", REGION, *args], out=out)
    return code, out.getvalue().splitlines()


@pytest.fixture
def written(aws: dict[str, Any]) -> tuple[UUID, UUID]:
    store = audit_links(aws)
    first, second = uuid4(), uuid4()
    for conversation_id in (first, second):
        write_chain(store, conversation_id, 1)
        write_chain(store, conversation_id, 3)
    return first, second


def test_whole_chains_and_their_copies_verify(aws: dict[str, Any], written: tuple[UUID, UUID]) -> None:
    code, lines = run()
    assert code == 0, lines
    assert lines == ["verify-audit: 16 links in 4 chains, compared with 16 WORM copies: no problem."]
    keys = [entry["Key"] for entry in aws["s3"].list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert object_key(str(written[0]), 3, 4) in keys
    # and through `python -m ops`, one conversation
    assert ops_main(["verify-audit", "--stack", STACK, "--region", REGION, "--conversation", str(written[1])]) == 0


def test_a_putitem_rewrite_of_one_outcome_is_named(aws: dict[str, Any], written: tuple[UUID, UUID]) -> None:
    conversation_id = written[0]
    item = audit_item(aws, conversation_id, 3, 4)
    aws["dynamodb"].put_item(TableName=TABLE, Item={**item, "outcome": {"S": "approved"}})
    code, lines = run()
    assert code == 1
    where = f"verify-audit: conversation {conversation_id} turn 3 link 4"
    assert f"{where}: changed: its hash does not match its fields" in lines
    assert f"{where}: differs from its WORM copy" in lines
    assert lines[-1].endswith(": 2 problems.")


def test_a_rewrite_with_its_hash_recomputed_is_caught_by_the_next_link_or_the_copy(
    aws: dict[str, Any], written: tuple[UUID, UUID]
) -> None:
    from boto3.dynamodb.types import TypeDeserializer

    conversation_id = written[1]
    for seq in (2, 4):  # a middle link, then the last
        item = {**audit_item(aws, conversation_id, 1, seq), "staff": {"S": "sub-bo"}}
        plain = {name: TypeDeserializer().deserialize(value) for name, value in item.items()}
        plain["conversation_id"] = str(conversation_id)
        aws["dynamodb"].put_item(TableName=TABLE, Item={**item, "hash": {"S": link_hash(plain)}})
    code, lines = run()
    where = f"verify-audit: conversation {conversation_id} turn 1"
    assert code == 1
    assert f"{where} link 3: broken prev_hash: it is not the hash of link 2" in lines
    assert f"{where} link 2: differs from its WORM copy" in lines
    assert f"{where} link 4: differs from its WORM copy" in lines  # the chain alone cannot tell this one


def test_a_deleted_middle_link_is_named(aws: dict[str, Any], written: tuple[UUID, UUID]) -> None:
    conversation_id = written[0]
    key = {"pk": {"S": f"AUDIT#{conversation_id}"}, "sk": {"S": "TURN#000001#000002"}}
    aws["dynamodb"].delete_item(TableName=TABLE, Key=key)
    code, lines = run("--conversation", str(conversation_id))
    where = f"verify-audit: conversation {conversation_id} turn 1"
    assert code == 1
    assert f"{where} link 3: link 2 is missing" in lines
    assert f"{where} link 2: is missing from the table; its WORM copy holds it" in lines
    assert lines[-1] == "verify-audit: 7 links in 2 chains, compared with 8 WORM copies: 2 problems."


def test_an_overwritten_or_missing_copy_is_named(aws: dict[str, Any], written: tuple[UUID, UUID]) -> None:
    conversation_id = written[0]
    # A newer version over a locked copy (only a principal without the bucket policy's If-None-Match rule
    # could): the first version still holds the link, and the second is named.
    aws["s3"].put_object(Bucket=BUCKET, Key=object_key(str(conversation_id), 1, 1), Body=b"{}")
    code, lines = run()
    assert code == 1
    assert f"verify-audit: conversation {conversation_id} turn 1 link 1: its WORM copy was written more than once" in (
        lines
    )
    assert not any("differs" in line for line in lines)
    # A link whose copy failed (the staff request went on): the verifier names it
    write_chain(audit_links(aws, copies=False), conversation_id, 7)
    code, lines = run("--conversation", str(conversation_id))
    assert code == 1
    assert f"verify-audit: conversation {conversation_id} turn 7 link 1: has no WORM copy in the audit bucket" in lines


def test_a_put_that_would_overwrite_a_copy_is_refused(aws: dict[str, Any], written: tuple[UUID, UUID]) -> None:
    """The staff function puts each copy with If-None-Match: a second put of the same link fails."""
    from botocore.exceptions import ClientError

    key = object_key(str(written[0]), 1, 1)
    with pytest.raises(ClientError) as refused:
        aws["s3"].put_object(Bucket=BUCKET, Key=key, Body=b"{}", IfNoneMatch="*")
    assert refused.value.response["Error"]["Code"] == "PreconditionFailed"
    version = aws["s3"].list_object_versions(Bucket=BUCKET, Prefix=key)["Versions"][0]["VersionId"]
    with pytest.raises(ClientError):  # COMPLIANCE mode: not even the bucket's owner deletes it
        aws["s3"].delete_object(Bucket=BUCKET, Key=key, VersionId=version)


def test_a_stack_without_the_table_or_a_missing_stack_fails_with_one_sentence(
    aws: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = run()  # nothing written: nothing to verify, nothing wrong
    assert (code, lines) == (0, ["verify-audit: 0 links in 0 chains, compared with 0 WORM copies: no problem."])
    assert verify_audit.main(["--stack", "no-such-stack", "--region", REGION]) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("verify-audit: looking up the resources of the stack no-such-stack failed (")
    assert error.count("\n") == 0 and error.endswith(".")


def test_without_an_audit_bucket_to_compare_it_fails_with_one_line(
    aws: dict[str, Any], written: tuple[UUID, UUID], capsys: pytest.CaptureFixture[str]
) -> None:
    """The chain alone proves nothing against a rewrite that recomputes its hashes: no bucket, no verdict."""
    without = {"Resources": {"ConversationTable": STACK_TEMPLATE["Resources"]["ConversationTable"]}}
    without = json.loads(json.dumps(without).replace(TABLE, "other-conversations"))
    aws["cloudformation"].create_stack(StackName="no-bucket", TemplateBody=json.dumps(without))
    out = io.StringIO()
    assert verify_audit.main(["--stack", "no-bucket", "--region", REGION], out=out) == 1
    error = capsys.readouterr().err.strip()
    assert error == "verify-audit: cannot verify the audit: no AuditBucket to compare the table with (the record)."
    assert out.getvalue() == ""
    # a bucket the stack names but that is gone
    with pytest.raises(verify_audit.VerifyFailure, match="the audit bucket gone-bucket does not exist"):
        verify_audit.verify(aws["dynamodb"], TABLE, aws["s3"], "gone-bucket", None)


def test_every_item_under_the_audits_keys_is_checked(aws: dict[str, Any], written: tuple[UUID, UUID]) -> None:
    """An item under an AUDIT# partition whose sort key is not a link's is a problem, not a count."""
    conversation_id = written[0]
    stray = {"pk": {"S": f"AUDIT#{conversation_id}"}, "sk": {"S": "TURN#1#claim"}, "staff": {"S": "sub-ana"}}
    aws["dynamodb"].put_item(TableName=TABLE, Item=stray)
    code, lines = run()
    assert code == 1
    assert lines == [
        f"verify-audit: conversation {conversation_id}: an item whose sort key is not a link's ('TURN#1#claim') "
        "is under the audit's keys",
        "verify-audit: 16 links in 4 chains, compared with 16 WORM copies: 1 problems.",
    ]


def test_a_link_past_its_retention_is_not_reported_whether_or_not_its_copy_is_there(aws: dict[str, Any]) -> None:
    """S3's lifecycle can take a copy up to two days before DynamoDB's TTL takes its link."""
    conversation_id = uuid4()
    write_chain(audit_links(aws, copies=False), conversation_id, 1)  # as if S3 had expired every copy
    soon, later = datetime.now(UTC).timestamp(), (datetime.now(UTC) + timedelta(days=366)).timestamp()
    report = verify_audit.verify(aws["dynamodb"], TABLE, aws["s3"], BUCKET, None, now=soon)
    assert [p.what for p in report.problems] == ["has no WORM copy in the audit bucket"] * 4
    assert verify_audit.verify(aws["dynamodb"], TABLE, aws["s3"], BUCKET, None, now=later).problems == []
