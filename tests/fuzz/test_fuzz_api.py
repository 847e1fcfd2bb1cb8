"""Fuzz the turn API through `devstack serve` with schemathesis, from the OpenAPI document it serves.

Positive and negative cases for each of the six routes, sent over HTTP to a subprocess on
127.0.0.1. Every answer must be: no 5xx; a 4xx only in the documented error shape
({"error", "message"}, the message one sentence); and no string of 8 or more characters that was
sent (in the path or the body) repeated in the response body. Valid conversation ids are mixed in,
from a pool of conversations made first and renewed as they fill, so cases reach the dialogue core.
At the end (tests/fuzz/test_storage_audit.py) the server stops and its audit (every item, message and
log line it kept) must hold no string of 12 or more characters that a turn's body carried.

Bounded: MAX_EXAMPLES per route for the fuzzing phase (plus schemathesis' coverage cases),
FUZZ_REQUESTS requests at most and FUZZ_SECONDS seconds (tests/fuzz/conftest.py); past either, cases
are not sent.
`make test` runs the defaults, bounded by the examples (250 a route: about 1,100 requests, the same on
every run); `make fuzz` runs 10,000.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import pytest
import requests
import schemathesis
from fuzzing import (
    REQUEST_TIMEOUT_S,
    Budget,
    ConversationPool,
    as_uuid,
    check_answer,
    echoed,
    fuzz_settings,
    load_schema,
    send_and_check,
    sent_strings,
)

from devstack.serve import openapi_document

MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "250"))  # per route, fuzzing phase


schema = load_schema(openapi_document)


# --- what a case is aimed at --------------------------------------------------------------------------


def aim(case: Any, pool: ConversationPool) -> str | None:
    """Point three in four well-formed conversation ids at a live conversation, and their turn ids
    at turns that exist or the next one. Returns the conversation id used, if one from the pool."""
    parameters = case.path_parameters or {}
    generated = as_uuid(parameters.get("conversation_id"))
    if generated is None or generated.int % 4 == 0:
        return None
    conversation_id = pool.pick(generated.int >> 8)
    parameters["conversation_id"] = conversation_id
    turn_id = parameters.get("turn_id")
    if isinstance(turn_id, int) and not isinstance(turn_id, bool) and turn_id >= 1:
        parameters["turn_id"] = 1 + turn_id % (pool.turns.get(conversation_id, 0) + 1)
    return conversation_id


@schema.parametrize()
@fuzz_settings(MAX_EXAMPLES)
def test_fuzz_api(
    case: Any, served_api: Any, pool: ConversationPool, budget: Budget, fuzz_session: requests.Session
) -> None:
    if budget.exhausted():
        budget.skipped += 1
        return
    conversation_id = aim(case, pool)
    response = send_and_check(case, served_api, fuzz_session, budget)
    # A turn's text, and what the contact form carries (kept only sealed): neither may be kept in the clear.
    if case.method.upper() == "POST" and case.operation.path.endswith(("/turns", "/contact")):
        budget.turn_texts.update(sent_strings(response.request, with_path=False))
    if conversation_id and case.method == "POST" and response.status_code in (200, 202):
        pool.record_turn(conversation_id)


def test_the_fuzzed_document_is_the_served_one(served_api: Any, fuzz_session: requests.Session) -> None:
    served = fuzz_session.get(f"{served_api.url}/openapi.json", timeout=REQUEST_TIMEOUT_S)
    assert served.status_code == 200
    assert served.json() == schema.raw_schema


def test_the_fuzzing_reached_the_dialogue_core(budget: Budget) -> None:
    """Runs after test_fuzz_api (file order): turns that the core applied. How many requests fit in the
    time budget is the machine's speed, not the API's correctness: no floor on the total (a busy
    two-core run sent 998 in 110 s, an idle one 2,497)."""
    if not budget.sent or budget.failures:
        pytest.skip("test_fuzz_api did not run to the end in this session")
    assert budget.statuses.get(200, 0) + budget.statuses.get(202, 0) >= 100, budget.statuses
    assert budget.by_route.get("POST /conversations/{conversation_id}/turns", 0) >= 200, budget.by_route


# --- the checks themselves catch what they look for -----------------------------------------------------


def _prepared(method: str, url: str, body: str | None) -> requests.PreparedRequest:
    return requests.Request(method, url, data=body.encode() if body is not None else None).prepare()


def test_the_echo_check_finds_an_echo() -> None:
    request = _prepared("POST", "http://127.0.0.1/conversations/not-a-uuid-Sentinel/turns", '{"text": "Sentinel-42"}')
    assert echoed(request, 400, '{"error": "x", "message": "Bad Sentinel-42."}') == ["Sentinel-42"]
    assert echoed(request, 400, '{"error": "x", "message": "Id not-a-uuid-Sentinel."}') == ["not-a-uuid-Sentinel"]
    escaped = _prepared("POST", "http://127.0.0.1/c", json.dumps({"text": "caf\u00e9 au lait"}))
    assert echoed(escaped, 200, json.dumps({"reply": "café au lait"})) == ["café au lait"]


def test_the_echo_check_allows_ids_and_short_strings() -> None:
    conversation = str(uuid.uuid4())
    request = _prepared("GET", f"http://127.0.0.1/conversations/{conversation}", None)
    assert echoed(request, 200, json.dumps({"conversation_id": conversation})) == []
    short = _prepared("POST", f"http://127.0.0.1/conversations/{conversation}/turns", '{"text": "phone"}')
    assert echoed(short, 202, '{"action": "confirm", "reply": "By phone."}') == []
    assert echoed(short, 404, '{"error": "ConversationNotFound", "message": "No conversation."}') == []
    # A path that happens to be a piece of the API's own sentence is not an echo (found by the fuzzer).
    piece = requests.Request("GET", "http://127.0.0.1/conversations/conversa").prepare()
    assert (
        echoed(piece, 400, '{"error": "invalid_conversation_id", "message": "The conversation id must be a UUID."}')
        == []
    )


# --- hand-picked hostile requests, each one a regression test -------------------------------------------

HOSTILE = [
    ("multipart without a boundary", {"Content-Type": "multipart/form-data"}, b'{"text": "Sentinel-hostile"}'),
    ("multipart with a boundary", {"Content-Type": "multipart/form-data; boundary=x"}, b'{"text": "Sentinel-hostile"}'),
    ("form-encoded", {"Content-Type": "application/x-www-form-urlencoded"}, b"text=Sentinel-hostile"),
    ("text/plain JSON", {"Content-Type": "text/plain"}, b'{"text": "Sentinel-hostile"}'),
    ("not UTF-8", {"Content-Type": "application/json"}, b'{"text": "Sentinel-hostile\xff\xfe"}'),
    ("a lone byte", {"Content-Type": "application/json"}, b"\x80"),
    ("JSON nested 5,000 deep", {"Content-Type": "application/json"}, b"[" * 5000 + b"]" * 5000),
    ("an object nested 5,000 deep", {"Content-Type": "application/json"}, b'{"text": ' * 5000 + b"1" + b"}" * 5000),
    ("a megabyte of whitespace", {"Content-Type": "application/json"}, b" " * 1_000_000 + b'{"text": "hi there"}'),
    ("a huge number", {"Content-Type": "application/json"}, b'{"text": 1' + b"0" * 5000 + b"}"),
    ("duplicate keys", {"Content-Type": "application/json"}, b'{"text": "Sentinel-hostile", "text": null}'),
    ("NUL in the text", {"Content-Type": "application/json"}, b'{"text": "Sentinel-hostile\\u0000"}'),
    ("a lone surrogate", {"Content-Type": "application/json"}, b'{"text": "Sentinel-hostile\\ud800"}'),
    ("a charset that lies", {"Content-Type": "application/json; charset=utf-16"}, b'{"text": "Sentinel-hostile"}'),
    ("a bad idempotency key", {"Idempotency-Key": "Sentinel-hostile " * 20}, b'{"text": "Sentinel-hostile"}'),
]


@pytest.mark.parametrize(("case_name", "headers", "body"), HOSTILE, ids=[case[0] for case in HOSTILE])
def test_hostile_turn_bodies(
    served_api: Any,
    fuzz_session: requests.Session,
    budget: Budget,
    case_name: str,
    headers: dict[str, str],
    body: bytes,
) -> None:
    conversation = fuzz_session.post(f"{served_api.url}/conversations", timeout=REQUEST_TIMEOUT_S).json()
    response = fuzz_session.post(
        f"{served_api.url}/conversations/{conversation['conversation_id']}/turns",
        data=body,
        headers=headers,
        timeout=REQUEST_TIMEOUT_S,
    )
    check_answer(schemathesis.Response.from_any(response), case_name, served_api)
    assert "sentinel-hostile" not in response.text.lower()
    budget.turn_texts.update(sent_strings(response.request, with_path=False))


@pytest.mark.parametrize(
    "path",
    [
        "/conversations/%00/turns/1",
        "/conversations/" + "9" * 5000,
        "/conversations/%F0%9F%98%80-Sentinel-hostile",
        "/conversations/..%2F..%2Fetc%2Fpasswd",
        "/conversations//turns",
        "/conversations/" + str(uuid.UUID(int=0)) + "/turns/99999999999999999999999",
        "/conversations/" + str(uuid.UUID(int=0)) + "/turns/-0",
        "/conversations?conversation_id=Sentinel-hostile&x=%ff",
    ],
)
def test_hostile_paths(served_api: Any, fuzz_session: requests.Session, path: str) -> None:
    response = fuzz_session.get(f"{served_api.url}{path}", timeout=REQUEST_TIMEOUT_S)
    check_answer(schemathesis.Response.from_any(response), path[:40], served_api)
    assert "sentinel-hostile" not in response.text.lower()
