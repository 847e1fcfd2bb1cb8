"""`python -m devstack serve` over real HTTP on loopback: the same API as API Gateway, in a subprocess."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import pytest

ROOT = Path(__file__).resolve().parents[2]
URL_LINE = re.compile(r"on (http://([0-9.]+):(\d+)) ")
START_TIMEOUT_S = 60
REQUEST_TIMEOUT_S = 10
STOP_TIMEOUT_S = 20


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str
    host: str
    first_line: str
    stderr_path: Path

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        all_headers = {"content-type": "application/json", **(headers or {})}
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=all_headers)
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                status, answer_headers, text = response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            status, answer_headers, text = error.code, dict(error.headers), error.read()
        return status, {k.lower(): v for k, v in answer_headers.items()}, json.loads(text) if text else None


def _read_first_line(stdout: BinaryIO, process: subprocess.Popen[bytes]) -> str:
    """The server's first line (its URL), waiting at most START_TIMEOUT_S."""
    import selectors

    selector = selectors.DefaultSelector()
    selector.register(stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + START_TIMEOUT_S
    buffer = b""
    while b"\n" not in buffer:
        left = deadline - time.monotonic()
        if left <= 0 or process.poll() is not None:
            raise AssertionError(f"devstack serve did not start (exit status {process.poll()})")
        if selector.select(timeout=min(left, 1.0)):
            chunk = stdout.read1(4096)  # type: ignore[attr-defined]
            if not chunk:
                continue
            buffer += chunk
    selector.close()
    return buffer.decode().splitlines()[0]


def start_server(tmp_path: Path, *args: str) -> Server:
    stderr_path = tmp_path / "serve.stderr"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "devstack", "serve", "--port", "0", *args],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    assert process.stdout is not None
    try:
        line = _read_first_line(process.stdout, process)
    except AssertionError:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)
        raise AssertionError(stderr_path.read_text()[-2000:]) from None
    match = URL_LINE.search(line)
    assert match, line
    return Server(process=process, url=match.group(1), host=match.group(2), first_line=line, stderr_path=stderr_path)


def stop_server(server: Server, signum: int = signal.SIGTERM) -> tuple[int, str]:
    """Send the signal; the exit status and the rest of stdout."""
    server.process.send_signal(signum)
    try:
        out, _ = server.process.communicate(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.communicate(timeout=STOP_TIMEOUT_S)
        raise AssertionError("devstack serve did not stop on its own") from None
    return server.process.returncode, out.decode()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("serve"), "--quiet")
    try:
        yield running
    finally:
        if running.process.poll() is None:
            status, out = stop_server(running)
            assert status == 0, running.stderr_path.read_text()[-2000:]
            assert "stopped" in out


def test_binds_loopback_by_default(server: Server) -> None:
    assert server.host == "127.0.0.1", server.first_line


def test_a_conversation_over_http(server: Server) -> None:
    # Given a new conversation
    status, _, created = server.request("POST", "/conversations")
    assert status == 201, created
    conversation = created["conversation_id"]

    # When a turn with a fixed reply is posted, the reply comes at once
    status, _, fixed = server.request(
        "POST", f"/conversations/{conversation}/turns", {"text": "Can I talk to a person?"}
    )
    assert status == 200, fixed
    assert fixed["action"] == "hand_off"
    assert fixed["reply_source"] == "fixed" and fixed["status"] == "final" and fixed["reply"]

    # When a turn that a model words is posted, it is accepted and completes in the background
    status, _, pending = server.request(
        "POST", f"/conversations/{conversation}/turns", {"text": "I want to sign up for the Data Support Certificate."}
    )
    assert status == 202, pending
    assert pending["status"] == "pending" and "reply" not in pending
    turn = pending["turn_id"]
    for _ in range(100):  # at most about 10 s
        status, _, detail = server.request("GET", f"/conversations/{conversation}/turns/{turn}")
        assert status == 200, detail
        if detail["status"] == "final":
            break
        time.sleep(0.1)
    assert detail["status"] == "final", detail
    assert set(detail) == {"turn_id", "status", "reply"} and detail["reply"]  # no flags for residents

    # And the resident's messages hold both replies, in order
    status, _, page = server.request("GET", f"/conversations/{conversation}/messages?after=0")
    assert status == 200, page
    assert [(m["source"], m["turn_id"]) for m in page["messages"]] == [("assistant", 1), ("assistant", turn)]
    assert page["messages"][-1]["text"] == detail["reply"] and page["next_after"] == 2

    # Then the conversation holds both turns
    status, _, record = server.request("GET", f"/conversations/{conversation}")
    assert status == 200, record
    assert record["turn_count"] == 2
    assert record["slots"]["program"] == "data_support"


def test_errors_keep_their_shape_over_http(server: Server) -> None:
    status, headers, body = server.request("POST", "/conversations/not-a-uuid/turns", {"text": "hello"})
    assert status == 400 and set(body) == {"error", "message"}
    assert headers["content-type"].startswith("application/json")
    status, _, body = server.request("POST", "/conversations", raw=b"\xff\xfe not utf-8")
    assert status < 500
    status, _, body = server.request("DELETE", "/conversations")
    assert status in (404, 405) and set(body) == {"error", "message"}
    status, _, body = server.request("GET", "/conversations/not-a-uuid?x=1&x=2")
    assert status == 400 and body["error"] == "invalid_conversation_id"


def test_serves_the_openapi_document(server: Server) -> None:
    status, _, document = server.request("GET", "/openapi.json")
    assert status == 200
    assert set(document["paths"]) == {
        "/conversations",
        "/conversations/{conversation_id}/turns",
        "/conversations/{conversation_id}/turns/{turn_id}",
        "/conversations/{conversation_id}/messages",
        "/conversations/{conversation_id}",
        "/conversations/{conversation_id}/contact",
    }
    error_body = document["components"]["schemas"]["ErrorBody"]
    assert set(error_body["properties"]) == {"error", "message"} and error_body["additionalProperties"] is False
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert all("description" in response for response in responses.values()), (method, path)
            errors = {code: r for code, r in responses.items() if code.startswith(("4", "5"))}
            assert {"404", "422", "503"} <= set(errors), (method, path)
            for code, response in errors.items():
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path, code)
                assert ("headers" in response) is (code in ("409", "429", "503")), (method, path, code)
            if "{" in path:
                assert "400" in errors, (method, path)
    turns = document["paths"]["/conversations/{conversation_id}/turns"]["post"]["responses"]
    assert {"200", "202", "400", "404", "409", "422", "429"} <= set(turns)
    for status in ("200", "202"):
        assert turns[status]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/TurnAccepted"}
    validator = pytest.importorskip("openapi_spec_validator")  # comes with moto[server]
    validator.validate(document)


def test_stops_cleanly_on_sigint(tmp_path: Path) -> None:
    server = start_server(tmp_path, "--quiet")
    status, _, _ = server.request("POST", "/conversations")
    assert status == 201
    status, out = stop_server(server, signal.SIGINT)
    assert status == 0, server.stderr_path.read_text()[-2000:]
    assert "stopped" in out


def test_refuses_a_port_in_use(server: Server, tmp_path: Path) -> None:
    port = server.url.rsplit(":", 1)[1]
    result = subprocess.run(
        [sys.executable, "-m", "devstack", "serve", "--port", port],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=START_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 2
    assert b"cannot serve" in result.stderr


def _token(*args: str) -> str:
    """A bearer token from `python -m devstack token` (its stdout's last line)."""
    from commands import run_command

    result = run_command([sys.executable, "-m", "devstack", "token", *args], timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_staff_routes_take_the_tokens_devstack_issues_and_no_others(server: Server) -> None:
    # Given tokens from `devstack token`: a staff member's, and a signed-in user's outside the group
    staff = {"authorization": f"Bearer {_token('--staff', 'ana')}"}
    outsider = {"authorization": f"Bearer {_token('--staff', 'bo', '--group', '')}"}
    # Then the staff token reads the desk's figures; no token, a garbled one or the outsider's do not
    status, _, stats = server.request("GET", "/staff/stats", headers=staff)
    assert status == 200 and set(stats["reviews"]) == {"pending", "approved", "rejected", "corrected"}, stats
    status, headers, body = server.request("GET", "/staff/stats")
    assert (status, body["error"], headers["www-authenticate"]) == (401, "NotSignedIn", "Bearer")
    status, _, body = server.request("GET", "/staff/stats", headers={"authorization": "Bearer not.a.token"})
    assert status == 401
    status, _, body = server.request("GET", "/staff/stats", headers=outsider)
    assert (status, body["error"]) == (403, "NotStaff")
    # And the staff API's own OpenAPI document is served beside the turn API's
    status, _, document = server.request("GET", "/openapi-staff.json")
    assert status == 200 and "/staff/reviews/{conversation_id}/{turn_id}/decision" in document["paths"]
    assert document["components"]["securitySchemes"]["staffToken"]["scheme"] == "bearer"
