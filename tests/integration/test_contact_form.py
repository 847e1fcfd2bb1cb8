"""The chat's contact form on moto (issue 40, item 1): a phone number or email address the desk can use,
kept apart from the dialogue (DESIGN.md invariant 1).

The detail is checked against the pack's format, sealed with the stack's KMS key (moto's KMS encrypts
for real) into the conversation's one CONTACT item, handed to staff as a hand-off turn, opened only by
the staff member holding that hand-off's claim (each read audited), and deleted when the hand-off closes
or its TTL passes. A number typed into the chat is answered with a pointer to the form, and kept nowhere.
"""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

import pytest
from desk_calls import new_conversation, say, staff

from devstack.stack import TABLE_NAME, LocalStack
from dialogue.pack import get_pack

NUMBER = "07700 900123"
EMAIL = "quillon.marsh-4471@example.org"
NOTE = "Zebrafinch-7713: please ring after 3pm, I work mornings."


def leave(stack: LocalStack, conversation_id: str, body: Any) -> Any:
    return stack.call_api("POST", f"/conversations/{conversation_id}/contact", body)


def with_phone(stack: LocalStack) -> str:
    conversation_id = new_conversation(stack)
    say(stack, conversation_id, "forklift")
    say(stack, conversation_id, "call me")
    return conversation_id


def everything_kept(stack: LocalStack) -> str:
    items = json.dumps(stack.table_items(TABLE_NAME), default=str, ensure_ascii=False)
    messages = " ".join(message["body"] for message in stack.sent_messages)
    return "\n".join([items, messages, *stack.log_lines]).lower()


def test_a_phone_number_reaches_staff_sealed_and_goes_when_the_hand_off_closes(stack: LocalStack) -> None:
    conversation_id = with_phone(stack)
    answer = leave(stack, conversation_id, {"detail": f"  {NUMBER} ", "note": NOTE})
    assert answer.status == 200, answer.body
    assert answer.body["action"] == "hand_off" and answer.body["status"] == "final"
    assert answer.body["reply"] == get_pack().spec.contact.received_text  # type: ignore[union-attr]

    # Sealed: neither the number nor the note is anywhere in the clear, and the CONTACT item holds bytes.
    kept = everything_kept(stack)
    for secret in (NUMBER, NOTE.lower()[:20], "zebrafinch"):
        assert secret.lower() not in kept
    (item,) = [item for item in stack.table_items(TABLE_NAME) if item["sk"]["S"] == "CONTACT"]
    assert set(item) >= {"sealed", "channel", "expires_at", "turn_id"} and "B" in item["sealed"]
    assert item["channel"]["S"] == "phone"
    sealed = base64.b64decode(item["sealed"]["B"]) if isinstance(item["sealed"]["B"], str) else item["sealed"]["B"]
    assert NUMBER.encode() not in sealed and b"07700" not in sealed  # encrypted, not merely encoded

    # The sealed (binary) item on the table's stream does not stop the next generated turn's dispatch.
    assert say(stack, conversation_id, "when does it meet?")["status"] == "pending"
    assert stack.run_dispatch() == 3  # the two replies before the form, and this one

    # Staff find it as a hand-off that says a contact was left, without opening it.
    path = f"/staff/handoffs/{conversation_id}/{answer.body['turn_id']}"
    handoff = staff(stack, "GET", path)
    assert handoff["intent"] == "contact_left"
    assert handoff["contact"]["channel"] == "phone" and handoff["contact"]["has_detail"] is True
    assert "detail" not in handoff["contact"] and NUMBER not in json.dumps(handoff)

    # Opening it needs the claim; the read is audited on the item.
    unclaimed = stack.call_staff_api("POST", f"{path}/contact", staff="ana")
    assert unclaimed.status == 409 and NUMBER not in json.dumps(unclaimed.body)
    staff(stack, "POST", f"{path}/claim")
    shown = staff(stack, "POST", f"{path}/contact")
    assert (shown["detail"], shown["note"], shown["channel"]) == (NUMBER, NOTE, "phone")
    query = f"conversation_id={conversation_id}&turn_id={answer.body['turn_id']}"
    trail = staff(stack, "GET", "/staff/audit", query=query)
    assert [entry["action"] for entry in trail["items"]] == ["claim", "read_contact"]
    assert trail["verified"] is True
    assert NUMBER not in everything_kept(stack)  # the read logged nothing of it either

    # Someone else, without the claim, cannot open it.
    other = stack.call_staff_api("POST", f"{path}/contact", staff="ben")
    assert other.status == 409

    staff(stack, "POST", f"{path}/close")
    (forgotten,) = [item for item in stack.table_items(TABLE_NAME) if item["sk"]["S"] == "CONTACT"]
    assert "sealed" not in forgotten and int(forgotten["expires_at"]["N"]) <= int(stack.clock.now_s()) + 1
    assert staff(stack, "GET", path)["contact"] is None


def test_an_email_address_must_look_like_one_and_nothing_is_kept_when_it_does_not(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    say(stack, conversation_id, "the data one")
    say(stack, conversation_id, "email")
    before = stack.table_items(TABLE_NAME)
    for body in ({"detail": "not-an-address"}, {"detail": NUMBER}, {"detail": "x" * 300}, {"note": "n" * 2000}):
        refused = leave(stack, conversation_id, body)
        assert refused.status == 422, refused.body
        assert set(refused.body) == {"error", "message"}
        assert "not-an-address" not in refused.body["message"] and NUMBER not in refused.body["message"]
    empty = leave(stack, conversation_id, {"detail": "  ", "note": ""})
    assert (empty.status, empty.body["error"]) == (422, "NothingToLeave")
    assert stack.table_items(TABLE_NAME) == before  # nothing stored by a refusal
    assert leave(stack, conversation_id, {"detail": EMAIL}).status == 200
    assert EMAIL not in everything_kept(stack)


def test_a_detail_needs_a_channel_that_takes_one_but_a_note_alone_is_kept(stack: LocalStack) -> None:
    conversation_id = new_conversation(stack)
    say(stack, conversation_id, "forklift")
    assert leave(stack, conversation_id, {"detail": NUMBER}).status == 422  # no channel chosen yet
    answer = leave(stack, conversation_id, {"note": NOTE})
    assert answer.status == 200
    path = f"/staff/handoffs/{conversation_id}/{answer.body['turn_id']}"
    staff(stack, "POST", f"{path}/claim")
    shown = staff(stack, "POST", f"{path}/contact")
    assert (shown["detail"], shown["note"], shown["channel"]) == (None, NOTE, "unknown")


def test_the_contact_expires_at_its_ttl_even_before_dynamodb_deletes_it(stack: LocalStack) -> None:
    conversation_id = with_phone(stack)
    turn_id = leave(stack, conversation_id, {"detail": NUMBER}).body["turn_id"]
    path = f"/staff/handoffs/{conversation_id}/{turn_id}"
    keep_days = get_pack().spec.contact.keep_days  # type: ignore[union-attr]
    stack.advance(timedelta(days=keep_days, seconds=1).total_seconds())
    assert staff(stack, "GET", path)["contact"] is None
    staff(stack, "POST", f"{path}/claim")
    expired = stack.call_staff_api("POST", f"{path}/contact", staff="ana")
    assert (expired.status, expired.body["error"]) == (404, "NoContactLeft")


@pytest.mark.parametrize(
    "typed",
    [f"my number is {NUMBER}", f"email me at {EMAIL}", "ring me on +44 (0)20 7946 0958 please"],
)
def test_a_number_typed_into_the_chat_is_pointed_at_the_form_and_kept_nowhere(stack: LocalStack, typed: str) -> None:
    conversation_id = new_conversation(stack)
    say(stack, conversation_id, "forklift")
    answer = say(stack, conversation_id, typed)
    assert answer["status"] == "final" and answer["action"] == "clarify"
    assert answer["reply"] == get_pack().spec.contact.typed_in_chat_text  # type: ignore[union-attr]
    detail = stack.call_api("GET", f"/conversations/{conversation_id}").body
    assert detail["slots"]["contact_channel"] == "unknown"  # nothing read from it
    handoffs = staff(stack, "GET", "/staff/handoffs")
    assert not handoffs["items"]  # and no empty hand-off opened
    kept = everything_kept(stack)
    assert NUMBER not in kept and EMAIL not in kept and "7946" not in kept
    # The desk goes on where it was: it still asks for the channel.
    assert say(stack, conversation_id, "email")["action"] == "confirm"


def test_without_a_key_the_form_is_refused_and_nothing_is_stored(stack: LocalStack, monkeypatch: Any) -> None:
    from dialogue.aws.factory import reset_caches

    conversation_id = with_phone(stack)
    before = stack.table_items(TABLE_NAME)
    monkeypatch.setenv("CONTACT_KEY_ID", "")
    reset_caches()
    refused = leave(stack, conversation_id, {"detail": NUMBER})
    assert (refused.status, refused.body["error"]) == (503, "SealUnavailable")
    assert stack.table_items(TABLE_NAME) == before


# --- the desk's hours (issue 40, item 3) -------------------------------------------------------------


def test_outside_the_desks_hours_a_hand_off_says_when_a_person_will_answer() -> None:
    from datetime import UTC, datetime

    from devstack.stack import local_stack

    saturday = datetime(2026, 12, 5, 16, 15, tzinfo=UTC)  # the desk opens Monday to Friday, 9 to 5, London
    with local_stack(start=saturday) as stack:
        conversation_id = new_conversation(stack)
        say(stack, conversation_id, "Can I talk to a person?")
        say(stack, conversation_id, "forklift")
        stack.drain()  # its reply is worded and screened
        page = stack.call_api("GET", f"/conversations/{conversation_id}/messages").body
        handed, asked = page["messages"]
        assert handed["to_person"] is True and handed["next_opening"].startswith("2026-12-07T09:00:00")
        assert asked["to_person"] is False and asked.get("next_opening") is None
    monday = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)
    with local_stack(start=monday) as stack:
        conversation_id = new_conversation(stack)
        say(stack, conversation_id, "Can I talk to a person?")
        (handed,) = stack.call_api("GET", f"/conversations/{conversation_id}/messages").body["messages"]
        assert handed["to_person"] is True and handed.get("next_opening") is None  # open: a person is there


# --- the item shows what the resident saw (issue 40, item 2) -----------------------------------------


def test_an_item_shows_what_the_resident_saw_in_order_the_staff_message_just_sent_included(
    stack: LocalStack,
) -> None:
    conversation_id = new_conversation(stack)
    say(stack, conversation_id, "forklift")
    stack.drain()
    handed = say(stack, conversation_id, "Can I talk to a person?")
    path = f"/staff/handoffs/{conversation_id}/{handed['turn_id']}"
    staff(stack, "POST", f"{path}/claim")
    posted = stack.call_staff_api("POST", f"{path}/reply", {"text": "Hello, Ana here."}, staff="ana")
    assert posted.status == 200
    seen = staff(stack, "GET", path)["seen"]
    assert [(m["source"], m["turn_id"]) for m in seen] == [("assistant", 1), ("assistant", 2), ("staff", 2)]
    assert seen[1]["text"] == handed["reply"] and seen[1]["to_person"] is True
    assert seen[2]["text"] == "Hello, Ana here."
    # A queue's page stays light: no item in a list carries the conversation.
    listed = staff(stack, "GET", "/staff/handoffs")["items"]
    assert listed and all(item.get("seen") is None for item in listed)
