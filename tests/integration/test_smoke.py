"""`make smoke`: `python -m ops.smoke --api-url` against `devstack serve` over real HTTP, as against a
deployed stack's API, and against a stub API for what devstack never does (a turn that stays pending)."""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from subprocess import CompletedProcess

import boto3
import pytest
from commands import run_command
from moto import mock_aws
from test_serve import Server, start_server, stop_server

REGION = "us-east-1"
SMOKE_TIMEOUT_S = 50  # the command's own --timeout stays well under this
# A request_contact reply that passes the desk's screens and is not the fixed fallback.
WORDED = "Would you like staff to contact you by phone or by email?"
FALLBACK = "Should staff contact you by phone or by email?"  # riverton's fixed text for request_contact
FINAL_READ = re.compile(r"^smoke: \d+ s: final$", re.MULTILINE)


def smoke(*args: str) -> CompletedProcess[str]:
    return run_command([sys.executable, "-m", "ops.smoke", *args], timeout=SMOKE_TIMEOUT_S)


def stop(server: Server) -> None:
    status, _ = stop_server(server)
    assert status == 0, server.stderr_path.read_text()[-2000:]


@pytest.fixture(scope="module")
def worded_by_realizer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """devstack serve whose realizer answers any conversation's turn 1 with WORDED (a canned draft)."""
    folder = tmp_path_factory.mktemp("smoke")
    replies = folder / "replies.csv"
    replies.write_text(f"conversation_id,turn_id,reply\n*,1,{WORDED}\n", encoding="utf-8")
    running = start_server(folder, "--quiet", "--realizer", f"canned:{replies}")
    try:
        yield running
    finally:
        stop(running)


def test_a_reply_worded_by_the_realizer_passes_and_is_named(worded_by_realizer: Server) -> None:
    # When the smoke sends the desk's first generated scripted turn and reads it to the end
    result = smoke("--api-url", worded_by_realizer.url, "--timeout", "30")
    # Then it exits 0 with a line per step and read, the reply once, and what kind of reply it was
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == f"smoke: the turn API at {worded_by_realizer.url}, the Riverton Skills Centre enrollment desk"
    assert re.fullmatch(r"smoke: \d+\.\d s: conversation [0-9a-f-]{36} created", lines[1])
    assert re.fullmatch(r"smoke: \d+\.\d s: turn 1 accepted \(request_contact, pending\)", lines[2])
    assert FINAL_READ.search(result.stdout)
    assert lines[-2] == f"smoke: reply: {WORDED}"
    assert lines[-1] == (
        "smoke: worded by the model: the reply differs from the desk's fixed fallback, so the realizer answered "
        "and the screens passed it."
    )
    assert result.stdout.count(WORDED) == 1


def test_the_template_realizer_reads_as_the_fixed_fallback(tmp_path: Path) -> None:
    # Given devstack serve's default realizer, `template`, which words a request with the fallback's own text
    server = start_server(tmp_path, "--quiet")
    try:
        result = smoke("--api-url", server.url, "--timeout", "30")
    finally:
        stop(server)
    # Then the smoke passes but says it cannot tell that reply from a fallback
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-2] == f"smoke: reply: {FALLBACK}"
    assert lines[-1].startswith("smoke: the desk's fixed fallback for request_contact: the realizer was cold")
    assert "the reply deadline passed" in lines[-1]
    assert lines[-1].endswith("the public API does not say which.")


def test_require_model_fails_on_the_fixed_fallback_with_one_line(tmp_path: Path) -> None:
    # Given devstack serve's `template` realizer, whose reply to a request is the fixed fallback's own text
    # (as a broken realizer's deadline fallback would be)
    server = start_server(tmp_path, "--quiet")
    try:
        # When the smoke must see a reply the model worded (make smoke REQUIRE_MODEL=1)
        result = smoke("--api-url", server.url, "--timeout", "30", "--require-model")
    finally:
        stop(server)
    # Then it exits 1 with one line saying so, on stderr, after the usual report
    assert result.returncode == 1, result.stdout
    assert result.stdout.splitlines()[-2] == f"smoke: reply: {FALLBACK}"
    assert result.stderr.splitlines() == [
        "smoke: FAIL (--require-model): the reply is the desk's fixed fallback for request_contact, not one the "
        "model worded: run it again once a realizer task is up (10-15 minutes from a cold start); if it fails "
        "again, the staff console's review queue shows the turn's draft and the screens that fired (deadline: the "
        "realizer did not answer; read its log group)."
    ]


def test_require_model_passes_a_reply_the_model_worded(worded_by_realizer: Server) -> None:
    result = smoke("--api-url", worded_by_realizer.url, "--timeout", "30", "--require-model")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.splitlines()[-1].startswith("smoke: worded by the model")


def test_the_stack_option_reads_the_api_url_and_the_desk_from_the_stack_outputs(
    worded_by_realizer: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ops import smoke as command

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    template = {
        "Resources": {"AlarmTopic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {"PagesUrl": {"Value": worded_by_realizer.url}, "DomainPack": {"Value": "riverton"}},
    }
    with mock_aws():
        boto3.client("cloudformation", region_name=REGION).create_stack(
            StackName="enrollment-desk", TemplateBody=json.dumps(template)
        )
        # When the smoke is given the stack rather than a URL
        status = command.main(["--stack", "enrollment-desk", "--region", REGION, "--timeout", "30"])
        missing = command.main(["--stack", "nope", "--region", REGION])
    # Then it reads the stack's PagesUrl (the API through CloudFront) and DomainPack outputs and goes on as
    # with --api-url
    shown = capsys.readouterr()
    assert status == 0
    assert f"smoke: the turn API at {worded_by_realizer.url}, the Riverton Skills Centre enrollment desk" in shown.out
    assert f"smoke: reply: {WORDED}" in shown.out
    # and a stack that is not there ends in one sentence
    assert missing == 1
    assert shown.err.splitlines() == [
        "smoke: reading the outputs of the stack nope failed (ValidationError: Stack with id nope does not exist)."
    ]


def test_an_api_answering_404_fails_with_one_sentence(worded_by_realizer: Server) -> None:
    # Given a base URL with a stage the local API does not have
    result = smoke("--api-url", f"{worded_by_realizer.url}/dev")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"smoke: POST {worded_by_realizer.url}/dev/conversations answered HTTP 404 (route_not_found)."
    ]


def test_nothing_listening_fails_with_one_sentence() -> None:
    with socket.socket() as probe:  # a port nobody listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = smoke("--api-url", f"http://127.0.0.1:{port}")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"smoke: POST http://127.0.0.1:{port}/conversations did not answer (connection refused)."
    ]


# --- a stub API: what devstack serve never answers ----------------------------------------------------

CONVERSATION = "6f0c7a52-3d1e-4b8a-9c2f-5e4d3c2b1a00"


class StubApi(BaseHTTPRequestHandler):
    """Creates conversations; answers every turn with `turn` (a status and a body); the turn never ends."""

    turn: tuple[int, dict[str, object]] = (202, {})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/conversations":
            self._answer(201, {"conversation_id": CONVERSATION})
        else:
            self._answer(*self.turn)

    def do_GET(self) -> None:
        self._answer(200, {"turn_id": 1, "status": "pending"})

    def _answer(self, status: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


def stub_api(turn: tuple[int, dict[str, object]]) -> Iterator[str]:
    handler = type("Stub", (StubApi,), {"turn": turn})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def accepted(action: str, status: str, reply_source: str, reply: str | None = None) -> dict[str, object]:
    body: dict[str, object] = {
        "conversation_id": CONVERSATION,
        "turn_id": 1,
        "action": action,
        "reply_source": reply_source,
        "status": status,
    }
    return body if reply is None else {**body, "reply": reply}


@pytest.fixture
def never_final() -> Iterator[str]:
    yield from stub_api((202, accepted("request_contact", "pending", "model")))


@pytest.fixture
def fixed_answer() -> Iterator[str]:
    yield from stub_api((200, accepted("refuse", "final", "fixed", "I cannot approve seats.")))


def test_a_turn_still_pending_at_the_timeout_fails_with_one_sentence(never_final: str) -> None:
    result = smoke("--api-url", never_final, "--timeout", "3")
    assert result.returncode == 1
    assert re.findall(r"^smoke: \d+ s: pending$", result.stdout, re.MULTILINE)
    assert result.stderr.splitlines() == [
        "smoke: turn 1 was still pending after 3 s, though its reply deadline should have made it final: "
        "look at the screen function and the screen queue."
    ]


def test_a_desk_that_answers_with_fixed_text_fails_with_one_sentence(fixed_answer: str) -> None:
    result = smoke("--api-url", fixed_answer)
    assert result.returncode == 1
    assert "I cannot approve seats." not in result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        "smoke: the desk answered the scripted turn with refuse (HTTP 200), not a generated action: it does not "
        "run the Riverton Skills Centre enrollment desk (--pack names the desk it runs)."
    ]


def test_a_cold_turns_fallback_with_the_persons_check_line_reads_as_the_fallback() -> None:
    """Issue 42: a turn that found the realizer cold shows the fixed fallback and the desk's line that a
    person will check it; the smoke must not take that for a reply the model worded."""
    from dialogue.actions import Action
    from dialogue.pack import get_pack
    from dialogue.replies import cold_reply_line
    from ops.smoke import is_fixed_fallback

    pack = get_pack()
    slots = {"program": "unknown", "childcare_needed": "unknown", "contact_channel": "unknown"}
    assert is_fixed_fallback(FALLBACK, Action.REQUEST_CONTACT, slots, pack) is True
    cold = f"{FALLBACK} {cold_reply_line(pack)}"
    assert is_fixed_fallback(cold, Action.REQUEST_CONTACT, slots, pack) is True
    assert is_fixed_fallback(WORDED, Action.REQUEST_CONTACT, slots, pack) is False
