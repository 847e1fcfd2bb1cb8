"""`python -m devstack verify-audit`: the staff audit's hash chains and WORM copy, shown on moto.

A short desk session through the APIs (a resident's generated replies and a hand-off; a staff member's
claims, a release, decisions, a reply and a close), then:

1. every chain is verified, table against the audit bucket: it must verify;
2. one decision's audit item is rewritten with a plain PutItem (its outcome changed, its hash kept), as
   the staff function's role could: the chain must name that link as changed;
3. it is rewritten again with its hash recomputed, so the table's chain alone looks whole: the WORM copy
   must name that link as differing.

Exit 0 when the clean audit verified and both rewrites were caught; 1 otherwise.
"""

from __future__ import annotations

from typing import Any, TextIO

from devstack.desk_walk import CORRECTION, HANDOFF_REPLY, DeskWalkError
from devstack.stack import AUDIT_BUCKET, TABLE_NAME, LocalStack, local_stack
from dialogue.audit_chain import Problem, link_hash
from dialogue.aws.audit import verify_table_audit

STAFF = "verify-audit"


def _staff(stack: LocalStack, method: str, path: str, body: Any = None, query: str = "") -> Any:
    response = stack.call_staff_api(method, path, body, staff=STAFF, query=query)
    if response.status != 200:
        raise DeskWalkError(f"{method} {path}: the staff API answered {response.status}")
    return response.body


def desk_session(stack: LocalStack) -> None:
    """Turns that fill both queues; a claim taken and released; every review claimed and decided (a held
    reply rejected with a correction, a passed one approved); the hand-off claimed, answered and closed."""
    from devstack.month import resident_scripts
    from dialogue.human_checks import use_draws
    from dialogue.pack import default_pack_dir

    # The desk's own scripted conversations (the code names no desk): generated replies and a hand-off.
    # Every reply shown is drawn for a check here (a desk draws a share at random: dialogue.human_checks),
    # so the session always has reviews whose decisions the audit chains.
    with use_draws(lambda: 0.0):
        for script in resident_scripts(default_pack_dir()):
            conversation_id = str(stack.call_api("POST", "/conversations").body["conversation_id"])
            for text in script:
                answered = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": text})
                if answered.status not in (200, 202):
                    raise DeskWalkError(f"the turn API answered {answered.status}")
                stack.drain()
    reviews = _staff(stack, "GET", "/staff/reviews", query="order=oldest")["items"]
    handoffs = _staff(stack, "GET", "/staff/handoffs", query="order=oldest")["items"]
    if not reviews or not handoffs:
        raise DeskWalkError("the session left no review or no hand-off")
    for number, item in enumerate(reviews):
        where = f"/staff/reviews/{item['conversation_id']}/{item['turn_id']}"
        _staff(stack, "POST", f"{where}/claim")
        if number == 0:  # a claim let go, then taken again
            _staff(stack, "POST", f"{where}/release")
            _staff(stack, "POST", f"{where}/claim")
        held = item["reply_screen"] == "held for human review" or item["fallback_used"]
        decision = (
            {"decision": "reject", "reason": "other", "correction": CORRECTION} if held else {"decision": "approve"}
        )
        _staff(stack, "POST", f"{where}/decision", decision)
    for item in handoffs:
        where = f"/staff/handoffs/{item['conversation_id']}/{item['turn_id']}"
        _staff(stack, "POST", f"{where}/claim")
        _staff(stack, "POST", f"{where}/reply", {"text": HANDOFF_REPLY})
        _staff(stack, "POST", f"{where}/close")


def audit_items(stack: LocalStack) -> list[dict[str, Any]]:
    return [item for item in stack.table_items() if item["pk"]["S"].startswith("AUDIT#")]


def verify(stack: LocalStack) -> list[Problem]:
    return verify_table_audit(stack.dynamodb, TABLE_NAME, stack.s3, AUDIT_BUCKET)


def _named(problems: list[Problem], item: dict[str, Any], words: str) -> bool:
    conversation_id = item["pk"]["S"].removeprefix("AUDIT#")
    turn_id, seq = int(item["turn_id"]["N"]), int(item["seq"]["N"])
    return any(
        (p.conversation_id, p.turn_id, p.seq) == (conversation_id, turn_id, seq) and words in p.what for p in problems
    )


def run(out: TextIO) -> int:
    def say(line: str) -> None:
        print(f"verify-audit: {line}", file=out, flush=True)

    with local_stack() as stack:
        desk_session(stack)
        items = audit_items(stack)
        copies = stack.s3.list_objects_v2(Bucket=AUDIT_BUCKET, Prefix="audit/").get("KeyCount", 0)
        say(f"a desk session wrote {len(items)} audit links and {copies} WORM copies")
        clean = verify(stack)
        for problem in clean:
            say(f"  {problem}")
        if clean or not items:
            say("the clean audit did not verify")
            return 1
        say("1. the clean audit verifies, table and WORM copies alike")

        (decision, *_) = [item for item in items if item["action"]["S"] == "decision"]
        was = decision["outcome"]["S"]
        changed = {**decision, "outcome": {"S": "rejected" if was != "rejected" else "approved"}}
        stack.dynamodb.put_item(TableName=TABLE_NAME, Item=changed)  # no condition: as the staff role could
        say(f"2. a PutItem rewrote a decision's outcome from {was} to {changed['outcome']['S']}, hash kept:")
        after_rewrite = verify(stack)
        for problem in after_rewrite:
            say(f"  {problem}")
        caught = _named(after_rewrite, decision, "changed")

        from boto3.dynamodb.types import TypeDeserializer

        plain = {name: TypeDeserializer().deserialize(value) for name, value in changed.items()}
        plain["conversation_id"] = plain["pk"].removeprefix("AUDIT#")
        rehashed = {**changed, "hash": {"S": link_hash(plain)}}
        stack.dynamodb.put_item(TableName=TABLE_NAME, Item=rehashed)
        say("3. the same rewrite with its hash recomputed (the next link, if any, still names the old one):")
        after_rehash = verify(stack)
        for problem in after_rehash:
            say(f"  {problem}")
        caught_by_copy = _named(after_rehash, decision, "differs from its WORM copy")

    if caught and caught_by_copy:
        say("both rewrites were caught: the chain names a changed link, the WORM copy a rehashed one")
        return 0
    say("a rewrite was not caught")
    return 1
