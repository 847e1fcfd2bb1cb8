"""The staff audit in the template: its WORM bucket under Object Lock and a policy that makes it write-once
for everyone (the record, since IAM cannot stop a PutItem over a table link), what the staff and sweeper
roles may do with it and with the audit partitions, the copy's alarms, and the audit kept longer than
what it audits."""

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


def statements_of(template: dict[str, Any], function: str) -> list[dict[str, Any]]:
    return list(iam_statements(function_properties(template, function)["Policies"]))


def s3_grants(statements: list[dict[str, Any]]) -> dict[str, tuple[Any, Any]]:
    """Each s3 action a role is allowed: its resource and condition."""
    return {
        action: (s["Resource"], s.get("Condition"))
        for s in statements
        if s["Effect"] == "Allow"
        for action in as_list(s["Action"])
        if action.startswith("s3:")
    }


AUDIT_COPIES = {"Fn::Sub": "${AuditBucket.Arn}/audit/*"}
LIST_AUDIT_VERSIONS = ({"Fn::GetAtt": ["AuditBucket", "Arn"]}, {"StringLike": {"s3:prefix": ["audit/*"]}})


def test_the_write_once_copy_is_the_record_because_iam_cannot_stop_a_putitem_on_a_link(
    template: dict[str, Any],
) -> None:
    """What IAM enforces, and what it does not. The staff role needs PutItem on the table, and IAM has no
    condition key that requires a ConditionExpression, so nothing in IAM stops a PutItem over an audit link;
    its Deny covers UpdateItem and DeleteItem only. So the bucket is made truly write-once, to everyone:
    a put without If-None-Match is refused (S3's `s3:if-none-match` key), and so is a delete (a delete
    marker over a copy would let a second put with If-None-Match in). No role may delete a copy or touch
    its retention."""
    statements = statements_of(template, "StaffApiFunction")
    puts = [
        s
        for s in statements
        if s["Effect"] == "Allow"
        and "dynamodb:PutItem" in as_list(s["Action"])
        and referenced_id(s["Resource"]) == "ConversationTable"
    ]
    assert puts and not any("Condition" in s for s in puts)  # the gap IAM cannot close, named, not blessed
    (deny,) = [s for s in statements if s["Effect"] == "Deny"]
    assert set(deny["Action"]) == {"dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    assert "dynamodb:PutItem" not in deny["Action"]

    policy = template["Resources"]["AuditBucketPolicy"]["Properties"]
    assert policy["Bucket"] == {"Ref": "AuditBucket"}
    by_sid = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
    everything = {"Fn::Sub": "${AuditBucket.Arn}/*"}
    put_once, no_deletes = by_sid["PutOnceOnly"], by_sid["NoDeletes"]
    for statement in (put_once, no_deletes):
        assert (statement["Effect"], statement["Principal"], statement["Resource"]) == ("Deny", "*", everything)
    assert put_once["Action"] == "s3:PutObject"
    assert put_once["Condition"] == {"Null": {"s3:if-none-match": "true"}}
    assert no_deletes["Action"] == "s3:DeleteObject" and "Condition" not in no_deletes
    for name, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function":
            for s in iam_statements(resource["Properties"].get("Policies", [])):
                if "AuditBucket" in str(s["Resource"]) and s["Effect"] == "Allow":
                    assert not [a for a in as_list(s["Action"]) if "Delete" in a or "Retention" in a], name


def test_the_staff_role_puts_copies_and_reads_them_to_verify_a_trail(template: dict[str, Any]) -> None:
    """The staff function gets the bucket's name and may PutObject under audit/, list a prefix's versions
    under audit/ and read a version (GET /staff/audit compares a trail with its copies), nothing else in
    S3; it may Query audit partitions (an item's chain), never update or delete an audit item, and delete
    only its own pending-copy markers (a partition the audit Deny's pattern does not match)."""
    from fnmatch import fnmatchcase

    from dialogue.audit_chain import COPY_PENDING

    assert function_environment(template, "StaffApiFunction")["AUDIT_BUCKET"] == {"Ref": "AuditBucket"}
    statements = statements_of(template, "StaffApiFunction")
    assert s3_grants(statements) == {
        "s3:PutObject": (AUDIT_COPIES, None),
        "s3:GetObjectVersion": (AUDIT_COPIES, None),
        "s3:ListBucketVersions": LIST_AUDIT_VERSIONS,
    }
    on_audit = [s for s in statements if "AUDIT#*" in str(s.get("Condition"))]
    (audit_query,) = [s for s in on_audit if s["Effect"] == "Allow"]
    assert as_list(audit_query["Action"]) == ["dynamodb:Query"]
    assert referenced_id(audit_query["Resource"]) == "ConversationTable"
    assert audit_query["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["AUDIT#*"]}}
    (deletes,) = [s for s in statements if s["Effect"] == "Allow" and "dynamodb:DeleteItem" in as_list(s["Action"])]
    assert as_list(deletes["Action"]) == ["dynamodb:DeleteItem"]
    assert deletes["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [COPY_PENDING]}}
    assert not fnmatchcase(COPY_PENDING, "AUDIT#*")


def test_only_the_staff_function_and_the_sweeper_reach_the_bucket_and_the_sweeper_only_to_repair(
    template: dict[str, Any],
) -> None:
    """The sweeper repairs a missing copy: it gets the bucket's name, may put a copy and read a version
    under audit/ and list versions there; Query and DeleteItem on the markers' partition, Query alone on
    audit partitions. No other function reaches the bucket."""
    from dialogue.audit_chain import COPY_PENDING

    assert function_environment(template, "SweepTurnsFunction")["AUDIT_BUCKET"] == {"Ref": "AuditBucket"}
    statements = statements_of(template, "SweepTurnsFunction")
    assert s3_grants(statements) == {
        "s3:PutObject": (AUDIT_COPIES, None),
        "s3:GetObjectVersion": (AUDIT_COPIES, None),
        "s3:ListBucketVersions": LIST_AUDIT_VERSIONS,
    }
    conditions = {
        str(s.get("Condition")): sorted(as_list(s["Action"]))
        for s in statements
        if referenced_id(s["Resource"]) == "ConversationTable"
    }
    markers = {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": [COPY_PENDING]}}
    links = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["AUDIT#*"]}}
    assert conditions[str(markers)] == ["dynamodb:DeleteItem", "dynamodb:Query"]
    assert conditions[str(links)] == ["dynamodb:Query"]
    for name, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function" and name not in ("StaffApiFunction", "SweepTurnsFunction"):
            others = list(iam_statements(resource["Properties"].get("Policies", [])))
            assert not any(str(s["Resource"]).count("AuditBucket") for s in others), name


def test_a_failed_a_late_and_an_unrepaired_copy_are_each_alarmed(template: dict[str, Any]) -> None:
    """AuditCopyFailed (the staff function's store), AuditCopiesRepaired and AuditCopiesNotRepaired (the
    sweeper's) each have an alarm on the alarm topic, named for its metric, and the code emits each."""
    from test_template import DESK_NAMESPACE_SUB, ROOT

    emitted = {
        "AuditCopyFailed": (ROOT / "layers/dialogue/dialogue/aws/audit.py", "staff_api"),
        "AuditCopiesRepaired": (ROOT / "functions/sweep_turns/sweep_turns.py", "sweep_turns"),
        "AuditCopiesNotRepaired": (ROOT / "functions/sweep_turns/sweep_turns.py", "sweep_turns"),
    }
    for metric, (source, service) in emitted.items():
        assert f'add_metric(name="{metric}"' in source.read_text(), metric
        alarm = template["Resources"][f"{metric}Alarm"]["Properties"]
        assert (alarm["Namespace"], alarm["MetricName"]) == (DESK_NAMESPACE_SUB, metric)
        assert alarm["Dimensions"] == [{"Name": "service", "Value": service}]
        assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
            "Sum",
            0,
            "GreaterThanThreshold",
        )
        assert alarm["TreatMissingData"] == "notBreaching"
        assert [referenced_id(a) for a in (*alarm["AlarmActions"], *alarm["OKActions"])] == ["AlarmTopic"] * 2


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
