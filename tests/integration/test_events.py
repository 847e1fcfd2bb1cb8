"""Every file in events/ drives its handler on moto and gives the outcome docs/DEPLOY.md documents.

The files are what `sam local invoke -e events/<file> --env-vars events/env.json` sends. Docker is not
here, so the handlers run in this process against the local stack's table and queues, in the order
the deploy guide gives: seed the conversation, turns 1 to 7, the stream event that dispatches turn 1,
the screen events, the deadline event, then the reads and the bad requests. env.json's placeholders
are filled from the local stack as the guide fills them from the stack outputs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from uuid import UUID

import pytest

from devstack.events import LOCAL_ORIGIN_VERIFY, FakeLambdaContext
from devstack.stack import TABLE_NAME, LocalStack
from dialogue.human_checks import use_draws

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
DEPLOY_GUIDE = ROOT / "docs" / "DEPLOY.md"
FUNCTION_OF_PREFIX = {
    "api-": "TurnApiFunction",
    "staff-": "StaffApiFunction",
    "stream-": "DispatchTurnFunction",
    "sqs-": "ScreenReplyFunction",
    "schedule-": "SweepTurnsFunction",
    "alarm-": "RealizerSwitchFunction",
}


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("events_generate", EVENTS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generate = _load_generator()
CONVERSATION_ID = str(generate.CONVERSATION_ID)

# The documented outcome of each turn event: (HTTP status, action, reply source, turn status).
TURN_OUTCOMES = {
    "api-turn-1-request-program.json": (202, "request_program", "model", "pending"),
    "api-turn-2-refuse.json": (200, "refuse", "fixed", "final"),
    "api-turn-3-abstain-hand-off.json": (200, "abstain_hand_off", "fixed", "final"),
    "api-turn-4-hand-off.json": (200, "hand_off", "fixed", "final"),
    "api-turn-5-request-contact.json": (202, "request_contact", "model", "pending"),
    "api-turn-6-confirm.json": (202, "confirm", "model", "pending"),
    "api-turn-7-inform.json": (202, "inform", "model", "pending"),
}
# The documented outcome of each bad request: (HTTP status, error code).
REFUSED_REQUESTS = {
    "api-bad-body-not-json.json": (400, "invalid_body"),
    "api-bad-body-empty-text.json": (422, "invalid_text_length"),
    "api-bad-body-text-too-long.json": (422, "invalid_text_length"),
    "api-unknown-conversation.json": (404, "ConversationNotFound"),
    "api-bad-contact.json": (422, "ContactNotAccepted"),
}
SEQUENCE = (
    "seed-conversation.json",
    *TURN_OUTCOMES,
    "stream-dispatch-turn-1.json",
    "sqs-screen-clean.json",
    "sqs-screen-tripped.json",
    "sqs-screen-bad-record.json",
    "sqs-screen-deadline.json",
    "staff-list-reviews.json",
    "staff-claim-review.json",
    "staff-decide-review.json",
    "staff-list-handoffs.json",
    "staff-claim-handoff.json",
    "staff-reply-handoff.json",
    "staff-close-handoff.json",
    "staff-stats.json",
    "staff-not-in-group.json",
    "schedule-sweep-turns.json",
    "alarm-gpu-hours-switch-off.json",
    "api-get-messages.json",
    "api-get-turn.json",
    "api-get-conversation.json",
    "api-create-conversation.json",
    *REFUSED_REQUESTS,
)


def load(name: str) -> Any:
    return json.loads((EVENTS / name).read_text())


def function_for(name: str) -> str:
    (function,) = (function for prefix, function in FUNCTION_OF_PREFIX.items() if name.startswith(prefix))
    return function


class Deployment:
    """The local stack seen through env.json: handlers invoked with sample events, items read back."""

    def __init__(self, stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> None:
        self.stack = stack
        self.used: list[str] = []
        outputs = {
            "ConversationTableName": TABLE_NAME,
            "RealizeQueueUrl": stack.realize_queue.url,
            "ScreenQueueUrl": stack.screen_queue.url,
            "DispatchFailureQueueUrl": stack.dispatch_failures.url,
            "ContactKeyArn": os.environ["CONTACT_KEY_ID"],  # the local stack's KMS key (moto)
        }
        self.environment = {
            function: {name: fill_placeholder(name, value, outputs) for name, value in variables.items()}
            for function, variables in load("env.json").items()
        }
        self.used.append("env.json")
        from dialogue.aws.factory import reset_caches

        for variables in self.environment.values():
            for name, value in variables.items():
                monkeypatch.setenv(name, value)
        reset_caches()

    def seed(self, name: str) -> None:
        self.stack.dynamodb.put_item(TableName=TABLE_NAME, Item=load(name))
        self.used.append(name)

    def api(self, name: str) -> tuple[int, Any, str]:
        import turn_api

        assert function_for(name) == "TurnApiFunction"
        result = turn_api.lambda_handler(load(name), FakeLambdaContext(function_name="turn_api"))
        self.used.append(name)
        text = result.get("body") or ""
        return int(result["statusCode"]), json.loads(text) if text else None, text

    def staff(self, name: str) -> tuple[int, Any]:
        import staff_api

        assert function_for(name) == "StaffApiFunction"
        result = staff_api.lambda_handler(load(name), FakeLambdaContext(function_name="staff_api"))
        self.used.append(name)
        return int(result["statusCode"]), json.loads(result["body"])

    def stream(self, name: str) -> dict[str, Any]:
        import dispatch_turn

        assert function_for(name) == "DispatchTurnFunction"
        result: dict[str, Any] = dict(dispatch_turn.lambda_handler(load(name), FakeLambdaContext("dispatch_turn")))
        self.used.append(name)
        return result

    def sqs(self, name: str) -> dict[str, Any]:
        import screen_reply

        assert function_for(name) == "ScreenReplyFunction"
        result: dict[str, Any] = dict(screen_reply.lambda_handler(load(name), FakeLambdaContext("screen_reply")))
        self.used.append(name)
        return result

    def schedule(self, name: str) -> dict[str, Any]:
        import sweep_turns

        assert function_for(name) == "SweepTurnsFunction"
        result: dict[str, Any] = sweep_turns.lambda_handler(load(name), FakeLambdaContext("sweep_turns"))
        self.used.append(name)
        return result

    def alarm(self, name: str) -> dict[str, Any]:
        import realizer_switch

        assert function_for(name) == "RealizerSwitchFunction"
        assert realizer_switch.requested(load(name)) == "off"  # an alarm gone to ALARM
        result: dict[str, Any] = realizer_switch.lambda_handler(load(name), FakeLambdaContext("realizer_switch"))
        self.used.append(name)
        return result

    def turn_item(self, turn_id: int) -> dict[str, Any]:
        from dialogue.aws.table import partition_key, turn_sort_key

        key = {"pk": {"S": partition_key(UUID(CONVERSATION_ID))}, "sk": {"S": turn_sort_key(turn_id)}}
        item: dict[str, Any] = self.stack.dynamodb.get_item(TableName=TABLE_NAME, Key=key)["Item"]
        return item

    def messages_waiting(self, queue_url: str, attribute: str = "ApproximateNumberOfMessages") -> int:
        attributes = self.stack.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=[attribute])
        return int(attributes["Attributes"][attribute])


LOCAL_SETTINGS = {"ORIGIN_VERIFY_SECRET_ARN": "", "ORIGIN_VERIFY": LOCAL_ORIGIN_VERIFY}
"""env.json's values that are not a stack output: the API functions' deliberate local origin check."""


def fill_placeholder(name: str, value: str, outputs: dict[str, str]) -> str:
    if name in LOCAL_SETTINGS:
        assert value == LOCAL_SETTINGS[name], name
        return value
    match = re.fullmatch(r"<output:(\w+)>", value)
    assert match, f"env.json value {value!r} is not an <output:NAME> placeholder"
    return outputs[match.group(1)]


@pytest.fixture
def deployment(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> Iterator[Deployment]:
    # The desk draws a shown reply for a check one time in ten (dialogue.human_checks): here, as the guide's
    # outcomes say most runs go, it draws none, so the two clean replies are "not drawn".
    with use_draws(lambda: 0.99):
        yield Deployment(stack, monkeypatch)


def test_every_file_in_events_is_exercised() -> None:
    """The folder holds exactly the sequence's files, env.json and the generator (run by its own test)."""
    on_disk = {path.name for path in EVENTS.iterdir() if path.is_file()}
    assert on_disk == {*SEQUENCE, "env.json", "generate.py"}


def test_events_are_what_the_generator_writes() -> None:
    """The committed files match events/generate.py's output byte for byte (rerun it after a change)."""
    for name, content in generate.build_events():
        assert (EVENTS / name).read_text() == generate.render(content), f"{name} is stale"


def test_env_json_names_each_function_and_only_its_declared_variables() -> None:
    """sam local invoke overrides only variables the template declares for that function."""
    from cfnlint.decode import decode

    template, matches = decode(str(ROOT / "template.yaml"))
    assert template is not None and not matches
    global_variables = template["Globals"]["Function"]["Environment"]["Variables"]
    env = load("env.json")
    assert set(env) == {
        "TurnApiFunction",
        "StaffApiFunction",
        "DispatchTurnFunction",
        "ScreenReplyFunction",
        "SweepTurnsFunction",
    }
    for function, variables in env.items():
        properties = template["Resources"][function]["Properties"]
        declared = {*global_variables, *properties.get("Environment", {}).get("Variables", {})}
        assert set(variables) <= declared, function
        for name, value in variables.items():
            if name in LOCAL_SETTINGS:  # the API functions' local origin check: no secret, the local value
                assert value == LOCAL_SETTINGS[name] and function in ("TurnApiFunction", "StaffApiFunction"), name
                continue
            output = re.fullmatch(r"<output:(\w+)>", value)
            assert output and output.group(1) in template["Outputs"], value


def test_every_event_file_is_in_the_deploy_guide() -> None:
    guide = DEPLOY_GUIDE.read_text()
    for name in (*SEQUENCE, "env.json"):
        assert f"events/{name}" in guide, f"docs/DEPLOY.md does not mention events/{name}"


def test_the_documented_sequence_on_moto(deployment: Deployment) -> None:
    # Given the conversation the turn events address, seeded as a new conversation.
    deployment.seed("seed-conversation.json")

    # When each turn event is sent in order, then each gives its action: fixed text at once (200)
    # or accepted for wording (202, no reply yet). The turn API sends no message: the stream does.
    for turn_id, (name, (status, action, source, turn_status)) in enumerate(TURN_OUTCOMES.items(), start=1):
        code, body, _ = deployment.api(name)
        assert code == status, (name, body)
        assert body["conversation_id"] == CONVERSATION_ID
        assert (body["turn_id"], body["action"], body["reply_source"], body["status"]) == (
            turn_id,
            action,
            source,
            turn_status,
        )
        assert ("reply" in body) == (source == "fixed"), name
    assert deployment.messages_waiting(deployment.stack.realize_queue.url) == 0

    # The stream event of turn 1's insert: its RealizeJob is queued, and its deadline sent to the screen
    # queue (at once: the sample turn is older than its deadline; a new one's waits out the deadline).
    assert deployment.stream("stream-dispatch-turn-1.json") == {"batchItemFailures": []}
    assert deployment.messages_waiting(deployment.stack.realize_queue.url) == 1
    (deadline,) = deployment.stack.sqs.receive_message(QueueUrl=deployment.stack.screen_queue.url)["Messages"]
    assert json.loads(deadline["Body"])["kind"] == "deadline"

    # A clean realized reply: no failed record; turn 6 is final with the reply shown, not flagged.
    assert deployment.sqs("sqs-screen-clean.json") == {"batchItemFailures": []}
    item = deployment.turn_item(6)
    assert item["status"] == {"S": "final"}
    assert item["fallback_used"] == {"BOOL": False}
    assert item["reply_screen"] == {"S": "not flagged by screen"}
    assert item["human_review"] == {"S": "not drawn"} and "queue" not in item

    # The same event again is a duplicate delivery: no failure, and nothing changes.
    before = deployment.turn_item(6)
    assert deployment.sqs("sqs-screen-clean.json") == {"batchItemFailures": []}
    assert deployment.turn_item(6) == before

    # A reply that trips a screen: no failed record; turn 7 is final, held, with the fallback stored.
    assert deployment.sqs("sqs-screen-tripped.json") == {"batchItemFailures": []}
    item = deployment.turn_item(7)
    assert item["status"] == {"S": "final"}
    assert item["fallback_used"] == {"BOOL": True}
    assert item["reply_screen"] == {"S": "held for human review"}
    assert "promise_words" in item["screens_fired"]["SS"]

    # A batch with one good record and one unreadable one: only the bad one is reported failed.
    batch = load("sqs-screen-bad-record.json")
    bad_id = batch["Records"][1]["messageId"]
    assert deployment.sqs("sqs-screen-bad-record.json") == {"batchItemFailures": [{"itemIdentifier": bad_id}]}
    assert deployment.turn_item(5)["status"] == {"S": "final"}

    # Turn 1's deadline, with no reply realized: the fixed fallback is stored, marked by the deadline bit.
    assert deployment.turn_item(1)["status"] == {"S": "pending"}
    assert deployment.sqs("sqs-screen-deadline.json") == {"batchItemFailures": []}
    item = deployment.turn_item(1)
    assert (item["status"], item["fallback_used"]) == ({"S": "final"}, {"BOOL": True})
    assert item["screens_fired"] == {"SS": ["deadline"]}

    # The staff: the held reply (turn 7) is listed with its draft, claimed and rejected with a correction.
    code, body = deployment.staff("staff-list-reviews.json")
    assert code == 200
    assert [(item["turn_id"], item["draft"]) for item in body["items"]] == [(7, generate.TRIPPED_REPLY[1])]
    code, body = deployment.staff("staff-claim-review.json")
    assert (code, body["turn_id"], body["claim"]["mine"]) == (200, 7, True)
    code, body = deployment.staff("staff-decide-review.json")
    assert code == 200
    assert (body["item"]["human_review"], body["item"]["decision_reason"]) == ("corrected", "promise")
    assert deployment.turn_item(7)["human_review"] == {"S": "corrected"}

    # The conversation's one hand-off item (opened by turn 2, joined by 3 and 4) is listed open, claimed,
    # answered and closed.
    code, body = deployment.staff("staff-list-handoffs.json")
    assert code == 200
    assert [(item["turn_id"], item["action"]) for item in body["items"]] == [(2, "refuse")]
    assert [(ask["turn_id"], ask["action"]) for ask in body["items"][0]["asks"]] == [
        (2, "refuse"), (3, "abstain_hand_off"), (4, "hand_off")
    ]  # fmt: skip
    assert deployment.staff("staff-claim-handoff.json")[0] == 200
    code, body = deployment.staff("staff-reply-handoff.json")
    assert (code, body["about_turn"], body["after_turn"]) == (200, 2, 7)
    code, body = deployment.staff("staff-close-handoff.json")
    assert (code, body["handoff_status"]) == (200, "closed")

    # The desk's figures count what was just done; a user outside the staff group is refused.
    code, body = deployment.staff("staff-stats.json")
    assert code == 200
    assert body["reviews"] == {"pending": 0, "approved": 0, "rejected": 0, "corrected": 1}
    assert body["handoffs"] == {"open": 0, "closed": 1}
    code, body = deployment.staff("staff-not-in-group.json")
    assert (code, body["error"]) == (403, "NotStaff")

    # The sweeper's scheduled run: every turn is final by now, so it finalizes none and clears nothing.
    summary = deployment.schedule("schedule-sweep-turns.json")
    assert (summary["finalized"], summary["complete"], summary["dispatch_failures_cleared"]) == (0, True, 0)

    # GpuHoursAlarm's action reaches the off switch, which finds no realizer here (none deployed locally).
    assert deployment.alarm("alarm-gpu-hours-switch-off.json") == {"switch": "no realizer"}

    # Reads: the resident's messages end with the two staff messages, after the seven replies.
    code, body, _ = deployment.api("api-get-messages.json")
    assert code == 200
    assert [(m["source"], m["turn_id"]) for m in body["messages"]] == [
        *(("assistant", turn_id) for turn_id in range(1, 8)), ("staff", 7), ("staff", 7)
    ]  # fmt: skip
    assert [m["text"] for m in body["messages"][-2:]] == [generate.CORRECTION, generate.HANDOFF_REPLY]

    # The screened reply of turn 6, as a resident reads it: the reply and no flags.
    code, body, _ = deployment.api("api-get-turn.json")
    assert code == 200
    assert body == {"turn_id": 6, "status": "final", "reply": generate.CLEAN_REPLY[1]}
    code, body, _ = deployment.api("api-get-conversation.json")
    assert code == 200
    assert body["turn_count"] == 7
    assert body["slots"] == {"program": "data_support", "childcare_needed": "unknown", "contact_channel": "email"}

    # A new conversation gets a fresh id.
    code, body, _ = deployment.api("api-create-conversation.json")
    assert code == 201
    assert UUID(body["conversation_id"]) != UUID(CONVERSATION_ID)

    # Bad requests are refused with a code and a sentence, never echoing what was sent.
    for name, (status, error) in REFUSED_REQUESTS.items():
        code, body, text = deployment.api(name)
        assert (code, body["error"]) == (status, error), (name, body)
        body_sent = json.loads(load(name)["body"]) if name != "api-bad-body-not-json.json" else {}
        sent = body_sent.get("text", "") or body_sent.get("detail", "")
        assert not sent or sent not in text
    code, body, _ = deployment.api("api-get-conversation.json")
    assert body["turn_count"] == 7, "a refused request must not add a turn"

    assert set(deployment.used) == {*SEQUENCE, "env.json"}
