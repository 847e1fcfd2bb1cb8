"""Retries, concurrency, duplicate delivery, poison messages and limits, on moto.

Each test drives the real handlers, queues and worker of the local stack.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import pytest
from desk_calls import new_conversation
from moto.dynamodb.models import DynamoDBBackend

from devstack.faults import Fault
from devstack.stack import LocalStack
from dialogue import conversation
from dialogue.aws.factory import get_store, reset_caches
from dialogue.errors import ConcurrentTurnConflict
from dialogue.pack import DomainPack
from dialogue.settings import get_settings
from dialogue.state import DialogueState
from dialogue.understanding import understand


def turn_items(stack: LocalStack, conversation_id: str) -> list[dict[str, Any]]:
    items = [
        item
        for item in stack.table_items()
        if item["pk"]["S"] == f"CONV#{conversation_id}" and item["sk"]["S"].startswith("TURN#")
    ]
    return sorted((i for i in items if not i["sk"]["S"].endswith("#REPLY")), key=lambda i: i["sk"]["S"])


# --- idempotency ----------------------------------------------------------------------------------


def test_retry_with_the_same_idempotency_key_gets_the_same_answer_and_one_turn(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    path = f"/conversations/{conversation_id}/turns"
    headers = {"Idempotency-Key": "client-retry-0001"}
    first = stack.call_api("POST", path, {"text": "Can I talk to a person?"}, headers=headers)
    items = stack.table_items()
    again = stack.call_api("POST", path, {"text": "Can I talk to a person?"}, headers=headers)
    assert (again.status, again.body) == (first.status, first.body) == (200, again.body)
    assert stack.table_items() == items, "a retry writes nothing"
    assert len(turn_items(stack, conversation_id)) == 1
    # A new key is a new turn.
    other = stack.call_api("POST", path, {"text": "Can I talk to a person?"}, headers={"Idempotency-Key": "k2"})
    assert other.body["turn_id"] == 2


def test_idempotent_generated_turn_is_queued_once(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    path = f"/conversations/{conversation_id}/turns"
    for _ in range(3):
        answer = stack.call_api("POST", path, {"text": "Forklift by email"}, headers={"Idempotency-Key": "abc"})
        assert (answer.status, answer.body["turn_id"], answer.body["action"]) == (202, 1, "confirm")
    stack.run_dispatch()
    jobs = [m for m in stack.sent_messages if m["queue_url"] == stack.realize_queue.url]
    assert len(jobs) == 1


def test_a_failed_attempt_can_be_retried_with_its_key(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    missing = f"/conversations/{'0' * 8}-0000-4000-8000-{'0' * 12}/turns"
    assert stack.call_api("POST", missing, {"text": "hello"}, headers={"Idempotency-Key": "x1"}).status == 404
    answer = stack.call_api(
        "POST", f"/conversations/{conversation_id}/turns", {"text": "hello"}, headers={"Idempotency-Key": "x1"}
    )
    assert answer.status == 202


@pytest.mark.parametrize("bad_key", ["", "has space", "x" * 129, "ключ"])
def test_malformed_idempotency_key_is_refused(stack: LocalStack, bad_key: str) -> None:
    conversation_id = new_conversation(stack)
    answer = stack.call_api(
        "POST", f"/conversations/{conversation_id}/turns", {"text": "hello"}, headers={"Idempotency-Key": bad_key}
    )
    assert answer.status == 400
    assert answer.body["error"] == "InvalidIdempotencyKey"
    assert len(turn_items(stack, conversation_id)) == 0


def test_the_request_item_holds_neither_the_text_nor_the_key(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    secret = "Quillfeather-Sentinel-6612 wants forklift"
    key = "Keyholder-Sentinel-4410"
    stack.call_api(
        "POST", f"/conversations/{conversation_id}/turns", {"text": secret}, headers={"Idempotency-Key": key}
    )
    records = [item for item in stack.table_items() if item["sk"]["S"].startswith("REQUEST#")]
    assert len(records) == 1
    assert set(records[0]) == {"pk", "sk", "turn_id", "expires_at"}
    assert "quillfeather" not in str(stack.table_items()).lower()
    assert "keyholder" not in str(stack.table_items()).lower()


def test_a_retry_after_the_answer_was_lost_gets_the_turn(stack: LocalStack) -> None:
    """The turn's transaction took effect and its answer was lost on the way back (the client saw a
    503): the retry with the same key gets the committed turn, and nothing more is written."""
    conversation_id = new_conversation(stack)
    path = f"/conversations/{conversation_id}/turns"
    headers = {"Idempotency-Key": "lost-answer"}
    cue = stack.faults.inject("dynamodb.TransactWriteItems", Fault.LOST_RESPONSE)
    lost = stack.call_api("POST", path, {"text": "Forklift by email"}, headers=headers)
    assert (cue.fired, lost.status, lost.body["error"]) == (1, 503, "StoreUnavailable")
    items = stack.table_items()
    assert len(turn_items(stack, conversation_id)) == 1  # the write happened
    retry = stack.call_api("POST", path, {"text": "Forklift by email"}, headers=headers)
    assert (retry.status, retry.body["turn_id"], retry.body["action"], retry.body["status"]) == (
        202,
        1,
        "confirm",
        "pending",
    )
    assert stack.table_items() == items, "the retry writes nothing"
    assert any('"RetriesAnswered"' in line for line in stack.log_lines)
    stack.run_dispatch()
    assert len([m for m in stack.sent_messages if m["queue_url"] == stack.realize_queue.url]) == 1


def test_a_retry_gets_its_own_turn_after_later_turns_and_whatever_its_text(stack: LocalStack) -> None:
    """A key's retry arriving after other turns changed the conversation, even with another text, gets
    the turn the key made (as it stands now), never a new one."""
    conversation_id = new_conversation(stack)
    path = f"/conversations/{conversation_id}/turns"
    first = stack.call_api("POST", path, {"text": "Can I talk to a person?"}, headers={"Idempotency-Key": "one"})
    later = stack.call_api("POST", path, {"text": "Forklift by email"}, headers={"Idempotency-Key": "two"})
    assert (first.body["turn_id"], later.body["turn_id"]) == (1, 2)
    items = stack.table_items()
    for text in ("Can I talk to a person?", "Forklift by email"):
        again = stack.call_api("POST", path, {"text": text}, headers={"Idempotency-Key": "one"})
        assert (again.status, again.body) == (first.status, first.body)
    assert stack.table_items() == items
    assert stack.call_api("GET", f"/conversations/{conversation_id}").body["turn_count"] == 2


def test_a_twin_request_racing_on_the_same_state_gets_the_first_turn_through_the_api(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two requests with one key read the same state version; the second's transaction meets the
    first's REQUEST item and answers with the first's turn, status code and all."""
    conversation_id = new_conversation(stack)
    path = f"/conversations/{conversation_id}/turns"
    headers = {"Idempotency-Key": "twin"}
    stale = conversation.load_conversation(get_store(), UUID(conversation_id))
    first = stack.call_api("POST", path, {"text": "Forklift by email"}, headers=headers)
    items = stack.table_items()
    monkeypatch.setattr(conversation, "load_conversation", lambda *_: stale)  # read before the first wrote
    twin = stack.call_api("POST", path, {"text": "Forklift by email"}, headers=headers)
    assert (twin.status, twin.body) == (first.status, first.body) == (202, first.body)
    assert stack.table_items() == items


# --- concurrency ----------------------------------------------------------------------------------


@pytest.fixture
def atomic_dynamodb_requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make each moto DynamoDB request atomic, as each DynamoDB request is; handlers still interleave."""
    lock = threading.RLock()

    def locked(method: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            with lock:
                return method(*args, **kwargs)

        return run

    for name in ("get_item", "put_item", "transact_write_items", "update_item", "scan"):
        monkeypatch.setattr(DynamoDBBackend, name, locked(getattr(DynamoDBBackend, name)))
    yield


TEXTS = ["forklift", "email please", "Data Support Certificate", "phone works", "I need childcare"]


# Fifty turns at once, each through the turn logic the handler runs (`conversation.take_turn`: read the
# state, understand, decide, write one conditional transaction), on fifty threads. Not through the
# handler itself: one process here would share the handler's per-process singletons (the resolver's
# current event, Powertools' metrics buffer) between calls, which Lambda never does (one call per
# process at a time), and the run would test that sharing instead. The API's answer to a conflict,
# 409 with Retry-After, is tested on the handler in tests/integration/test_faults.py.
def test_fifty_concurrent_turns_lose_no_update(
    stack: LocalStack, pack: DomainPack, atomic_dynamodb_requests: None
) -> None:
    # Given one conversation and fifty turns sent at once
    conversation_id = new_conversation(stack)
    store, settings = get_store(), get_settings()
    start = threading.Barrier(50)

    def send(index: int) -> tuple[str, int | None]:
        text = TEXTS[index % len(TEXTS)]
        start.wait()
        try:
            view = conversation.take_turn(
                UUID(conversation_id),
                text,
                store=store,
                pack=pack,
                now=datetime.now(UTC),
                max_turns=settings.max_turns_per_conversation,
            )
        except ConcurrentTurnConflict:
            return text, None
        return text, view.turn.turn_id

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(send, range(50)))

    # Then each turn either applied on the state it read or was refused as a conflict
    applied = {turn_id: text for text, turn_id in results if turn_id is not None}
    refused = [text for text, turn_id in results if turn_id is None]
    assert len(applied) + len(refused) == 50
    assert applied, "the first writer always wins"
    # And turn ids are contiguous from 1, the count matches, and every turn built on the one before it
    assert sorted(applied) == list(range(1, len(applied) + 1))
    assert stack.call_api("GET", f"/conversations/{conversation_id}").body["turn_count"] == len(applied)
    state = DialogueState.new(pack.frame)
    for item in turn_items(stack, conversation_id):
        turn_id = int(item["sk"]["S"].removeprefix("TURN#"))
        state = state.with_updates(understand(applied[turn_id], pack).slot_updates)
        stored = {slot: value["S"] for slot, value in item["slots"]["M"].items()}
        assert stored == state.slots, f"turn {turn_id} did not build on turn {turn_id - 1}"


def test_two_requests_with_one_key_racing_on_one_version_both_answer_with_the_stored_turn(
    stack: LocalStack, pack: DomainPack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loser of the race reads the same state version, so it builds a turn with the winner's id; it
    must answer with the turn the winner stored, not with its own record, which was never written."""
    conversation_id = UUID(new_conversation(stack))
    store, settings = get_store(), get_settings()
    stale = conversation.load_conversation(store, conversation_id)
    first = conversation.take_turn(
        conversation_id, "Can I talk to a person?", store=store, pack=pack, now=datetime(2026, 12, 1, 9, tzinfo=UTC),
        max_turns=settings.max_turns_per_conversation, request_key="one-key",
    )  # fmt: skip
    # The twin request read the state before the first wrote: the same version, so the same next turn id
    monkeypatch.setattr(conversation, "load_conversation", lambda *_: stale)
    twin = conversation.take_turn(
        conversation_id, "Can I talk to a person?", store=store, pack=pack, now=datetime(2026, 12, 1, 10, tzinfo=UTC),
        max_turns=settings.max_turns_per_conversation, request_key="one-key",
    )  # fmt: skip
    assert twin.turn.turn_id == first.turn.turn_id == 1
    assert twin.turn.created_at == first.turn.created_at == datetime(2026, 12, 1, 9, tzinfo=UTC)
    assert len(turn_items(stack, str(conversation_id))) == 1


# --- at-least-once delivery -----------------------------------------------------------------------


def test_every_message_delivered_three_times_gives_one_reply_per_turn(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    path = f"/conversations/{conversation_id}/turns"
    for text in ("I want the Data Support Certificate.", "Email is best.", "When does it meet?"):
        stack.call_api("POST", path, {"text": text})
    stack.run_dispatch()
    # Every RealizeJob delivered three times
    jobs = [m["body"] for m in stack.sent_messages if m["queue_url"] == stack.realize_queue.url]
    for body in jobs * 2:
        stack.sqs.send_message(QueueUrl=stack.realize_queue.url, MessageBody=body)
    while stack.realizer.poll_once():
        pass
    # and every RealizedReply delivered three times
    replies = [reply.model_dump_json() for reply in stack.realized_replies().values()]
    for body in replies * 2:
        stack.sqs.send_message(QueueUrl=stack.screen_queue.url, MessageBody=body)
    stack.drain()
    items = stack.table_items()
    reply_items = [i for i in items if i["sk"]["S"].endswith("#REPLY")]
    assert len(reply_items) == 3
    details = [stack.call_api("GET", f"{path}/{n}").body for n in (1, 2, 3)]
    assert [d["status"] for d in details] == ["final"] * 3
    assert [stack.stored_turn(conversation_id, n)["screens_fired"] for n in (1, 2, 3)] == [[], [], []]
    assert any('"DuplicateRepliesIgnored"' in line for line in stack.log_lines)


# --- poison messages ------------------------------------------------------------------------------


def test_poison_reply_reaches_the_dlq_and_the_rest_of_its_batch_succeeds(stack: LocalStack) -> None:
    # Given a queue that redelivers at once, a good reply and a poison message in the same batch
    stack.sqs.set_queue_attributes(QueueUrl=stack.screen_queue.url, Attributes={"VisibilityTimeout": "0"})
    conversation_id = new_conversation(stack)
    stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "Can I have the forklift course?"})
    stack.run_dispatch()
    stack.run_realizer()
    stack.sqs.send_message(QueueUrl=stack.screen_queue.url, MessageBody='{"not": "a reply"}')
    # When the screen function has seen the poison message maxReceiveCount times
    for _ in range(8):
        stack.run_screen_function()
    # Then the poison message is in the DLQ, and the good reply was applied
    dead = stack.sqs.receive_message(QueueUrl=stack.screen_dlq.url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in dead] == ['{"not": "a reply"}']
    detail = stack.call_api("GET", f"/conversations/{conversation_id}/turns/1").body
    assert detail["status"] == "final"
    left = stack.sqs.receive_message(QueueUrl=stack.screen_queue.url, MaxNumberOfMessages=10).get("Messages", [])
    assert left == []


# --- limits ---------------------------------------------------------------------------------------


def test_turn_limit_per_conversation(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAX_TURNS_PER_CONVERSATION", "3")
    reset_caches()
    conversation_id = new_conversation(stack)
    path = f"/conversations/{conversation_id}/turns"
    statuses = [stack.call_api("POST", path, {"text": "Can I talk to a person?"}).status for _ in range(4)]
    assert statuses == [200, 200, 200, 409]
    refused = stack.call_api("POST", path, {"text": "Can I talk to a person?"})
    assert refused.body == {
        "error": "TurnLimitReached",
        "message": "This conversation has reached its turn limit; start a new conversation.",
    }
    assert "retry-after" not in refused.headers
    assert len(turn_items(stack, conversation_id)) == 3


def test_worded_replies_per_conversation_per_hour_are_capped_with_a_429(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each worded reply wakes or keeps a GPU, and the turn API is public: one conversation may ask for
    MAX_GENERATED_TURNS_PER_HOUR of them an hour. Past that a generated turn gets 429 with the seconds
    until its hour ends, and nothing is stored; fixed-text turns, which call no model, still answer; the
    next hour takes generated turns again."""
    monkeypatch.setenv("MAX_GENERATED_TURNS_PER_HOUR", "2")
    reset_caches()
    conversation_id = new_conversation(stack)
    path = f"/conversations/{conversation_id}/turns"
    # Each changes the choices, so each is confirmed again (a turn that changes nothing gets fixed text).
    worded, other = {"text": "Forklift, by email."}, {"text": "Data support, by phone."}
    assert [stack.call_api("POST", path, text).status for text in (worded, other)] == [202, 202]
    stack.advance(600)
    refused = stack.call_api("POST", path, worded)
    assert (refused.status, refused.body["error"]) == (429, "GeneratedTurnLimitReached")
    assert refused.body["message"].count(".") == 1 and "Forklift" not in refused.body["message"]
    assert 2990 <= int(refused.headers["retry-after"]) <= 3000
    assert len(turn_items(stack, conversation_id)) == 2
    assert stack.call_api("POST", path, {"text": "Can I talk to a person?"}).status == 200
    stack.advance(3000)
    assert stack.call_api("POST", path, worded).status == 202
    assert len(turn_items(stack, conversation_id)) == 4


def test_a_limit_never_refuses_the_retry_of_a_turn_it_already_took(stack: LocalStack, pack: DomainPack) -> None:
    """The answer to a committed turn was lost and the client retries with the same Idempotency-Key after
    the conversation reached a limit: it gets the turn it made, not the limit's refusal, and nothing new
    is written. Called below the API (take_turn on the stack's store), so the answer comes from the
    REQUEST receipt alone."""
    from dialogue.errors import GeneratedTurnLimitReached, TurnLimitReached

    store = get_store()
    conversation_id = new_conversation(stack)
    worded, other = "Forklift, by email.", "Data support, by phone."

    def turn(text: str, key: str, *, max_turns: int = 200, max_generated_per_hour: int | None = None) -> int:
        view = conversation.take_turn(
            UUID(conversation_id),
            text,
            store=store,
            pack=pack,
            now=stack.clock.now(),
            max_turns=max_turns,
            request_key=key,
            max_generated_per_hour=max_generated_per_hour,
        )
        return view.turn.turn_id

    assert turn(worded, "first", max_generated_per_hour=1) == 1
    with pytest.raises(GeneratedTurnLimitReached):
        turn(other, "second", max_generated_per_hour=1)
    assert turn(worded, "first", max_generated_per_hour=1) == 1
    assert turn("Can I talk to a person?", "third", max_turns=2) == 2
    with pytest.raises(TurnLimitReached):
        turn("Can I talk to a person?", "fourth", max_turns=2)
    assert turn("Can I talk to a person?", "third", max_turns=2) == 2
    assert turn(worded, "first", max_turns=2) == 1
    assert len(turn_items(stack, conversation_id)) == 2
