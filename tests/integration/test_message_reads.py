"""The resident's message list read from its end: the same messages, numbered the same, as the whole
conversation gives (on generated conversations); and a poll reads as few items in a long conversation as
in a short one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

from boto3.dynamodb.types import TypeDeserializer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devstack.history import StaffNote, TurnKind, conversation_items, put_items
from devstack.stack import TABLE_NAME, LocalStack, local_stack
from dialogue.actions import ReplySource, TurnStatus
from dialogue.aws.factory import get_store
from dialogue.aws.table import MESSAGE_PREFIX, TURN_PREFIX, partition_key, turn_from_item
from dialogue.conversation import EXPIRED_REPLY, Message, MessagePage, _fixed_text, messages
from dialogue.pack import DomainPack
from dialogue.ports import StaffMessage
from dialogue.records import TurnRecord

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def items_under(stack: LocalStack, conversation_id: UUID, prefix: str) -> list[dict[str, Any]]:
    """Every item of the conversation whose sort key begins with `prefix`, read consistently, as plain values."""
    query = stack.dynamodb.get_paginator("query").paginate(
        TableName=TABLE_NAME,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues={":pk": {"S": partition_key(conversation_id)}, ":prefix": {"S": prefix}},
        ConsistentRead=True,
    )
    return [item for page in query for item in page["Items"]]


def whole_conversation_messages(stack: LocalStack, pack: DomainPack, conversation_id: UUID, after: int) -> MessagePage:
    """The message list as it was computed before it was read from the end: from every turn, reply and staff
    message of the conversation, read whole from the table. The reference the tail read must agree with."""
    plain = TypeDeserializer().deserialize
    turns: list[TurnRecord] = []
    replies: dict[int, str] = {}
    for item in items_under(stack, conversation_id, TURN_PREFIX):
        if item["sk"]["S"].endswith("#REPLY"):
            replies[int(item["sk"]["S"].split("#")[1])] = str(plain(item["reply"]))
        else:
            turns.append(turn_from_item(item))
    staff: list[StaffMessage] = []
    for item in items_under(stack, conversation_id, MESSAGE_PREFIX):
        _, after_turn, number = item["sk"]["S"].split("#")
        at = datetime.fromisoformat(str(plain(item["at"])))
        about, text = int(plain(item["about_turn"])), str(plain(item["text"]))
        staff.append(StaffMessage(after_turn=int(after_turn), number=int(number), about_turn=about, text=text, at=at))
    staff_after: dict[int, list[Message]] = {}
    for note in sorted(staff, key=lambda m: (m.after_turn, m.number)):
        staff_after.setdefault(note.after_turn, []).append(
            Message(
                index=0, source="staff", turn_id=note.after_turn, about_turn=note.about_turn, text=note.text, at=note.at
            )
        )
    shown: list[Message] = list(staff_after.get(0, []))
    waiting = False
    for turn in sorted(turns, key=lambda t: t.turn_id):
        if turn.status is TurnStatus.PENDING:
            waiting = True
            break
        text = _fixed_text(turn, pack) if turn.reply_source is ReplySource.FIXED else replies.get(turn.turn_id)
        at = turn.finalized_at or turn.created_at
        shown.append(Message(index=0, source="assistant", turn_id=turn.turn_id, text=text or EXPIRED_REPLY, at=at))
        shown.extend(staff_after.get(turn.turn_id, []))
    numbered = [message.model_copy(update={"index": index}) for index, message in enumerate(shown, start=1)]
    return MessagePage(messages=numbered[after:], next_after=len(numbered), waiting=waiting)


@st.composite
def conversations(draw: Any) -> tuple[list[TurnKind], list[int], int]:
    """Turns (mostly final, some pending anywhere), staff messages after turns in posting order (after turn 0
    too), and the page size of the backwards reads."""
    kinds: list[TurnKind] = ["fixed", "generated", "expired", "pending"]
    turns = draw(st.lists(st.sampled_from(kinds).filter(lambda k: k != "pending" or draw(st.booleans())), max_size=12))
    after_turns = sorted(draw(st.lists(st.integers(0, len(turns)), max_size=7)))
    return turns, after_turns, draw(st.sampled_from([1, 2, 3, 4]))


def test_the_tail_read_gives_the_whole_conversations_messages_and_numbers(pack: DomainPack) -> None:
    with local_stack() as stack:
        store = get_store()

        @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(conversations())
        def agrees(case: tuple[list[TurnKind], list[int], int]) -> None:
            turns, after_turns, page = case
            conversation_id = uuid4()
            notes = [StaffNote(after_turn, f"Staff note {n}.") for n, after_turn in enumerate(after_turns, start=1)]
            items = list(conversation_items(store, conversation_id, turns, notes, start=START))
            put_items(stack.dynamodb, TABLE_NAME, items)
            store.TAIL_PAGE = page  # type: ignore[misc]  # small pages: the merge crosses page ends
            try:
                whole = whole_conversation_messages(stack, pack, conversation_id, 0)
                # Every `after` the API can have given: up to the list's end (before the first pending reply);
                # with none pending, any `after` at all, past the end too.
                last = whole.next_after if whole.waiting else len(turns) + len(notes) + 2
                for after in range(last + 1):
                    expected = whole.model_copy(update={"messages": whole.messages[after:]})  # as it computed it
                    assert messages(store, pack, conversation_id, after) == expected, (turns, after_turns, after)
            finally:
                # The example's items go: moto sorts a table's every item on each query, so a table that kept
                # every example's conversation made each read slower than the last (840 s on a busy machine).
                for item in items:
                    stack.dynamodb.delete_item(TableName=TABLE_NAME, Key={"pk": item["pk"], "sk": item["sk"]})

        try:
            agrees()
        finally:
            del store.TAIL_PAGE  # type: ignore[misc]


def poll_reads(stack: LocalStack, conversation_id: str, after: int) -> tuple[int, dict[str, Any]]:
    with stack.reads.counting() as reads:
        response = stack.call_api("GET", f"/conversations/{conversation_id}/messages", query=f"after={after}")
    assert response.status == 200, response.body
    return reads.items, response.body


def test_a_poll_reads_as_few_items_after_150_turns_as_after_10(stack: LocalStack) -> None:
    store = get_store()
    seen = {}
    for length in (10, 150):
        # Given a conversation of `length` final turns (fixed and generated), with a staff message every
        # ten turns
        conversation_id = uuid4()
        turns: list[TurnKind] = ["fixed" if n % 2 else "generated" for n in range(length)]
        notes = [StaffNote(after_turn, "We will call you.") for after_turn in range(5, length + 1, 10)]
        put_items(stack.dynamodb, TABLE_NAME, conversation_items(store, conversation_id, turns, notes, start=START))
        everything = stack.call_api("GET", f"/conversations/{conversation_id}/messages").body
        assert everything["next_after"] == length + len(notes) and not everything["waiting"]
        end = everything["next_after"]

        # An idle poll, with every message seen, reads the STATE item and the staff message counter
        idle, page = poll_reads(stack, str(conversation_id), end)
        assert (page["messages"], page["next_after"], page["waiting"]) == ([], end, False)
        assert idle == 2

        # A poll while a reply is being prepared, and the poll that then finds it, read a few items more
        turn = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "When does it meet?"})
        assert turn.body["status"] == "pending", turn.body
        waiting, page = poll_reads(stack, str(conversation_id), end)
        assert (page["messages"], page["next_after"], page["waiting"]) == ([], end, True)
        stack.drain()
        found, page = poll_reads(stack, str(conversation_id), end)
        assert [(m["index"], m["source"], m["turn_id"]) for m in page["messages"]] == [
            (end + 1, "assistant", length + 1)
        ]
        assert (page["next_after"], page["waiting"]) == (end + 1, False)
        seen[length] = (idle, waiting, found)

    # The same at 10 and 150 turns: at most the STATE item, the counter, the last turn's TURN and REPLY items
    # and the last staff message
    assert seen[150] == seen[10]
    assert max(seen[150]) <= 5
