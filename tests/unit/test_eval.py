"""`devstack eval`: a labelled CSV scored against a pack, as a desk author runs it.

The figures are checked on small files whose right answers are worked out by hand here, so a wrong
count, a wrong precision or a check that never runs would show.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devstack.evaluate import EvalError, read_cases, score_file
from dialogue.pack import get_pack
from tests.commands import ROOT, run_devstack

RIVERTON = ROOT / "data" / "riverton"


def _write(path: Path, header: str, *rows: str) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_single_turns_are_scored_per_action_with_alternatives_and_exclusions(tmp_path: Path) -> None:
    cases = _write(
        tmp_path / "cases.csv",
        "group,program,text,expected_action,expected_topic,expected_passage_ids",
        "hours,unknown,What are your opening hours?,inform,centre_hours,H01",  # right
        "schedule,forklift,When does it meet?,inform,schedule,H11",  # right: the program picks the row
        "schedule,forklift,When does it meet?,inform,schedule,H06",  # wrong rows
        "person,unknown,Can I talk to a person?,hand_off|abstain_hand_off,,",  # right
        "benign,unknown,What is the parking fee?,!refuse,,",  # right: anything but refuse
        "benign,unknown,What is the parking fee?,!abstain_hand_off,,",  # wrong
        "parking,unknown,What is the parking fee?,abstain_hand_off,fees,",  # wrong topic (parking decides)
    )
    report = score_file(cases, get_pack(RIVERTON))
    assert [outcome.right for outcome in report.outcomes] == [True, True, False, True, True, False, False]
    assert report.right == 4 and report.share == pytest.approx(4 / 7)
    assert [outcome.failed for outcome in report.misses] == [("rows",), ("action",), ("topic",)]
    assert report.groups == {"hours": (1, 1), "schedule": (1, 2), "person": (1, 1), "benign": (1, 2), "parking": (0, 1)}
    # abstain_hand_off came out 3 times (the three parking rows); 2 of them have it as their true class (the
    # `!abstain_hand_off` row's true class is `-`): precision 2/3, recall 2/2.
    assert report.actions["abstain_hand_off"] == {"precision": 0.6667, "recall": 1.0, "support": 2}
    assert report.action_confusion["-"] == {"abstain_hand_off": 1}
    assert report.topic_confusion["fees"] == {"parking": 1}


def test_conversations_carry_their_state_and_check_slots(tmp_path: Path) -> None:
    cases = _write(
        tmp_path / "conversation.csv",
        "conversation_id,turn_id,text,expected_action,expected_program,expected_contact_channel",
        "A,1,I want to sign up for the Data Support Certificate.,request_contact,data_support,unknown",
        "A,2,Email is best.,confirm,data_support,email",
        "B,1,Email is best.,confirm,,",  # a fresh state: the program is still unknown
        "A,3,Actually make that forklift.,confirm,forklift,phone",  # the contact stays email
    )
    report = score_file(cases, get_pack(RIVERTON))
    assert [outcome.failed for outcome in report.outcomes] == [(), (), ("action",), ("contact_channel",)]
    assert report.outcomes[2].action == "request_program"


def test_the_seed_scripted_turns_score_as_they_are() -> None:
    report = score_file(RIVERTON / "scripted_turns.csv", get_pack(RIVERTON))
    assert (report.right, len(report.outcomes)) == (13, 13)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("x,What?,approve", "expected_action names no action"),
        ("x,What?,inform", None),
    ],
)
def test_bad_labels_are_named_by_line(tmp_path: Path, row: str, message: str | None) -> None:
    cases = _write(tmp_path / "bad.csv", "group,text,expected_action", row)
    if message is None:
        assert len(read_cases(cases, get_pack(RIVERTON))) == 1
        return
    with pytest.raises(EvalError, match=message) as raised:
        read_cases(cases, get_pack(RIVERTON))
    assert "line 2" in str(raised.value)


def test_a_scripted_turns_files_fallback_column_is_read_past(tmp_path: Path) -> None:
    header = "user_utterance,expected_action,expected_fallback"
    cases = _write(tmp_path / "turns.csv", header, "Email is best.,confirm,true")
    assert [case.text for case in read_cases(cases, get_pack(RIVERTON))] == ["Email is best."]


def test_a_misspelt_column_is_an_error_not_a_silent_pass(tmp_path: Path) -> None:
    cases = _write(tmp_path / "typo.csv", "text,expected_programme", "Forklift please,forklift")
    with pytest.raises(EvalError, match="expected_programme"):
        read_cases(cases, get_pack(RIVERTON))


def test_the_command_scores_a_pack_outside_data_and_says_when_a_goal_is_missed(pack_copy: Path, tmp_path: Path) -> None:
    cases = _write(
        tmp_path / "cases.csv",
        "text,expected_action",
        "What are your opening hours?,inform",
        "What are your opening hours?,refuse",
    )
    printed = run_devstack("eval", "--pack", str(pack_copy), str(cases))
    assert printed.returncode == 0, printed.stderr
    assert "1 of 2 right (50.0%)" in printed.stdout
    assert "line 3 (refuse): got inform centre_hours [H01]; expected action refuse" in printed.stdout

    as_json = run_devstack("eval", "--pack", str(pack_copy), "--json", "--goal", "0.9", str(cases))
    assert as_json.returncode == 1
    assert "below the goal of 90%" in as_json.stderr
    record = json.loads(as_json.stdout)
    assert (record["rows"], record["right"]) == (2, 1)
    assert record["misses"][0]["line"] == 3

    broken = run_devstack("eval", "--pack", str(pack_copy), str(tmp_path / "missing.csv"))
    assert broken.returncode == 2 and "cannot be read" in broken.stderr
