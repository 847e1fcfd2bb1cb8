"""The seed's reply, screen, transcript and retained-record tables, from the seed's own model replies.

`canned:data/riverton/seed_qwen_replies.csv` replays the Qwen replies the seed printed (with their
output token counts, EOS and token-cap flags), so the screens and fallback rule meet exactly the
drafts the seed screened.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from commands import run_devstack

ROOT = Path(__file__).resolve().parents[2]
SEED_REPLIES = "canned:data/riverton/seed_qwen_replies.csv"

# Per turn: failed screen checks, EOS before token cap, reply screen, human checks, reply shown.
SEED_SCREENS = [
    ("action_slots", True, "held for human review", "pending", "Should staff contact you by phone or by email?"),
    ("none", False, "not flagged by screen", "pending",
     "I recorded the Data Support Certificate, with contact by email."),
    ("none", True, "not flagged by screen", "pending",
     "The Data Support Certificate classes are held on Mondays and Wednesdays from 6 p.m. to 9 p.m., lasting 12 "
     "weeks. Enrollment is open via email."),
    ("none", True, "not flagged by screen", "pending",
     "Program confirmed: Forklift Operator Licence course. Contact channel: email."),
    ("none", True, "not flagged by screen", "pending",
     "Hello! Could you please tell me which program you're interested in: the Data Support Certificate or the "
     "Forklift Operator Licence course?"),
    ("none", True, "not flagged by screen", "pending",
     "Staff should determine if they should contact the person via phone or email based on the program, "
     "childcare needs, and the current contact channel."),
    ("none", False, "not flagged by screen", "pending",
     "I recorded the Data Support Certificate, with contact by phone."),
    (None, None, "not applicable", "not applicable",
     "I cannot approve seats or replace staff checks. A staff member must examine that request."),
    (None, None, "not applicable", "not applicable",
     "I cannot approve seats or replace staff checks. A staff member must examine that request."),
    ("action_slots", True, "held for human review", "pending", "Should staff contact you by phone or by email?"),
    (None, None, "not applicable", "not applicable",
     "The handbook passages here do not answer that. I will route the question to staff."),
    (None, None, "not applicable", "not applicable",
     "I will route this to a staff member. This scripted lesson stores no contact details."),
    (None, None, "not applicable", "not applicable",
     "The handbook passages here do not answer that. I will route the question to staff."),
]  # fmt: skip
SEED_OUTPUT_TOKENS = [18, 60, 38, 15, 27, 28, 60, None, None, 18, None, None, None]


@pytest.fixture(scope="module")
def seed_rows() -> list[dict]:
    result = run_devstack(
        "replay",
        "data/riverton/scripted_turns.csv",
        "--realizer",
        SEED_REPLIES,
        "--json",
        "--screens",
        "lesson",
        "--understanding",
        "lesson",
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_the_lesson_profile_ran(seed_rows: list[dict]) -> None:
    assert {row["screen_profile"] for row in seed_rows} == {"lesson"}


def test_the_desk_profile_keeps_the_seeds_two_wrong_replies_from_the_resident() -> None:
    """The lesson's own Qwen run showed a resident two replies that passed every lesson screen and were
    still wrong: "Enrollment is open via email" (C1 turn 3) and a reply that addresses staff (C2 turn 2).
    The desk profile holds both; the replies it shows as written are the seed's two good ones."""
    result = run_devstack(
        "replay", "data/riverton/scripted_turns.csv", "--realizer", SEED_REPLIES, "--json", "--screens", "desk"
    )
    assert result.returncode == 0, result.stderr
    rows = {(row["conversation_id"], row["turn_id"]): row for row in map(json.loads, result.stdout.splitlines())}
    assert {row["screen_profile"] for row in rows.values()} == {"desk"}
    assert "status_claims" in rows[("C1", 3)]["screens_fired"]
    assert {"third_person", "request_asks"} <= set(rows[("C2", 2)]["screens_fired"])
    for key in (("C1", 3), ("C2", 2)):
        assert (rows[key]["reply_screen"], rows[key]["fallback_used"]) == ("held for human review", True)
    shown = [key for key, row in rows.items() if row["reply_source"] == "model" and not row["fallback_used"]]
    assert shown == [("C1", 4), ("C2", 1)]


def content_fired(row: dict) -> str | None:
    if row["reply_source"] != "model":
        return None
    content = [name for name in row["screens_fired"] if name not in ("token_cap", "no_eos", "failed", "over_budget")]
    return ", ".join(content) or "none"


def test_screens_and_fallback_are_the_seeds(seed_rows: list[dict]) -> None:
    for row, expected in zip(seed_rows, SEED_SCREENS, strict=True):
        eos_before_cap = None if row["reply_source"] != "model" else row["ended_by_eos"] and not row["hit_token_cap"]
        got = (content_fired(row), eos_before_cap, row["reply_screen"], row["human_review"], row["final_reply"])
        assert got == expected, f"{row['conversation_id']} turn {row['turn_id']}"


def test_four_of_eight_generated_replies_fall_back(seed_rows: list[dict]) -> None:
    generated = [row for row in seed_rows if row["reply_source"] == "model"]
    assert len(generated) == 8
    assert sum(row["fallback_used"] for row in generated) == 4
    assert sum(row["reply_screen"] == "held for human review" for row in generated) == 2


def test_json_carries_token_and_generation_fields(seed_rows: list[dict]) -> None:
    assert [row["output_tokens"] for row in seed_rows] == SEED_OUTPUT_TOKENS
    assert [row["naive_tokens"] for row in seed_rows] == [41, 50, 60, 72, 37, 53, 61, 43, 59, 71, 36, 48, 62]
    assert [row["prompt_plus_output"] for row in seed_rows][:4] == [158, 245, 185, 217]
    assert {row["design_budget"] for row in seed_rows} == {512}
    assert [row["max_new_tokens"] for row in seed_rows][7:9] == [0, 0]
    assert seed_rows[1]["raw_reply"].endswith("for children aged")


def test_printed_tables_hold_the_seeds_transcript_and_summary() -> None:
    result = run_devstack(
        "replay",
        "data/riverton/scripted_turns.csv",
        "--realizer",
        SEED_REPLIES,
        "--screens",
        "lesson",
        "--understanding",
        "lesson",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for title in (
        "Dialogue trace",
        "User-turn transcript prompt counts",
        "Replies from fixed text or model realization",
        "Automatic reply checks and fixed fallback",
        "Shown replies for conversation C1",
        "Retained record with slots, actions, and flags only",
    ):
        assert title in out
    transcript = out.split("Shown replies for conversation C1 after fallback rules")[1].split("\n\n")[0]
    lines = [line.split("  ")[0] for line in transcript.splitlines()[3:]]
    assert lines == [
        "I want to sign up for the Data Support Certificate.",
        "Email is best.",
        "When does it meet?",
        "Actually make that forklift.",
    ]
    assert "4 of 8 generated replies replaced by fixed fallback text; 2 held for human review." in out


def test_controls_cli_gives_the_seeds_control_table() -> None:
    result = run_devstack("controls", "--json", "--screens", "lesson")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    labels = [(row["control_id"], row["screen_label"]) for row in rows]
    assert labels == [
        ("correct-action-slots", "not flagged by screen"),
        ("wrong-program-action-slots", "held for human review"),
        ("program-only-action-slots", "held for human review"),
        ("channel-only-action-slots", "held for human review"),
        ("request-program-options", "not flagged by screen"),
        ("personal-detail-request", "held for human review"),
        ("promise-word", "held for human review"),
    ]
    assert [row["program_names"] for row in rows] == [True, False, True, True, True, True, True]
    assert [row["personal_details"] for row in rows] == [True, True, True, True, True, False, True]
    assert [row["promise_words"] for row in rows] == [True, True, True, True, True, True, False]
