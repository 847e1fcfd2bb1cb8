"""The two screen profiles: the pack's default (desk) for replay, chat and serve; --screens overrides it.

One draft passes every lesson screen and claims what only staff can give ("you are enrolled"): the
lesson profile shows it, the desk profile holds it and shows the fixed fallback.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

import commands
import pytest
from pack_files import desk_reply
from test_serve import start_server, stop_server

ROOT = Path(__file__).resolve().parents[2]
TURN = "I want the forklift course, email please."
CLAIM = "You're all set: you are enrolled in the Forklift Operator Licence course, with contact by email."
FALLBACK = desk_reply("confirm", program="forklift", contact_channel="email")


@pytest.fixture
def drafts(tmp_path: Path) -> Path:
    path = tmp_path / "drafts.csv"
    path.write_text(f'conversation_id,turn_id,reply\n*,1,"{CLAIM}"\n', encoding="utf-8")
    return path


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "turns.csv"
    path.write_text(f'conversation_id,turn_id,user_utterance,expected_action\nP1,1,"{TURN}",confirm\n')
    return path


def run_devstack(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """devstack with the pack's own profile: no SCREEN_PROFILE from the environment."""
    env = {key: value for key, value in os.environ.items() if key != "SCREEN_PROFILE"}
    return commands.run_devstack(*args, stdin=stdin, env=env)


@pytest.mark.parametrize(
    ("option", "profile", "shown", "fired"),
    [
        ([], "desk", FALLBACK, ["status_claims"]),
        (["--screens", "desk"], "desk", FALLBACK, ["status_claims"]),
        (["--screens", "lesson"], "lesson", CLAIM, []),
    ],
)
def test_replay_screens_with_the_packs_profile_unless_told(
    drafts: Path, script: Path, option: list[str], profile: str, shown: str, fired: list[str]
) -> None:
    result = run_devstack("replay", str(script), "--realizer", f"canned:{drafts}", "--json", *option)
    assert result.returncode == 0, result.stderr
    (row,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert (row["screen_profile"], row["final_reply"], row["screens_fired"]) == (profile, shown, fired)
    assert row["reply_screen"] == ("held for human review" if fired else "not flagged by screen")


def test_chat_screens_with_the_desk_profile_by_default(drafts: Path) -> None:
    result = run_devstack("chat", "--realizer", f"canned:{drafts}", stdin=f"{TURN}\n\n")
    assert result.returncode == 0, result.stderr
    assert f"desk> {FALLBACK}" in result.stdout
    assert "screens fired: status_claims" in result.stdout


def test_serve_screens_with_the_desk_profile_by_default(tmp_path: Path, drafts: Path) -> None:
    server = start_server(tmp_path, "--quiet", "--realizer", f"canned:{drafts}")
    try:
        request = urllib.request.Request(f"{server.url}/conversations", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            conversation_id = json.load(response)["conversation_id"]
        turn = urllib.request.Request(
            f"{server.url}/conversations/{conversation_id}/turns",
            data=json.dumps({"text": TURN}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(turn, timeout=10) as response:
            turn_id = json.load(response)["turn_id"]
        deadline = time.monotonic() + 30
        while True:
            with urllib.request.urlopen(f"{server.url}/conversations/{conversation_id}/turns/{turn_id}") as response:
                shown = json.load(response)
            if shown["status"] == "final" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert (shown["status"], shown["reply"]) == ("final", FALLBACK)
    finally:
        status, _ = stop_server(server)
    assert status == 0
