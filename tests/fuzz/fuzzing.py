"""What the fuzz tests share: request budgets, a pool of live conversations, and the checks every
answer must pass (no 5xx, the documented error shape, no echo of what was sent)."""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import requests
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode

TURNS_PER_CONVERSATION = 6  # renew a pool conversation well before any per-conversation turn limit
POOL_SIZE = 6
MIN_ECHO = 8
MIN_KEPT = 12  # a sent string this long found in what the server kept is user text kept
REQUEST_TIMEOUT_S = 10
SENTENCE_END = re.compile(r"[.!?]\s+[A-Z]")  # a second sentence starts after the first one's end
ROUTE_WORDS = {"conversations", "turns", "messages", "staff", "reviews", "handoffs", "decision", "release"}
"""The routes' own path words: not input."""


@dataclass
class Budget:
    """Counts requests; says when the run is over (after `requests` requests or `seconds` seconds)."""

    requests: int
    seconds: float
    started: float = field(default_factory=time.monotonic)
    last: float = 0.0
    sent: int = 0
    by_route: dict[str, int] = field(default_factory=dict)
    statuses: dict[int, int] = field(default_factory=dict)
    skipped: int = 0
    failures: int = 0
    turn_texts: set[str] = field(default_factory=set)  # strings turn bodies carried, for the storage audit

    def exhausted(self) -> bool:
        return self.sent >= self.requests or time.monotonic() - self.started > self.seconds

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


def as_uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


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
ROOT = Path(__file__).resolve().parents[2]
SERVER_WORDING = "\n".join(
    (ROOT / path).read_text(encoding="utf-8")
    for path in (
        "functions/turn_api/turn_api.py",
        "functions/turn_api/api_models.py",
        "functions/staff_api/staff_api.py",
        "functions/staff_api/staff_models.py",
        "layers/dialogue/dialogue/aws/api.py",
        "layers/dialogue/dialogue/errors.py",
        "data/riverton/domain.toml",  # the staff's reason codes are the pack's
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


# --- last: what the server kept holds none of it ---------------------------------------------------------

PACK_DIR = ROOT / "data" / "riverton"


def kept_forms(text: str) -> set[str]:
    """A string as the audit files may hold it: as sent, JSON-escaped once (an item's value) or twice
    (inside a message body or a log line that is itself JSON)."""
    once = json.dumps(text, ensure_ascii=False)[1:-1]
    twice = json.dumps(once, ensure_ascii=False)[1:-1]
    return {text.lower(), once.lower(), twice.lower()}


def telling(text: str) -> bool:
    """Long enough and varied enough that finding it by chance (in a uuid, a run of zeros) is out."""
    return len(text) >= MIN_KEPT and len(set(text)) >= 5


def send_and_check(
    case: Any, served_api: Any, session: requests.Session, budget: Budget, headers: dict[str, str] | None = None
) -> Any:
    """Send a schemathesis case, count it, and check its answer: this module's checks and the document's
    own promises (CONFORMANCE). Returns the response."""
    response = case.call(base_url=served_api.url, session=session, timeout=REQUEST_TIMEOUT_S, headers=headers)
    label = case.operation.label if case.method.upper() == case.operation.method.upper() else "other methods"
    budget.count(label, response.status_code)
    try:
        check_answer(response, label, served_api)
        case.validate_response(response, checks=CONFORMANCE)
    except BaseException:
        budget.failures += 1
        raise
    return response


def load_schema(document: Callable[[], dict[str, Any]]) -> Any:
    """The schemathesis schema of a document `devstack serve` serves, generated here too so the cases exist
    at collection time (each fuzz file checks the served document is the same), for positive and
    negative cases."""
    from devstack.stack import local_stack

    with local_stack():  # the handlers' modules first imported under the environment they run in
        generated = document()
    loaded = schemathesis.openapi.from_dict(generated)
    loaded.config.update(request_timeout=REQUEST_TIMEOUT_S)
    loaded.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
    return loaded


def fuzz_settings(max_examples: int) -> Any:
    """Hypothesis settings for a fuzz test: `max_examples` per route, the same cases on every run."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
