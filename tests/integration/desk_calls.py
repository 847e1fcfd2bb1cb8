"""The calls the integration tests make as a resident and as staff, through the stack's APIs as API Gateway
delivers them (each must succeed: a refusal a test expects is asked for with `stack.call_api` itself)."""

from __future__ import annotations

from typing import Any

from devstack.stack import LocalStack
from dialogue.aws.table import STATE_SK


def new_conversation(stack: LocalStack) -> str:
    return str(stack.call_api("POST", "/conversations").body["conversation_id"])


def say(stack: LocalStack, conversation_id: str, text: str) -> dict[str, Any]:
    """A resident's turn, answered 200 (a fixed reply) or 202 (pending while a model words it); its body."""
    response = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": text})
    assert response.status in (200, 202), response.body
    return dict(response.body)


def staff(stack: LocalStack, method: str, path: str, body: Any = None, *, who: str = "ana", query: str = "") -> Any:
    """A staff call (as the signed-in staff member `who`) that must succeed; its body."""
    response = stack.call_staff_api(method, path, body, staff=who, query=query)
    assert response.status == 200, (method, path, response.status, response.body)
    return response.body


def stored_state(stack: LocalStack, conversation_id: str) -> dict[str, Any]:
    """The conversation's STATE item as the table holds it (typed attribute values)."""
    (item,) = [
        item
        for item in stack.table_items()
        if item["sk"]["S"] == STATE_SK and item["pk"]["S"] == f"CONV#{conversation_id}"
    ]
    return item
