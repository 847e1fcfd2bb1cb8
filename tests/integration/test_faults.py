"""Faults injected into every AWS call a turn makes: the turn path, the dispatch, the worker and the
screen path, on moto (devstack.faults).

Each case posts one generated turn as the resident's page does (one Idempotency-Key, retried on a
409 or 503 as `Retry-After` asks), then runs the asynchronous path as AWS would, each consumer
retrying what failed once its timeout has passed. After every fault:

- no turn is lost or doubled: the page gets turn 1, the table holds one TURN item and one REPLY item;
- no turn is left pending past its deadline, and a fault that clears is answered before it;
- every refusal the page saw is a 409 or 503 with `Retry-After` and one sentence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from pack_files import desk_reply

from devstack.faults import Fault
from devstack.stack import SCREEN_VISIBILITY_TIMEOUT, ApiResponse, LocalStack

TEXT = "I want the Forklift Operator Licence, and email is best."
KEY = "page-send-0001"
ATTEMPTS = 8
DEADLINE_SECONDS = 60
STEP_SECONDS = 5  # the worker's retry delay; the screen queue's visibility timeout is six steps

COMMON = (Fault.THROTTLING, Fault.INTERNAL_ERROR, Fault.UNAVAILABLE, Fault.TIMEOUT, Fault.LOST_RESPONSE)


@dataclass(frozen=True)
class Case:
    phase: str  # "turn": while the page posts; "async": after the turn is committed
    cues: tuple[tuple[str, Fault, int], ...]  # (operation, fault, calls to let through first)
    by_deadline: bool = False  # the fault leaves the fallback to the deadline

    @property
    def id(self) -> str:
        return "+".join(f"{op}@{skip}:{fault}" if skip else f"{op}:{fault}" for op, fault, skip in self.cues)


def cases() -> list[Case]:
    found: list[Case] = []
    # The turn path: load the state, commit the turn.
    for operation, faults in (
        ("dynamodb.GetItem", COMMON),
        ("dynamodb.TransactWriteItems", (*COMMON, Fault.TRANSACTION_CONFLICT, Fault.CONDITIONAL_FAILURE)),
    ):
        found += [Case("turn", ((operation, fault, 0),)) for fault in faults]
    # The commit's answer is lost, and the retry's reads of the key's turn fail: the third read is the
    # retry's read of the REQUEST item, the fourth its read of the turn.
    found += [
        Case("turn", (("dynamodb.TransactWriteItems", Fault.LOST_RESPONSE, 0), ("dynamodb.GetItem", fault, skip)))
        for skip in (2, 3)
        for fault in COMMON
    ]
    # The dispatch: the deadline message (first send), the job (second send).
    found += [Case("async", (("sqs.SendMessage", fault, skip),)) for skip in (0, 1) for fault in COMMON]
    # The worker: receive, send the replies, delete the jobs.
    found += [
        Case("async", ((operation, fault, 0),))
        for operation in ("sqs.ReceiveMessage", "sqs.SendMessageBatch", "sqs.DeleteMessageBatch")
        for fault in COMMON
    ]
    # The screen function's write of the screened reply.
    found += [
        Case("async", (("dynamodb.TransactWriteItems", fault, 0),)) for fault in (*COMMON, Fault.TRANSACTION_CONFLICT)
    ]
    # A false "condition failed" reads as "already final": the reply is dropped, the deadline stores the fallback.
    found.append(Case("async", (("dynamodb.TransactWriteItems", Fault.CONDITIONAL_FAILURE, 0),), by_deadline=True))
    return found


CASES = cases()


def assert_clear_refusal(answer: ApiResponse) -> None:
    assert answer.status in (409, 503), answer
    assert answer.headers.get("retry-after") == "1", answer
    assert set(answer.body) == {"error", "message"}, answer
    message = answer.body["message"]
    assert message.endswith(".") and message.count(". ") == 0 and message.count(";") <= 1, message


def post_as_the_page(stack: LocalStack, conversation_id: str) -> tuple[ApiResponse, list[ApiResponse]]:
    """Send the turn with one key until it is accepted; return the acceptance and the refusals before it."""
    refusals: list[ApiResponse] = []
    for _ in range(ATTEMPTS):
        answer = stack.call_api(
            "POST", f"/conversations/{conversation_id}/turns", {"text": TEXT}, headers={"Idempotency-Key": KEY}
        )
        if answer.status in (200, 202):
            return answer, refusals
        assert_clear_refusal(answer)
        refusals.append(answer)
    raise AssertionError(f"the turn was never accepted: {[(a.status, a.body) for a in refusals]}")


def tolerant(step: Callable[[], int]) -> None:
    """Run one consumer as its runtime does: the worker loop and the event source mappings retry on error."""
    try:
        while step():
            pass
    except Exception:
        pass


def settle_for(stack: LocalStack, seconds: int) -> None:
    """Let `seconds` pass in steps, running the dispatch, the worker and the screen function at each."""
    for _ in range(seconds // STEP_SECONDS):
        for step in (stack.run_dispatch, stack.run_realizer, stack.run_screen_function):
            tolerant(step)
        stack.advance(STEP_SECONDS)


def stored(stack: LocalStack, conversation_id: str) -> dict[str, list[dict[str, Any]]]:
    items = [item for item in stack.table_items() if item["pk"]["S"] == f"CONV#{conversation_id}"]
    kinds: dict[str, list[dict[str, Any]]] = {"turns": [], "replies": [], "requests": []}
    for item in items:
        sort_key = item["sk"]["S"]
        if sort_key.endswith("#REPLY"):
            kinds["replies"].append(item)
        elif sort_key.startswith("TURN#"):
            kinds["turns"].append(item)
        elif sort_key.startswith("REQUEST#"):
            kinds["requests"].append(item)
    return kinds


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_fault_loses_no_turn_doubles_none_and_leaves_none_pending(stack: LocalStack, case: Case) -> None:
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    cues = [stack.faults.inject(op, fault, skip=skip) for op, fault, skip in case.cues]
    if case.phase == "turn":
        accepted, refusals = post_as_the_page(stack, conversation_id)
        assert all(cue.fired == cue.times for cue in cues), "every fault fired while the turn was posted"
    else:
        stack.faults.clear()
        accepted, refusals = post_as_the_page(stack, conversation_id)
        cues = [stack.faults.inject(op, fault, skip=skip) for op, fault, skip in case.cues]
        assert refusals == []

    # The page got the one turn, whatever it took.
    assert (accepted.status, accepted.body["turn_id"], accepted.body["action"]) == (202, 1, "confirm")
    # Before the deadline: the fault fired and the turn was answered anyway (unless the case needs the deadline).
    settle_for(stack, DEADLINE_SECONDS - STEP_SECONDS)
    assert all(cue.fired == cue.times for cue in cues), "every fault fired"
    detail = {
        **stack.stored_turn(conversation_id, 1),
        **stack.call_api("GET", f"/conversations/{conversation_id}/turns/1").body,
    }
    if case.by_deadline:
        assert detail["status"] == "pending"
    else:
        assert detail["status"] == "final", detail
        assert "deadline" not in detail["screens_fired"]
        assert detail["reply"] == desk_reply("confirm", program="forklift", contact_channel="email")
    # Past the deadline: nothing is pending, and the table holds one turn, one reply and one key.
    settle_for(stack, DEADLINE_SECONDS + SCREEN_VISIBILITY_TIMEOUT)
    assert stack.pending_turns() == []
    kinds = stored(stack, conversation_id)
    assert [item["sk"]["S"] for item in kinds["turns"]] == ["TURN#000001"]
    assert len(kinds["replies"]) == 1
    assert len(kinds["requests"]) == 1
    final = {
        **stack.stored_turn(conversation_id, 1),
        **stack.call_api("GET", f"/conversations/{conversation_id}/turns/1").body,
    }
    assert final["status"] == "final"
    assert ("deadline" in final["screens_fired"]) is case.by_deadline
    assert stack.call_api("GET", f"/conversations/{conversation_id}").body["turn_count"] == 1


def test_the_cases_cover_every_call_a_turn_makes() -> None:
    """Each AWS operation on the turn's way, by the code that makes it, is in the matrix."""
    covered = {op for case in CASES for op, _, _ in case.cues}
    assert covered == {
        "dynamodb.GetItem",  # turn API: load the state; a retry's reads of its key's turn
        "dynamodb.TransactWriteItems",  # turn API: commit; screen function: finalize
        "sqs.SendMessage",  # dispatch: the deadline and the job
        "sqs.ReceiveMessage",  # worker
        "sqs.SendMessageBatch",  # worker: replies
        "sqs.DeleteMessageBatch",  # worker: answered jobs
    }
    faults = {fault for case in CASES for _, fault, _ in case.cues}
    assert faults == set(Fault)


def test_a_fault_injector_cue_fails_only_the_calls_it_names(stack: LocalStack) -> None:
    cue = stack.faults.inject("sqs.SendMessage", Fault.THROTTLING, skip=1, times=2)
    from botocore.exceptions import ClientError

    queue = stack.realize_queue.url
    stack.sqs.send_message(QueueUrl=queue, MessageBody="one")
    for _ in range(2):
        with pytest.raises(ClientError) as raised:
            stack.sqs.send_message(QueueUrl=queue, MessageBody="two")
        assert raised.value.response["Error"]["Code"] == "ThrottlingException"
    stack.sqs.send_message(QueueUrl=queue, MessageBody="three")
    assert (cue.seen, cue.fired) == (4, 2)
    bodies = [m["Body"] for m in stack.sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]]
    assert sorted(bodies) == ["one", "three"]


def test_a_lost_response_took_effect(stack: LocalStack) -> None:
    from botocore.exceptions import ReadTimeoutError

    stack.faults.inject("sqs.SendMessage", Fault.LOST_RESPONSE)
    with pytest.raises(ReadTimeoutError):
        stack.sqs.send_message(QueueUrl=stack.realize_queue.url, MessageBody="sent")
    (message,) = stack.sqs.receive_message(QueueUrl=stack.realize_queue.url)["Messages"]
    assert message["Body"] == "sent"
