"""The staff audit in the template: its WORM bucket under Object Lock, what the staff role may do with it
and with the audit partitions, and the audit kept longer than what it audits."""

from __future__ import annotations

from typing import Any

import pytest
from cfnlint.decode import decode
from test_template import TEMPLATE, as_list, function_environment, function_properties, iam_statements, referenced_id


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    decoded, matches = decode(str(TEMPLATE))
    assert not matches, [str(match) for match in matches]
    return decoded


def test_the_audit_bucket_is_write_once_for_the_audit_retention(template: dict[str, Any]) -> None:
    """Object Lock in COMPLIANCE mode for AuditRetentionDays (no one can shorten it or delete a copy),
    versioned, private, encrypted, retained with the stack (but not after a failed first create, when it
    is empty); a put that could overwrite is refused."""
    bucket = template["Resources"]["AuditBucket"]
    assert (bucket["DeletionPolicy"], bucket["UpdateReplacePolicy"]) == ("RetainExceptOnCreate", "Retain")
    props = bucket["Properties"]
    assert props["ObjectLockEnabled"] is True
    lock = props["ObjectLockConfiguration"]
    assert lock["ObjectLockEnabled"] == "Enabled"
    assert lock["Rule"]["DefaultRetention"] == {"Mode": "COMPLIANCE", "Days": {"Ref": "AuditRetentionDays"}}
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert len(props["PublicAccessBlockConfiguration"]) == 4
    (encryption,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
    # Expired only after the lock ends (a delete marker), never sooner.
    (rule,) = props["LifecycleConfiguration"]["Rules"]
    assert rule["ExpirationInDays"] == {"Ref": "AuditRetentionDays"}
    statements = template["Resources"]["AuditBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    put_once = [s for s in statements if s["Sid"] == "PutOnceOnly"]
    assert put_once and put_once[0]["Effect"] == "Deny" and put_once[0]["Action"] == "s3:PutObject"
    assert put_once[0]["Condition"] == {"Null": {"s3:if-none-match": "true"}}
    assert template["Outputs"]["AuditBucketName"]["Value"] == {"Ref": "AuditBucket"}


def test_the_staff_role_may_only_put_audit_copies_and_read_audit_partitions(template: dict[str, Any]) -> None:
    """The staff function gets the bucket's name and may PutObject under audit/ (no read, no delete, no
    retention change); it may Query audit partitions (an item's chain) and still never update or delete
    an audit item. No other function reaches the bucket."""
    props = function_properties(template, "StaffApiFunction")
    assert function_environment(template, "StaffApiFunction")["AUDIT_BUCKET"] == {"Ref": "AuditBucket"}
    statements = list(iam_statements(props["Policies"]))
    s3_actions = {action for s in statements for action in as_list(s["Action"]) if action.startswith("s3:")}
    assert s3_actions == {"s3:PutObject"}
    (put,) = [s for s in statements if "s3:PutObject" in as_list(s["Action"])]
    assert put["Effect"] == "Allow" and put["Resource"] == {"Fn::Sub": "${AuditBucket.Arn}/audit/*"}
    on_audit = [s for s in statements if "AUDIT#*" in str(s.get("Condition"))]
    (audit_query,) = [s for s in on_audit if s["Effect"] == "Allow"]
    assert as_list(audit_query["Action"]) == ["dynamodb:Query"]
    assert referenced_id(audit_query["Resource"]) == "ConversationTable"
    assert audit_query["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["AUDIT#*"]}}
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert set(deny["Action"]) == {"dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    for name, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function" and name != "StaffApiFunction":
            others = list(iam_statements(resource["Properties"].get("Policies", [])))
            assert not any(str(s["Resource"]).count("AuditBucket") for s in others), name


def test_the_audit_outlives_the_conversations_and_messages_it_audits(template: dict[str, Any]) -> None:
    """An audit item is kept longer (365 days by default) than the conversations' items and staff messages
    (30), in the template's defaults and in the functions' own settings defaults."""
    from dialogue.settings import Settings

    parameters = template["Parameters"]
    audit = parameters["AuditRetentionDays"]["Default"]
    assert audit == 365
    assert audit > parameters["RetentionDays"]["Default"] == 30
    assert audit > parameters["StaffMessageRetentionDays"]["Default"] == 30
    defaults = {name: field.default for name, field in Settings.model_fields.items()}
    assert defaults["audit_retention_days"] == audit
    assert defaults["audit_retention_days"] > max(defaults["retention_days"], defaults["staff_message_retention_days"])
    assert defaults["audit_bucket"] == ""  # no bucket named, no copy written
