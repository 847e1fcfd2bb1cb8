"""One open hand-off per conversation, on moto (issue 40, item 2; dialogue.handoffs): a later turn left to a
person joins the open item in the same transaction, and the item lists it and moves to the top; a close
ends it, so the next ask opens a new item, even one that read the item open before the close; an item
gone from the table (its TTL passed) is never joined.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from desk_calls import new_conversation, say, staff

from devstack.stack import TABLE_NAME, LocalStack
from dialogue import conversation
from dialogue.aws.factory import get_store
from dialogue.errors import ConcurrentTurnConflict

NUMBER = "07700 900123"


def item(stack: LocalStack, conversation_id: str, sort_key: str) -> dict[str, Any]:
    (found,) = [
        row
        for row in stack.table_items(TABLE_NAME)
        if row["pk"]["S"] == f"CONV#{conversation_id}" and row["sk"]["S"] == sort_key
    ]
    return found


def turn_key(turn_id: int) -> str:
    return f"TURN#{turn_id:06d}"


def open_items(stack: LocalStack) -> list[tuple[str, int]]:
    page = staff(stack, "GET", "/staff/handoffs", query="status=open")
    return [(entry["conversation_id"], entry["turn_id"]) for entry in page["items"]]


def test_a_later_ask_joins_the_open_item_which_lists_it_and_moves_to_the_top(stack: LocalStack) -> None:
    # Given two conversations that each asked for a person, the first one first
    first, second = new_conversation(stack), new_conversation(stack)
    say(stack, first, "Can I talk to a person?")
    stack.advance(60)
    say(stack, second, "Can I talk to a person?")
    assert open_items(stack) == [(second, 1), (first, 1)]
    opened = item(stack, first, turn_key(1))

    # When the first asks what the handbook does not answer, an hour on
    stack.advance(3600)
    turn = say(stack, first, "What is the parking fee?")

    # Then the turn joined the open item: no second item, the first on top, listing both asks
    assert turn["action"] == "abstain_hand_off"
    assert open_items(stack) == [(first, 1), (second, 1)]
    shown = staff(stack, "GET", f"/staff/handoffs/{first}/1")
    assert [(ask["turn_id"], ask["action"], ask["topic"]) for ask in shown["asks"]] == [
        (1, "hand_off", None), (2, "abstain_hand_off", "parking")
    ]  # fmt: skip
    assert shown["queued_at"] == shown["asks"][1]["at"] and shown["created_at"] == shown["asks"][0]["at"]
    joined = item(stack, first, turn_key(2))
    assert (joined["handoff_status"], joined["joined_to"]) == ({"S": "joined"}, {"N": "1"})
    assert "queue" not in joined and "open_queue" not in joined
    assert item(stack, first, "STATE")["open_handoff"] == {"N": "1"}
    # kept as long as the conversation: its TTL moved on with the ask
    moved = int(item(stack, first, turn_key(1))["expires_at"]["N"]) - int(opened["expires_at"]["N"])
    assert 3660 <= moved < 3660 + 60  # (the stack's clock also runs on with the wall's)
    # and no text of the resident's is in it
    assert "parking fee" not in str(item(stack, first, turn_key(1))).lower()


def test_a_close_ends_the_item_and_the_next_ask_opens_a_new_one(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    say(stack, conversation_id, "Can I talk to a person?")
    path = f"/staff/handoffs/{conversation_id}/1"
    staff(stack, "POST", f"{path}/claim")
    version = int(item(stack, conversation_id, "STATE")["version"]["N"])
    staff(stack, "POST", f"{path}/close")
    state = item(stack, conversation_id, "STATE")
    assert "open_handoff" not in state and int(state["version"]["N"]) == version + 1
    assert open_items(stack) == []

    assert say(stack, conversation_id, "Can I talk to a person?")["turn_id"] == 2
    assert item(stack, conversation_id, turn_key(2))["handoff_status"] == {"S": "open"}
    assert open_items(stack) == [(conversation_id, 2)]
    assert item(stack, conversation_id, "STATE")["open_handoff"] == {"N": "2"}


def test_a_turn_that_read_the_item_open_before_the_close_is_written_again(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a turn that read the conversation while its hand-off was open
    conversation_id = new_conversation(stack)
    say(stack, conversation_id, "Can I talk to a person?")
    stale = conversation.load_conversation(get_store(), UUID(conversation_id))
    assert stale.open_handoff == 1
    # When staff close the item before that turn writes
    staff(stack, "POST", f"/staff/handoffs/{conversation_id}/1/claim")
    staff(stack, "POST", f"/staff/handoffs/{conversation_id}/1/close")
    monkeypatch.setattr(conversation, "load_conversation", lambda *_: stale)
    answer = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "Can I talk to a person?"})
    # Then it is refused, to be sent again, and joined nothing
    assert answer.status == 409 and answer.body["error"] == ConcurrentTurnConflict.__name__
    assert "joined" not in item(stack, conversation_id, turn_key(1))
    monkeypatch.undo()
    # and sent again it opens a new item
    assert say(stack, conversation_id, "Can I talk to a person?")["turn_id"] == 2
    assert item(stack, conversation_id, turn_key(2))["handoff_status"] == {"S": "open"}
    assert open_items(stack) == [(conversation_id, 2)]


def test_an_item_gone_at_its_ttl_is_not_joined_a_new_one_opens(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    say(stack, conversation_id, "Can I talk to a person?")
    # DynamoDB deletes the item at its TTL; the STATE item still names it
    stack.dynamodb.delete_item(
        TableName=TABLE_NAME, Key={"pk": {"S": f"CONV#{conversation_id}"}, "sk": {"S": turn_key(1)}}
    )
    assert say(stack, conversation_id, "What is the parking fee?")["turn_id"] == 2
    opened = item(stack, conversation_id, turn_key(2))
    assert opened["handoff_status"] == {"S": "open"} and "joined_to" not in opened
    assert open_items(stack) == [(conversation_id, 2)]
    assert item(stack, conversation_id, "STATE")["open_handoff"] == {"N": "2"}


def test_a_contact_form_joins_the_open_item_and_goes_when_it_closes(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    say(stack, conversation_id, "Can I talk to a person?")
    say(stack, conversation_id, "forklift")
    say(stack, conversation_id, "call me")
    answer = stack.call_api("POST", f"/conversations/{conversation_id}/contact", {"detail": NUMBER})
    assert answer.status == 200, answer.body
    assert item(stack, conversation_id, turn_key(answer.body["turn_id"]))["joined_to"] == {"N": "1"}
    assert open_items(stack) == [(conversation_id, 1)]
    assert item(stack, conversation_id, "CONTACT")["turn_id"] == {"N": "1"}
    path = f"/staff/handoffs/{conversation_id}/1"
    shown = staff(stack, "GET", path)
    assert shown["contact"]["has_detail"] is True
    assert [ask["intent"] for ask in shown["asks"]][-1] == "contact_left"
    staff(stack, "POST", f"{path}/claim")
    assert staff(stack, "POST", f"{path}/contact")["detail"] == NUMBER
    staff(stack, "POST", f"{path}/close")
    assert "sealed" not in item(stack, conversation_id, "CONTACT")
