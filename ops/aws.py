"""How the operator tools read an AWS error: its code and AWS's own message, never a traceback."""

from __future__ import annotations

import sys
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

AWS_ERRORS = (BotoCoreError, ClientError)
"""What a boto3 call raises: the service's answer (ClientError) or no answer at all (BotoCoreError: no
credentials, no endpoint, a waiter that gave up)."""


def aws_reason(error: Exception) -> str:
    """`Code: message` for an AWS answer, the message for the rest, without a closing full stop."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        code = details.get("Code", "Error")
        message = details.get("Message", "")
        return f"{code}: {message}".rstrip(" .:") if message else code
    return str(error).rstrip(" .")


def sentence(text: str) -> str:
    """`text` ended with one full stop, unless it asks a question."""
    text = text.rstrip(" .")
    return text if text.endswith("?") else text + "."


def report_failure(tool: str, error: Exception) -> int:
    """How an operator tool ends on a failure it words: `tool: the error.` on stderr, and exit status 1."""
    print(f"{tool}: {sentence(str(error))}", file=sys.stderr)
    return 1


def session_clients(session: Any, *services: str) -> list[Any]:
    """A boto3 client of `session` for each service, in the order named."""
    return [session.client(service) for service in services]


def physical_ids(cloudformation: Any, stack: str) -> dict[str, str]:
    """Each of the stack's resources by logical id: its physical id, skipping any already deleted.
    ListStackResources pages through every resource, where DescribeStackResources stops at 100 (the
    transformed template has more). AWS errors are the caller's to word."""
    physical: dict[str, str] = {}
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack):
        for summary in page["StackResourceSummaries"]:
            if summary.get("PhysicalResourceId") and summary.get("ResourceStatus") != "DELETE_COMPLETE":
                physical[summary["LogicalResourceId"]] = summary["PhysicalResourceId"]
    return physical
