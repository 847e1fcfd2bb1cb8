"""How the operator tools read an AWS error: its code and AWS's own message, never a traceback."""

from __future__ import annotations

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
