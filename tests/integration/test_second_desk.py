"""A second desk from data alone: `--pack` for replay, controls, chat and serve, and what replay says of topics."""

from __future__ import annotations

import csv
import json
import shutil
import urllib.request
from pathlib import Path

from commands import run_devstack
from test_serve import start_server, stop_server

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "data" / "harbourview_library"


def test_the_second_desk_replays_fully() -> None:
    with (LIBRARY / "scripted_turns.csv").open(newline="", encoding="utf-8") as handle:
        turns = list(csv.DictReader(handle))
    conversations = {turn["conversation_id"] for turn in turns}
    assert len(turns) >= 14 and len(conversations) >= 5
    result = run_devstack("replay", "--pack", "data/harbourview_library", "data/harbourview_library/scripted_turns.csv")
    assert result.returncode == 0, result.stderr
    assert f"{len(turns)} of {len(turns)} turns match the expected state and action." in result.stdout
    # The trace's columns are the library's frame, not Riverton's
    assert "Service" in result.stdout.splitlines()[1]
    assert "Program" not in result.stdout.splitlines()[1]


def test_the_second_desks_script_covers_every_kind_of_turn() -> None:
    result = run_devstack(
        "replay", "--pack", "harbourview_library", "data/harbourview_library/scripted_turns.csv", "--json"
    )
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    actions = {row["action"] for row in rows}
    assert {"refuse", "abstain_hand_off", "hand_off", "inform", "request_program", "request_contact", "confirm"} <= (
        actions
    )
    assert sum(row["action"] == "refuse" for row in rows) >= 2, "a refusal and a paraphrased one"
    for row in rows:
        assert ("service" in row, "program" in row) == (True, False)


def test_replay_json_names_the_topic_and_the_rows_the_prompt_used() -> None:
    result = run_devstack("replay", "data/riverton/scripted_turns.csv", "--json")
    assert result.returncode == 0, result.stderr
    rows = {(row["conversation_id"], row["turn_id"]): row for row in map(json.loads, result.stdout.splitlines())}
    assert (rows[("C1", 3)]["topic"], rows[("C1", 3)]["passage_ids"]) == ("schedule", ["H06"])
    assert (rows[("C1", 2)]["topic"], rows[("C1", 2)]["passage_ids"]) == (None, ["H03", "H06", "H13"])
    assert (rows[("C4", 1)]["topic"], rows[("C4", 1)]["passage_ids"]) == ("parking", [])
    assert (rows[("C4", 2)]["topic"], rows[("C4", 2)]["passage_ids"]) == (None, [])


def test_controls_take_the_desks_own_file_and_slots() -> None:
    result = run_devstack("controls", "--pack", "harbourview_library")
    assert result.returncode == 0, result.stderr
    header = result.stdout.splitlines()[1]
    assert "Service" in header and "Program  " not in header
    seed = run_devstack("controls")
    assert seed.returncode == 0, seed.stderr
    assert seed.stdout.splitlines()[1].split()[:6] == ["Control", "Control", "reply", "Action", "Program", "Contact"]


def test_chat_runs_the_second_desk() -> None:
    result = run_devstack("chat", "--pack", "harbourview_library", stdin="Can I talk to a librarian?\n\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Harbourview Public Library card and room desk")
    assert "[hand_off]" in result.stdout
    assert "service=unknown" in result.stdout


def test_serve_runs_the_second_desk(tmp_path: Path) -> None:
    server = start_server(tmp_path, "--quiet", "--pack", "harbourview_library")
    try:
        with urllib.request.urlopen(f"{server.url}/config.json", timeout=10) as response:
            desk = json.load(response)["desk"]
        assert desk["name"] == "Harbourview Public Library card and room desk"
        request = urllib.request.Request(f"{server.url}/conversations", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            conversation_id = json.load(response)["conversation_id"]
        turn = urllib.request.Request(
            f"{server.url}/conversations/{conversation_id}/turns",
            data=json.dumps({"text": "Can I talk to a librarian?"}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(turn, timeout=10) as response:
            shown = json.load(response)
        assert shown["status"] == "final"
        library_hand_off = _fixed_text(LIBRARY, "hand_off")
        assert shown["reply"] == library_hand_off
    finally:
        status, _ = stop_server(server)
    assert status == 0


def _fixed_text(desk: Path, action: str) -> str:
    import tomllib

    return str(tomllib.loads((desk / "domain.toml").read_text())["actions"][action]["fixed_text"])


def test_a_pack_with_a_mistake_stops_every_command_with_file_table_and_field(tmp_path: Path) -> None:
    broken = tmp_path / "desk"
    shutil.copytree(LIBRARY, broken)
    domain = broken / "domain.toml"
    domain.write_text(domain.read_text().replace('slot = "reply_channel"', 'slot = "pager"', 1))
    for command in (["replay", str(broken / "scripted_turns.csv")], ["controls"], ["chat"], ["serve", "--port", "0"]):
        result = run_devstack(*command, "--pack", str(broken), stdin="")
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "domain.toml, table understanding.slot_rules, entry" in result.stderr
        assert "field slot: 'pager' is no slot" in result.stderr
