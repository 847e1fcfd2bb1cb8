"""Fuzz the turn API through `devstack serve` with schemathesis, from the OpenAPI document it serves.

Positive and negative cases for each of the four routes, sent over HTTP to a subprocess on
127.0.0.1. Every answer must be: no 5xx; a 4xx only in the documented error shape
({"error", "message"}, the message one sentence); and no string of 8 or more characters that was
sent (in the path or the body) repeated in the response body. Valid conversation ids are mixed in,
from a pool of conversations made first and renewed as they fill, so cases reach the dialogue core.
At the end the server stops and its audit (every item, message and log line it kept) must hold no
string of 12 or more characters that a turn's body carried.

Bounded: MAX_EXAMPLES per route for the fuzzing phase (plus schemathesis' coverage cases),
REQUEST_BUDGET requests at most and TIME_BUDGET_S seconds; past either, cases are not sent.
`make test` runs the defaults (3,000 requests); `make fuzz` runs 10,000.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode

MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "800"))  # per route, fuzzing phase
REQUEST_BUDGET = int(os.environ.get("FUZZ_REQUESTS", "3000"))
TIME_BUDGET_S = float(os.environ.get("FUZZ_SECONDS", "110"))
TURNS_PER_CONVERSATION = 6  # renew a pool conversation well before any per-conversation turn limit
POOL_SIZE = 6
MIN_ECHO = 8
MIN_KEPT = 12  # a sent string this long found in what the server kept is user text kept
REQUEST_TIMEOUT_S = 10
SENTENCE_END = re.compile(r"[.!?]\s+[A-Z]")  # a second sentence starts after the first one's end
ROUTE_WORDS = {"conversations", "turns"}  # the routes' own path words are not input


@dataclass
class Budget:
    """Counts requests; says when the run is over."""

    started: float = field(default_factory=time.monotonic)
    last: float = 0.0
    sent: int = 0
    by_route: dict[str, int] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)
    skipped: int = 0
    failures: int = 0
    turn_texts: set[str] = field(default_factory=set)  # strings turn bodies carried, for the storage audit

    def exhausted(self) -> bool:
        return self.sent >= REQUEST_BUDGET or time.monotonic() - self.started > TIME_BUDGET_S

    def count(self, route: str, status: int) -> None:
        self.sent += 1
        self.last = time.monotonic()
        self.by_route[route] = self.by_route.get(route, 0) + 1
        self.statuses[status] = self.statuses.get(status, 0) + 1


class ConversationPool:
    """Live conversations to aim cases at; one is replaced once it holds TURNS_PER_CONVERSATION turns."""

    def __init__(self, url: str, session: requests.Session, budget: Budget) -> None:
        self._url = url
        self._session = session
        self._budget = budget
        self._lock = threading.Lock()
        self.turns: dict[str, int] = {}
        self.slots: list[str] = [self._create() for _ in range(POOL_SIZE)]

    def _create(self) -> str:
        response = self._session.post(f"{self._url}/conversations", timeout=REQUEST_TIMEOUT_S)
        self._budget.count("POST /conversations (pool)", response.status_code)
        assert response.status_code == 201, response.text
        conversation_id = str(response.json()["conversation_id"])
        self.turns[conversation_id] = 0
        return conversation_id

    def pick(self, seed: int) -> str:
        return self.slots[seed % len(self.slots)]

    def record_turn(self, conversation_id: str) -> None:
        with self._lock:
            self.turns[conversation_id] = self.turns.get(conversation_id, 0) + 1
            if self.turns[conversation_id] >= TURNS_PER_CONVERSATION and conversation_id in self.slots:
                self.slots[self.slots.index(conversation_id)] = self._create()


@pytest.fixture(scope="session")
def fuzz_session() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


@pytest.fixture(scope="session")
def budget(fuzz_summary: list[str]) -> Iterator[Budget]:
    counted = Budget()
    yield counted
    if counted.sent:
        seconds = counted.last - counted.started
        routes = ", ".join(f"{route}: {n}" for route, n in sorted(counted.by_route.items()))
        statuses = ", ".join(f"{status}: {n}" for status, n in sorted(counted.statuses.items()))
        fuzz_summary.append(
            f"{counted.sent} requests in {seconds:.0f} s ({counted.skipped} cases past the budget, not sent)"
        )
        fuzz_summary.append(f"by route: {routes}")
        fuzz_summary.append(f"by status: {statuses}")


@pytest.fixture(scope="session")
def pool(served_api: Any, fuzz_session: requests.Session, budget: Budget) -> ConversationPool:
    return ConversationPool(served_api.url, fuzz_session, budget)


def _load_schema() -> Any:
    """The document `devstack serve` serves, generated here too so the cases exist at collection time
    (test_the_fuzzed_document_is_the_served_one checks the two are the same)."""
    from devstack.serve import openapi_document
    from devstack.stack import local_stack

    with local_stack():  # the handlers' modules first imported under the environment they run in
        document = openapi_document()
    loaded = schemathesis.openapi.from_dict(document)
    loaded.config.update(request_timeout=REQUEST_TIMEOUT_S)
    loaded.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
    return loaded


schema = _load_schema()


# --- what a case is aimed at --------------------------------------------------------------------------


def _as_uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def aim(case: Any, pool: ConversationPool) -> str | None:
    """Point three in four well-formed conversation ids at a live conversation, and their turn ids
    at turns that exist or the next one. Returns the conversation id used, if one from the pool."""
    parameters = case.path_parameters or {}
    generated = _as_uuid(parameters.get("conversation_id"))
    if generated is None or generated.int % 4 == 0:
        return None
    conversation_id = pool.pick(generated.int >> 8)
    parameters["conversation_id"] = conversation_id
    turn_id = parameters.get("turn_id")
    if isinstance(turn_id, int) and not isinstance(turn_id, bool) and turn_id >= 1:
        parameters["turn_id"] = 1 + turn_id % (pool.turns.get(conversation_id, 0) + 1)
    return conversation_id


# --- what an answer must be ---------------------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def sent_strings(request: requests.PreparedRequest, *, with_path: bool) -> set[str]:
    """The strings a request carried, as the server could read them: path segments and body values."""
    sent: set[str] = set()
    if with_path:
        for segment in urlsplit(str(request.url)).path.split("/"):
            if segment not in ROUTE_WORDS:
                sent.update({segment, unquote(segment)})
    body = request.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, str) and body:
        sent.add(body)
        with contextlib.suppress(ValueError, RecursionError):
            sent.update(_strings(json.loads(body)))
    return {text for text in sent if len(text) >= MIN_ECHO}


# The API's own wording (its error sentences, codes and field names). A sent string that this wording
# already holds ("conversa" in "The conversation id must be a UUID.") is the server speaking, not an echo.
_ROOT = Path(__file__).resolve().parents[2]
SERVER_WORDING = "\n".join(
    (_ROOT / path).read_text(encoding="utf-8")
    for path in (
        "functions/turn_api/turn_api.py",
        "functions/turn_api/api_models.py",
        "layers/dialogue/dialogue/errors.py",
    )
)


def echoed(request: requests.PreparedRequest, status: int, text: str) -> list[str]:
    """Sent strings found in the response. A 2xx answer names its conversation: its path is not an echo."""
    try:
        answer = list(_strings(json.loads(text)))
    except (ValueError, RecursionError):
        answer = []
    found = []
    for sent in sent_strings(request, with_path=status >= 300):
        if sent in SERVER_WORDING:
            continue
        if sent in text or any(sent in part for part in answer):
            found.append(sent)
    return found


def _curl(request: requests.PreparedRequest) -> str:
    """The request as a curl command line (headers requests adds by itself left out)."""
    parts = ["curl", "-X", request.method or "GET"]
    for name, value in request.headers.items():
        if name.lower() not in ("user-agent", "accept-encoding", "accept", "connection", "content-length"):
            parts += ["-H", shlex.quote(f"{name}: {value}")]
    body = request.body
    if body:
        raw = body if isinstance(body, bytes) else body.encode()
        if len(raw) > 300:
            parts += ["--data-binary", f"'<{len(raw)} bytes, starting {raw[:60]!r}>'"]
        else:
            try:
                parts += ["--data-binary", shlex.quote(raw.decode())]
            except UnicodeDecodeError:
                parts = ["printf", shlex.quote("".join(f"\\x{byte:02x}" for byte in raw)), "|", *parts]
                parts += ["--data-binary", "@-"]
    return " ".join([*parts, shlex.quote(str(request.url))])


def check_answer(response: Any, label: str, served_api: Any) -> None:
    request = response.request
    text = response.content.decode("utf-8", errors="replace")
    where = f"{label} → {response.status_code} {text[:300]}\nreproduce with: {_curl(request)}"
    assert response.status_code < 500, f"server error: {where}\n{served_api.stderr_tail()}"
    if 400 <= response.status_code < 500:
        content_type = (response.headers.get("content-type") or [""])[0]
        assert content_type.startswith("application/json"), f"error not JSON: {where}"
        body = json.loads(text)
        assert isinstance(body, dict) and set(body) == {"error", "message"}, f"error shape: {where}"
        assert isinstance(body["error"], str) and body["error"], f"error code: {where}"
        message = body["message"]
        assert isinstance(message, str) and message.endswith("."), f"message not a sentence: {where}"
        assert not SENTENCE_END.search(message[:-1]), f"message not one sentence: {where}"
    echoes = echoed(request, response.status_code, text)
    assert not echoes, f"input echoed {echoes!r:.200}: {where}"


# The document's own promises, checked by schemathesis on every answer: a documented status, content
# type and body schema (ErrorBody for every 4xx, no fields beyond "error" and "message").
CONFORMANCE = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_schema_conformance,
]


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_fuzz_api(
    case: Any, served_api: Any, pool: ConversationPool, budget: Budget, fuzz_session: requests.Session
) -> None:
    if budget.exhausted():
        budget.skipped += 1
        return
    conversation_id = aim(case, pool)
    response = case.call(base_url=served_api.url, session=fuzz_session, timeout=REQUEST_TIMEOUT_S)
    label = case.operation.label if case.method.upper() == case.operation.method.upper() else "other methods"
    budget.count(label, response.status_code)
    if case.method.upper() == "POST" and case.operation.path.endswith("/turns"):
        budget.turn_texts.update(sent_strings(response.request, with_path=False))
    try:
        check_answer(response, label, served_api)
        case.validate_response(response, checks=CONFORMANCE)
    except BaseException:
        budget.failures += 1
        raise
    if conversation_id and case.method == "POST" and response.status_code in (200, 202):
        pool.record_turn(conversation_id)


def test_the_fuzzed_document_is_the_served_one(served_api: Any, fuzz_session: requests.Session) -> None:
    served = fuzz_session.get(f"{served_api.url}/openapi.json", timeout=REQUEST_TIMEOUT_S)
    assert served.status_code == 200
    assert served.json() == schema.raw_schema


def test_the_fuzzing_reached_the_dialogue_core(budget: Budget) -> None:
    """Runs after test_fuzz_api (file order): enough requests, and turns that the core applied."""
    if not budget.sent or budget.failures:
        pytest.skip("test_fuzz_api did not run to the end in this session")
    assert budget.sent >= min(REQUEST_BUDGET, 1000), budget.by_route
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


# --- last: what the server kept holds none of it ---------------------------------------------------------

PACK_DIR = _ROOT / "data" / "riverton"


def kept_forms(text: str) -> set[str]:
    """A string as the audit files may hold it: as sent, JSON-escaped once (an item's value) or twice
    (inside a message body or a log line that is itself JSON)."""
    once = json.dumps(text, ensure_ascii=False)[1:-1]
    twice = json.dumps(once, ensure_ascii=False)[1:-1]
    return {text.lower(), once.lower(), twice.lower()}


def telling(text: str) -> bool:
    """Long enough and varied enough that finding it by chance (in a uuid, a run of zeros) is out."""
    return len(text) >= MIN_KEPT and len(set(text)) >= 5


def test_nothing_a_turn_carried_was_kept(served_api: Any, budget: Budget) -> None:
    """Runs last (file order): stops the server, then reads every item, message and log line it kept."""
    if not budget.turn_texts:
        pytest.skip("no turn was fuzzed in this session")
    from devstack.audit import AUDIT_FILES, approved_wording

    served_api.stop()
    files = {name: (served_api.audit_dir / name).read_text(encoding="utf-8").lower() for name in AUDIT_FILES}
    assert all(files.values()), "the server kept items, sent messages and logged"
    kept = "\n".join(files.values())
    # The system's own words: the pack's, and its code's (a field name such as "human_review" is kept).
    code = "\n".join(path.read_text(encoding="utf-8") for path in (_ROOT / "layers" / "dialogue").rglob("*.py"))
    approved = approved_wording(PACK_DIR) + code.lower() + SERVER_WORDING.lower()
    checked = [text for text in budget.turn_texts if telling(text) and text.lower() not in approved]
    assert len(checked) >= 100, "the fuzzer sent enough turn text to check"
    leaks = [text for text in checked if any(form in kept for form in kept_forms(text))]
    assert not leaks, f"{len(leaks)} sent strings were kept, e.g. {leaks[:3]!r:.300}"
