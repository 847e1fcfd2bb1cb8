"""A staff member's pass over the desk, through the staff API as a signed-in person would make it.

Every review item is read, claimed and decided: a reply a screen held is rejected (reason `other`)
with a correction, one it passed is approved. Every open hand-off is read, claimed, answered and
closed. Then the desk's figures, and each conversation's messages as its resident's page reads them.
`replay --audit-dir` runs it after the scripted turns, so the audit holds the desk's items (claims,
decisions, staff messages, audit items) and its log lines too.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from devstack.stack import ApiResponse, LocalStack

STAFF = "desk-walk"
CORRECTION = "A staff member checked this reply: please wait for the desk to contact you."
HANDOFF_REPLY = "Hello from the desk: a staff member will contact you by the channel you chose."


class DeskWalkError(RuntimeError):
    """The staff API refused a step a signed-in staff member should be able to take."""


def _ok(response: ApiResponse, step: str) -> Any:
    if response.status != 200:
        raise DeskWalkError(f"{step}: the staff API answered {response.status} {response.body}")
    return response.body


def _all(stack: LocalStack, path: str, query: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = _ok(
            stack.call_staff_api("GET", path, staff=STAFF, query=query + (f"&cursor={cursor}" if cursor else "")),
            f"GET {path}",
        )
        items.extend(page["items"])
        cursor = page.get("next_cursor")
        if not cursor:
            return items


def walk_the_desk(stack: LocalStack) -> Counter[str]:
    """Decide every pending review and answer every open hand-off; returns how many of each step ran."""
    done: Counter[str] = Counter()
    for item in _all(stack, "/staff/reviews", "review=pending&order=oldest&limit=25"):
        where = f"/staff/reviews/{item['conversation_id']}/{item['turn_id']}"
        _ok(stack.call_staff_api("GET", where, staff=STAFF), f"GET {where}")
        _ok(stack.call_staff_api("POST", f"{where}/claim", staff=STAFF), f"claim {where}")
        if item["reply_screen"] == "held for human review":
            decision = {"decision": "reject", "reason": "other", "correction": CORRECTION}
        else:
            decision = {"decision": "approve"}
        _ok(stack.call_staff_api("POST", f"{where}/decision", decision, staff=STAFF), f"decide {where}")
        done[f"reviews {decision['decision']}"] += 1
    for item in _all(stack, "/staff/handoffs", "status=open&order=oldest&limit=25"):
        where = f"/staff/handoffs/{item['conversation_id']}/{item['turn_id']}"
        _ok(stack.call_staff_api("GET", where, staff=STAFF), f"GET {where}")
        _ok(stack.call_staff_api("POST", f"{where}/claim", staff=STAFF), f"claim {where}")
        _ok(stack.call_staff_api("POST", f"{where}/reply", {"text": HANDOFF_REPLY}, staff=STAFF), f"reply {where}")
        _ok(stack.call_staff_api("POST", f"{where}/close", staff=STAFF), f"close {where}")
        done["hand-offs answered"] += 1
    _ok(stack.call_staff_api("GET", "/staff/stats", staff=STAFF), "GET /staff/stats")
    for conversation_id in sorted(_conversations(stack)):
        _ok(stack.call_api("GET", f"/conversations/{conversation_id}/messages"), "GET messages")
        done["message lists read"] += 1
    return done


def _conversations(stack: LocalStack) -> set[str]:
    return {
        item["pk"]["S"].removeprefix("CONV#") for item in stack.table_items() if item["pk"]["S"].startswith("CONV#")
    }
