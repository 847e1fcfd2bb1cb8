"""The seed's 13 turns through the real handlers, queue, worker and screen function on moto."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import commands

from devstack.replay import replay_conversation
from devstack.stack import LocalStack
from dialogue.human_checks import use_draws
from dialogue.pack import DomainPack, ScriptedTurn, scripted_turns_by_conversation

ROOT = Path(__file__).resolve().parents[2]
# The fixed texts residents read: the seed's, but the desk profile's own hand-off (the lesson profile's
# are the seed's word for word: test_seed_tables.py).
DESK_FIXED = {
    "refuse": "I cannot approve seats or replace staff checks. A staff member must examine that request.",
    "hand_off": (
        "I will pass this to a member of the Riverton Skills Centre staff, who can answer you here in this chat. "
        "This chat keeps no names, numbers or addresses."
    ),
    "abstain_hand_off": (
        "The handbook does not answer that. I will pass your question to a member of staff, who can answer you "
        "here in this chat."
    ),
}


def replay_all(stack: LocalStack, turns: list[ScriptedTurn]) -> list:
    rows = []
    for conversation in scripted_turns_by_conversation(turns).values():
        rows.extend(replay_conversation(stack, conversation))
    return rows


def test_thirteen_turns_match_the_seed(stack: LocalStack, scripted_turns: list[ScriptedTurn]) -> None:
    rows = replay_all(stack, scripted_turns)
    assert len(rows) == 13
    for row in rows:
        assert (row.slots, row.action) == (row.expected_slots, row.expected_action), (
            f"{row.conversation_id} turn {row.turn_id}"
        )
        assert row.state_matches and row.action_matches


def test_fixed_texts_are_exact_and_final(stack: LocalStack, scripted_turns: list[ScriptedTurn]) -> None:
    rows = replay_all(stack, scripted_turns)
    fixed = [row for row in rows if row.action in DESK_FIXED]
    assert len(fixed) == 5
    for row in fixed:
        assert row.final_reply == DESK_FIXED[row.action]
        assert (row.reply_source, row.status, row.reply_screen, row.human_review) == (
            "fixed",
            "final",
            "not applicable",
            "not applicable",
        )


def test_generated_turns_are_screened_and_await_a_person(stack: LocalStack, scripted_turns: list) -> None:
    """At the desk, a reply shown as the fallback awaits a person; one shown as drafted only when drawn (here
    the draw never picks one: dialogue.human_checks)."""
    with use_draws(lambda: 0.99):
        rows = replay_all(stack, scripted_turns)
    generated = [row for row in rows if row.reply_source == "model"]
    assert len(generated) == 8
    for row in generated:
        assert row.status == "final"
        assert row.human_review == ("pending" if row.fallback_used else "not drawn")
        assert row.reply_screen in ("not flagged by screen", "held for human review")
        assert row.final_reply
    assert any(not row.fallback_used for row in generated), "a reply was shown as drafted, so the draw ran"


def test_post_turn_statuses(stack: LocalStack) -> None:
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    path = f"/conversations/{conversation_id}/turns"
    pending = stack.call_api("POST", path, {"text": "I want the Data Support Certificate."})
    assert pending.status == 202
    assert pending.body == {
        "conversation_id": conversation_id,
        "turn_id": 1,
        "action": "request_contact",
        "reply_source": "model",
        "status": "pending",
    }
    final = stack.call_api("POST", path, {"text": "Can I talk to a person?"})
    assert final.status == 200
    assert final.body["reply"] == DESK_FIXED["hand_off"]
    assert (final.body["turn_id"], final.body["status"], final.body["reply_source"]) == (2, "final", "fixed")
    # The first turn stays pending, with no reply, until the realizer and the screen function run.
    before = stack.call_api("GET", f"{path}/1").body
    assert before["status"] == "pending" and before["reply"] is None
    stack.drain()
    after = stack.call_api("GET", f"{path}/1").body
    assert after["status"] == "final"
    assert after["reply"] == "Should staff contact you by phone or by email?"


def test_refused_turn_leaves_the_stored_state_unchanged(stack: LocalStack) -> None:
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    path = f"/conversations/{conversation_id}"
    stack.call_api("POST", f"{path}/turns", {"text": "I need the Data Support Certificate."})
    before = stack.call_api("GET", path).body
    refused = stack.call_api("POST", f"{path}/turns", {"text": "Approve my forklift seat and email me."})
    assert refused.body["action"] == "refuse"
    after = stack.call_api("GET", path).body
    assert (
        after["slots"]
        == before["slots"]
        == {
            "program": "data_support",
            "childcare_needed": "unknown",
            "contact_channel": "unknown",
        }
    )
    assert after["turn_count"] == 2


def test_realize_job_on_the_queue_is_the_contract(stack: LocalStack) -> None:
    conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
    stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": "forklift please, by phone"})
    assert not stack.sent_messages, "the turn API sends nothing: the table's stream carries the turn on"
    stack.run_dispatch()
    (sent,) = [m for m in stack.sent_messages if m["queue_url"] == stack.realize_queue.url]
    job = json.loads(sent["body"])
    assert set(job) == {
        "job_id", "conversation_id", "turn_id", "action", "slots", "topic", "fact_ids", "messages",
        "max_new_tokens", "created_at",
    }  # fmt: skip
    assert job["action"] == "confirm"
    assert job["fact_ids"] == ["H03", "H11"]
    assert job["max_new_tokens"] == 60


def run_devstack(*args: str) -> subprocess.CompletedProcess[str]:
    return commands.run_devstack(*args, timeout=120)


def test_replay_cli_prints_the_trace_and_13_of_13() -> None:
    # A fresh `python -m devstack`, as a user starts it (the other commands fork from a preloaded one)
    result = commands.run_devstack("replay", "data/riverton/scripted_turns.csv", timeout=120, fresh=True)
    assert result.returncode == 0, result.stderr
    assert "Dialogue trace" in result.stdout
    assert "13 of 13 turns match the expected state and action." in result.stdout


def test_replay_cli_json_has_one_object_per_turn() -> None:
    result = run_devstack("replay", "data/riverton/scripted_turns.csv", "--json")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 13
    required = {
        "conversation_id", "turn_id", "intent", "injection_screen", "privileged_request", "program",
        "childcare_needed", "contact_channel", "action", "reply_source", "final_reply", "state_matches",
        "action_matches",
    }  # fmt: skip
    assert all(required <= set(row) for row in rows)
    assert [row["conversation_id"] for row in rows[:4]] == ["C1"] * 4
    assert rows[7]["injection_screen"] is True


def test_replay_cli_exits_1_on_a_mismatch(tmp_path: Path) -> None:
    script = tmp_path / "turns.csv"
    script.write_text(
        "conversation_id,turn_id,user_utterance,expected_action\n"
        "X1,1,I want the Data Support Certificate.,confirm\n"
        "X1,2,Email is best.,confirm\n"
    )
    result = run_devstack("replay", str(script), "--json")
    assert result.returncode == 1
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["action_matches"] for row in rows] == [False, True]
    assert rows[0]["state_matches"] is None


def test_replay_cli_without_expectations_exits_0(tmp_path: Path) -> None:
    script = tmp_path / "turns.csv"
    script.write_text("conversation_id,turn_id,user_utterance\nY1,1,What is the parking fee?\n")
    result = run_devstack("replay", str(script), "--json")
    assert result.returncode == 0, result.stderr
    (row,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert row["action"] == "abstain_hand_off"
    assert row["action_matches"] is None


def test_a_forked_command_answers_as_a_fresh_one(tmp_path: Path) -> None:
    """The tests' devstack commands fork from a preloaded process (tests/commands.py): one answers as a
    fresh `python -m devstack` does, its exit status and every row it prints but the conversation's new
    id, for another desk and environment too. (stderr differs by transformers' import notice, which the
    forkserver printed once.)"""
    script = tmp_path / "turns.csv"
    script.write_text(
        "conversation_id,turn_id,user_utterance,expected_action\n"
        "Z1,1,Can I talk to a librarian?,hand_off\n"
        "Z1,2,When does the library open?,refuse\n"
    )
    env = {**os.environ, "SCREEN_PROFILE": "lesson"}
    args = ("replay", "--pack", "harbourview_library", str(script), "--json")
    forked = commands.run_devstack(*args, env=env, timeout=120)
    fresh = commands.run_devstack(*args, env=env, timeout=120, fresh=True)
    assert (forked.returncode, fresh.returncode) == (1, 1)  # the second turn's expected action is wrong on purpose
    rows, fresh_rows = ([json.loads(line) for line in run.stdout.splitlines()] for run in (forked, fresh))
    for row in (*rows, *fresh_rows):
        row.pop("api_conversation_id")  # a new id each run
    assert rows == fresh_rows and len(rows) == 2
    assert {row["screen_profile"] for row in rows} == {"lesson"} and all("service" in row for row in rows)


def test_pack_is_what_the_stack_uses(stack: LocalStack, pack: DomainPack) -> None:
    from dialogue.pack import get_pack

    assert get_pack().spec == pack.spec


def test_only_generated_turns_reach_the_realize_queue(stack: LocalStack, scripted_turns: list[ScriptedTurn]) -> None:
    """Refusal, hand-off and abstention never call a model: the 13 turns queue exactly 8 jobs."""
    rows = replay_all(stack, scripted_turns)
    jobs = [json.loads(m["body"]) for m in stack.sent_messages if m["queue_url"] == stack.realize_queue.url]
    generated = [(row.api_conversation_id, row.api_turn_id) for row in rows if row.reply_source == "model"]
    assert sorted((job["conversation_id"], job["turn_id"]) for job in jobs) == sorted(generated)
    assert {job["action"] for job in jobs} <= {"request_program", "request_contact", "confirm", "inform"}
    assert len(jobs) == 8
