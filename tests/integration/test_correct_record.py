"""Staff correct the record (issue 40, item 6), on moto through the staff API.

A usability test found a wrong Forklift confirmation rejected with a correction the resident read, while the
record (the STATE item's slots, the retained TURN items) still said Forklift. From an item they hold the claim
on, staff now set one slot to one of its values: one transaction writes the STATE item (conditional on its
version, which it bumps), a turn of staff's recording the change, and the item's audit link; the resident is
sent the desk's fixed confirmation of the corrected record, in order in their messages, and their next turn
reads the corrected state.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from desk_calls import new_conversation, say, staff

from devstack.auth import subject_for
from devstack.stack import AUDIT_BUCKET, TABLE_NAME, LocalStack
from dialogue.actions import Action
from dialogue.aws.audit import verify_table_audit
from dialogue.aws.factory import get_desk_store
from dialogue.aws.stores import DynamoConversationStore
from dialogue.human_checks import use_draws
from dialogue.pack import DomainPack
from dialogue.realize import RealizedReply, RealizeJob
from dialogue.replies import reply_fields

CLEAN = "Should staff contact you by phone or by email?"
WRONG_CONFIRMATION = "I recorded the Forklift Operator Licence, with contact by email."
UNKNOWN_SLOT = "favourite_colour_zq"
UNKNOWN_VALUE = "astronaut_school_zq"


@pytest.fixture(autouse=True)
def every_shown_reply_drawn() -> Iterator[None]:
    """Every reply shown as drafted is drawn for a check, so each generated turn is a review item."""
    with use_draws(lambda: 0.0):
        yield


# --- helpers ----------------------------------------------------------------------------------------------


def word_pending(stack: LocalStack, reply: str) -> None:
    """Word every pending turn's reply with `reply`, screened as the screen function does."""
    stack.run_dispatch()
    messages = stack.sqs.receive_message(QueueUrl=stack.realize_queue.url, MaxNumberOfMessages=10).get("Messages", [])
    for message in messages:
        stack.sqs.delete_message(QueueUrl=stack.realize_queue.url, ReceiptHandle=message["ReceiptHandle"])
        job = RealizeJob.model_validate_json(message["Body"])
        worded = RealizedReply(
            job=job, text=reply, engine="canned", ended_by_eos=True, hit_token_cap=False, output_tokens=12
        )
        stack.sqs.send_message(QueueUrl=stack.screen_queue.url, MessageBody=worded.model_dump_json())
    stack.run_screen_function()


def generated(stack: LocalStack, conversation_id: str, text: str, reply: str) -> int:
    turn = say(stack, conversation_id, text)
    assert turn["status"] == "pending", turn
    word_pending(stack, reply)
    return int(turn["turn_id"])


def state_item(stack: LocalStack, conversation_id: str) -> dict[str, Any]:
    """The conversation's STATE item as the table keeps it: its slots, what it asked last, version, turns."""
    (item,) = [
        item
        for item in stack.table_items()
        if item["pk"]["S"] == f"CONV#{conversation_id}" and item["sk"]["S"] == "STATE"
    ]
    return {
        "slots": {name: value["S"] for name, value in item["slots"]["M"].items()},
        "asked": item.get("asked", {}).get("S"),
        "version": int(item["version"]["N"]),
        "turn_count": int(item["turn_count"]["N"]),
    }


def table_snapshot(stack: LocalStack) -> list[str]:
    return sorted(json.dumps(item, sort_keys=True) for item in stack.table_items())


def messages(stack: LocalStack, conversation_id: str) -> dict[str, Any]:
    response = stack.call_api("GET", f"/conversations/{conversation_id}/messages", query="after=0")
    assert response.status == 200, response.body
    return dict(response.body)


def confirmation(pack: DomainPack, slots: dict[str, str]) -> str:
    """The desk's fixed confirmation of a record, as the pack words it."""
    return pack.action(Action.CONFIRM).fixed_text.format_map(reply_fields(slots, pack))


def forklift_confirmed(stack: LocalStack) -> tuple[str, int]:
    """A conversation the desk confirmed as Forklift with contact by email: the confirmation's review item."""
    conversation_id = new_conversation(stack)
    generated(stack, conversation_id, "I want the forklift course.", CLEAN)
    confirm = generated(stack, conversation_id, "Email is best.", WRONG_CONFIRMATION)
    return conversation_id, confirm


def review(conversation_id: str, turn_id: int) -> str:
    return f"/staff/reviews/{conversation_id}/{turn_id}"


def handoff(conversation_id: str, turn_id: int) -> str:
    return f"/staff/handoffs/{conversation_id}/{turn_id}"


def trail(stack: LocalStack, conversation_id: str, turn_id: int) -> dict[str, Any]:
    return dict(staff(stack, "GET", "/staff/audit", query=f"conversation_id={conversation_id}&turn_id={turn_id}"))


def stats_items(stack: LocalStack) -> list[str]:
    return sorted(json.dumps(item, sort_keys=True) for item in stack.table_items() if item["pk"]["S"] == "STATS")


# --- the correction -------------------------------------------------------------------------------------


def test_a_wrong_program_is_corrected_in_the_record_and_the_resident_is_sent_the_confirmation(
    stack: LocalStack, pack: DomainPack
) -> None:
    # Given the desk confirmed Forklift, and a member of staff holds the confirmation's review item
    conversation_id, item = forklift_confirmed(stack)
    path = review(conversation_id, item)
    staff(stack, "POST", f"{path}/claim")
    before = state_item(stack, conversation_id)
    assert before["slots"]["program"] == "forklift" and before["asked"] == "confirm"
    counters = stats_items(stack)

    # When they set the program to the Data Support Certificate
    answer = staff(stack, "POST", f"{path}/slots", {"slot": "program", "value": "data_support"})

    # Then the STATE item holds it, its version bumped once, and the record counts one more turn
    after = state_item(stack, conversation_id)
    corrected = {"program": "data_support", "childcare_needed": "unknown", "contact_channel": "email"}
    assert after == {
        "slots": corrected,
        "asked": "confirm",
        "version": before["version"] + 1,
        "turn_count": before["turn_count"] + 1,
    }
    expected_reply = confirmation(pack, corrected)
    assert "Data Support Certificate" in expected_reply and "Forklift" not in expected_reply
    assert answer == {
        "conversation_id": conversation_id,
        "turn_id": item,
        "correction_turn_id": item + 1,
        "slots": corrected,
        "action": "confirm",
        "reply": expected_reply,
    }

    # And the retained record keeps the staff's change as a turn of its own, fixed text, no model
    kept = stack.stored_turn(conversation_id, item + 1)
    assert kept["intent"] == "staff_correction" and kept["corrected_by"] == subject_for("ana")
    assert (kept["action"], kept["reply_source"], kept["status"]) == ("confirm", "fixed", "final")
    assert kept["slots"] == corrected and kept["asked"] == "confirm" and kept["queue"] is None
    assert stack.stored_turn(conversation_id, item)["slots"]["program"] == "forklift"  # history stays as it was
    assert stack.stored_turn(conversation_id, item)["corrected_by"] is None  # the resident's turns say so
    assert stack.run_dispatch() == 0  # nothing for a model to word
    assert stack.pending_turns() == []

    # And the resident's messages end with the desk's confirmation of the corrected record, in order
    page = messages(stack, conversation_id)
    assert [message["turn_id"] for message in page["messages"]] == [1, 2, 3]
    assert page["messages"][-1]["source"] == "assistant"
    assert page["messages"][-1]["text"] == expected_reply
    assert page["waiting"] is False

    # And the item is still the staff member's to decide; its trail shows the correction and verifies
    assert staff(stack, "GET", path)["claim"]["mine"] is True
    shown = trail(stack, conversation_id, item)
    assert [entry["action"] for entry in shown["items"]] == ["claim", "correct_record"]
    assert (shown["items"][-1]["reason"], shown["items"][-1]["outcome"]) == ("program", "data_support")
    assert shown["verified"] is True
    assert verify_table_audit(stack.dynamodb, TABLE_NAME, stack.s3, AUDIT_BUCKET) == []
    assert stats_items(stack) == counters  # a correction is no decision: the desk's figures are as they were
    staff(stack, "POST", f"{path}/decision", {"decision": "reject", "reason": "wrong_fact"})

    # And the resident's next turn reads the corrected record: a "thanks" is told what happens next, for
    # the Data Support Certificate, and not confirmed again
    nxt = say(stack, conversation_id, "thanks")
    assert nxt["action"] == "next_step" and nxt["status"] == "final"
    assert "Data Support Certificate" in nxt["reply"] and "Forklift" not in nxt["reply"]


def test_a_correction_that_leaves_a_slot_unknown_asks_for_it_and_the_answer_fills_it(stack: LocalStack) -> None:
    # Given a hand-off before anything was chosen, claimed
    conversation_id = new_conversation(stack)
    turn = say(stack, conversation_id, "Can I talk to a person?")
    assert turn["action"] == "hand_off"
    path = handoff(conversation_id, int(turn["turn_id"]))
    staff(stack, "POST", f"{path}/claim")

    # When staff record the program the resident named to them
    answer = staff(stack, "POST", f"{path}/slots", {"slot": "program", "value": "forklift"})

    # Then the desk asks for the contact channel, still unknown (a confirmation never reads back "unknown")
    assert answer["action"] == "request_contact"
    assert answer["reply"] == "Should staff contact you by phone or by email?"
    assert state_item(stack, conversation_id)["asked"] == "request_contact"
    assert messages(stack, conversation_id)["messages"][-1]["text"] == answer["reply"]
    # and the resident's short answer fills the slot just asked for
    reply = say(stack, conversation_id, "email")
    assert reply["action"] == "confirm"
    assert state_item(stack, conversation_id)["slots"] == {
        "program": "forklift",
        "childcare_needed": "unknown",
        "contact_channel": "email",
    }
    assert [entry["action"] for entry in trail(stack, conversation_id, int(turn["turn_id"]))["items"]] == [
        "claim",
        "correct_record",
    ]


# --- refusals: nothing stored ---------------------------------------------------------------------------


def test_a_correction_needs_the_items_claim(stack: LocalStack) -> None:
    conversation_id, item = forklift_confirmed(stack)
    path = review(conversation_id, item)
    body = {"slot": "program", "value": "data_support"}
    kept = table_snapshot(stack)
    unclaimed = stack.call_staff_api("POST", f"{path}/slots", body, staff="ana")
    assert (unclaimed.status, unclaimed.body["error"]) == (409, "ClaimRequired")
    staff(stack, "POST", f"{path}/claim", who="ben")
    kept = table_snapshot(stack)
    other = stack.call_staff_api("POST", f"{path}/slots", body, staff="ana")
    assert (other.status, other.body["error"]) == (409, "ClaimedByOther")
    assert table_snapshot(stack) == kept
    # A decided item is done with: its record is corrected from an open item only
    staff(stack, "POST", f"{path}/decision", {"decision": "approve"}, who="ben")
    kept = table_snapshot(stack)
    decided = stack.call_staff_api("POST", f"{path}/slots", body, staff="ben")
    assert (decided.status, decided.body["error"]) == (409, "AlreadyDecided")
    missing = stack.call_staff_api("POST", review("00000000-0000-4000-8000-000000000000", 1) + "/slots", body)
    assert (missing.status, missing.body["error"]) == (404, "NotInQueue")
    assert table_snapshot(stack) == kept
    assert state_item(stack, conversation_id)["slots"]["program"] == "forklift"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"slot": UNKNOWN_SLOT, "value": "data_support"}, 422, "UnknownSlotValue"),
        ({"slot": "program", "value": UNKNOWN_VALUE}, 422, "UnknownSlotValue"),
        ({"slot": "program", "value": "email"}, 422, "UnknownSlotValue"),  # another slot's value
        ({"slot": "program"}, 400, "invalid_correction"),
        ({"slot": "program", "value": 7}, 400, "invalid_correction"),
        ({"slot": "program", "value": UNKNOWN_VALUE * 4}, 400, "invalid_correction"),
        ({"slot": "program", "value": "data_support", UNKNOWN_SLOT: "x"}, 400, "unexpected_field"),
        (["program", "data_support"], 400, "invalid_body"),
    ],
)
def test_an_unknown_slot_or_value_is_refused_in_one_sentence_that_echoes_nothing_and_nothing_is_stored(
    stack: LocalStack, body: Any, status: int, code: str
) -> None:
    conversation_id, item = forklift_confirmed(stack)
    path = review(conversation_id, item)
    staff(stack, "POST", f"{path}/claim")
    kept = table_snapshot(stack)
    lines = len(stack.log_lines)
    refused = stack.call_staff_api("POST", f"{path}/slots", body, staff="ana")
    assert (refused.status, refused.body["error"]) == (status, code), refused.body
    assert set(refused.body) == {"error", "message"} and refused.body["message"].endswith(".")
    logged = "\n".join(stack.log_lines[lines:])
    for sent in (UNKNOWN_SLOT, UNKNOWN_VALUE):
        assert sent not in json.dumps(refused.body) and sent not in logged
    assert table_snapshot(stack) == kept
    assert [entry["action"] for entry in trail(stack, conversation_id, item)["items"]] == ["claim"]


# --- races with the resident: no update is lost --------------------------------------------------------------


def test_a_resident_turn_committed_between_the_corrections_read_and_write_is_kept(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation_id, item = forklift_confirmed(stack)
    path = review(conversation_id, item)
    staff(stack, "POST", f"{path}/claim")
    version = state_item(stack, conversation_id)["version"]
    desk_turns = get_desk_store().conversations.turns  # the desk's reads of the state
    read = desk_turns.load_conversation
    raced: list[dict[str, Any]] = []

    def resident_turn_after_the_read(conversation: UUID) -> Any:
        record = read(conversation)
        if not raced:  # the resident changes the channel just after staff read the state
            raced.append(say(stack, conversation_id, "Actually, call me instead."))
        return record

    monkeypatch.setattr(desk_turns, "load_conversation", resident_turn_after_the_read)
    answer = staff(stack, "POST", f"{path}/slots", {"slot": "program", "value": "data_support"})

    # The first write met the resident's new version and was retried on it: both changes are in the record
    (resident,) = raced
    assert resident["turn_id"] == item + 1 and answer["correction_turn_id"] == item + 2
    after = state_item(stack, conversation_id)
    assert after["slots"] == {"program": "data_support", "childcare_needed": "unknown", "contact_channel": "phone"}
    assert after["version"] == version + 2 and after["turn_count"] == item + 2
    assert stack.stored_turn(conversation_id, item + 1)["slots"]["contact_channel"] == "phone"
    assert stack.stored_turn(conversation_id, item + 2)["intent"] == "staff_correction"
    # one audit link: the failed attempt wrote none
    assert [entry["action"] for entry in trail(stack, conversation_id, item)["items"]] == ["claim", "correct_record"]
    # and once the resident's reply is worded, the messages show it, then the confirmation of the record
    word_pending(stack, "I recorded the Forklift Operator Licence, with contact by phone.")
    page = messages(stack, conversation_id)
    assert [message["turn_id"] for message in page["messages"]] == [1, 2, 3, 4]
    assert page["messages"][-1]["text"] == answer["reply"] and "by phone" in answer["reply"]


def test_a_correction_committed_during_a_resident_turn_sends_that_turn_back_to_be_retried(
    stack: LocalStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation_id, item = forklift_confirmed(stack)
    path = review(conversation_id, item)
    staff(stack, "POST", f"{path}/claim")
    read = DynamoConversationStore.load_conversation
    corrected: list[Any] = []

    def correction_after_the_read(self: DynamoConversationStore, conversation: UUID) -> Any:
        record = read(self, conversation)
        if not corrected:
            corrected.append(staff(stack, "POST", f"{path}/slots", {"slot": "program", "value": "data_support"}))
        return record

    monkeypatch.setattr(DynamoConversationStore, "load_conversation", correction_after_the_read)
    first = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "Actually, call me instead."})
    assert (first.status, first.body["error"]) == (409, "ConcurrentTurnConflict")  # nothing of it written
    monkeypatch.undo()
    again = say(stack, conversation_id, "Actually, call me instead.")  # the chat sends it again
    assert again["turn_id"] == item + 2
    assert state_item(stack, conversation_id)["slots"] == {
        "program": "data_support",
        "childcare_needed": "unknown",
        "contact_channel": "phone",
    }
