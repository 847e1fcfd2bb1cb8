"""`python -m ops verify-audit`: check a deployed stack's staff audit, chain by chain, against its WORM copy.

    python -m ops verify-audit --stack enrollment-desk [--region us-east-1] [--conversation ID]

The stack's ConversationTable and AuditBucket are found by their logical ids (ListStackResources). Every
audit link in the table is read (a Scan filtered to the `AUDIT#` partitions; with --conversation, one
Query), each turn's hash chain is verified (dialogue.audit_chain: a changed link, a missing link, a
broken prev_hash), and each link is compared with the first version of its copy under Object Lock (a link
that differs, a link without a copy, a copy whose link is gone, a copy written twice). The copy is the
record: the staff role could overwrite a table link with a plain PutItem (IAM cannot require the code's
condition), never a copy. So without the bucket there is nothing to verify against, and the command fails.
Every item under an `AUDIT#` partition is checked: one whose sort key is not a link's is a problem. A link
or copy past its retention (`expires_at`) is not reported: the TTL and the bucket's lifecycle remove them
in their own time. One line per problem, then a summary; exit 1 on any problem, or with one sentence when
AWS cannot be read or the bucket is missing.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any, TextIO

from dialogue.audit_chain import Problem, chains, compare_copies, verify_links
from dialogue.aws.audit import read_copies, read_table_links
from ops.aws import AWS_ERRORS, aws_reason, physical_ids, report_failure, session_clients

TABLE = "ConversationTable"
BUCKET = "AuditBucket"
MISSING_BUCKET = frozenset({"404", "NoSuchBucket", "NotFound"})


class VerifyFailure(Exception):
    """Why the audit could not be read, as one sentence without its full stop."""


@dataclass
class Report:
    """What was verified, and the problems found."""

    links: int = 0
    chains: int = 0
    copies: int = 0
    problems: list[Problem] = field(default_factory=list)

    def summary(self) -> str:
        found = f"{len(self.problems)} problems" if self.problems else "no problem"
        return f"{self.links} links in {self.chains} chains, compared with {self.copies} WORM copies: {found}"


def stack_resources(cloudformation: Any, stack: str) -> tuple[str, str | None]:
    """The stack's conversation table and audit bucket (None: the stack has none)."""
    try:
        physical = physical_ids(cloudformation, stack)
    except AWS_ERRORS as error:
        raise VerifyFailure(f"looking up the resources of the stack {stack} failed ({aws_reason(error)})") from None
    if TABLE not in physical:
        raise VerifyFailure(f"the stack {stack} has no {TABLE}: is it this project's stack, fully deployed?")
    return physical[TABLE], physical.get(BUCKET)


def bucket_exists(s3: Any, bucket: str) -> bool:
    from botocore.exceptions import ClientError

    try:
        s3.head_bucket(Bucket=bucket)
    except ClientError as error:
        if str(error.response.get("Error", {}).get("Code")) in MISSING_BUCKET:
            return False
        raise
    return True


def verify(
    dynamodb: Any, table: str, s3: Any, bucket: str | None, conversation_id: str | None, now: float | None = None
) -> Report:
    """Read the table's links and the bucket's copies, and verify them. VerifyFailure when there is no
    bucket to compare with: the chain alone proves nothing against a rewrite that recomputes its hashes."""
    if not bucket or s3 is None:
        raise VerifyFailure(f"cannot verify the audit: no {BUCKET} to compare the table with (the record)")
    try:
        read = read_table_links(dynamodb, table, conversation_id)
    except AWS_ERRORS as error:
        raise VerifyFailure(f"reading the audit items of the table {table} failed ({aws_reason(error)})") from None
    report = Report(links=len(read.links), chains=len(chains(read.links)))
    report.problems = [*read.strays, *verify_links(read.links, now=now)]
    try:
        if not bucket_exists(s3, bucket):
            raise VerifyFailure(f"cannot verify the audit: the audit bucket {bucket} does not exist")
        copies, rewritten = read_copies(s3, bucket, conversation_id)
    except AWS_ERRORS as error:
        raise VerifyFailure(f"reading the audit bucket {bucket} failed ({aws_reason(error)})") from None
    report.copies = len(copies)
    report.problems.extend(compare_copies(read.links, copies, rewritten=rewritten, now=now))
    return report


def _conversation(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise argparse.ArgumentTypeError("a conversation id is a UUID") from None


def main(argv: list[str] | None = None, *, out: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops verify-audit", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--stack", required=True, help="the deployed stack's name")
    parser.add_argument("--region", help="its region (default: the AWS CLI's)")
    parser.add_argument("--conversation", type=_conversation, metavar="ID", help="verify this conversation only")
    args = parser.parse_args(argv)
    out = out or sys.stdout
    try:
        import boto3

        try:
            session = boto3.Session(region_name=args.region)
            cloudformation, dynamodb, s3 = session_clients(session, "cloudformation", "dynamodb", "s3")
        except AWS_ERRORS as error:
            raise VerifyFailure(f"connecting to AWS failed ({aws_reason(error)})") from None
        table, bucket = stack_resources(cloudformation, args.stack)
        report = verify(dynamodb, table, s3, bucket, args.conversation)
    except VerifyFailure as error:
        return report_failure("verify-audit", error)
    for problem in report.problems:
        print(f"verify-audit: {problem}", file=out)
    print(f"verify-audit: {report.summary()}.", file=out)
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
