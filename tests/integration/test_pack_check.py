"""`devstack new-pack` writes a starter desk that `devstack check-pack` passes; check-pack passes every
desk under data/, and fails a pack with a mistake, naming the check and exiting non-zero."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from commands import run_devstack
from pack_files import edit_domain

from devstack.pack_check import check_pack
from dialogue.pack import load_pack

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[2] / "data"
DESKS = sorted(path.parent for path in DATA.glob("*/domain.toml"))
CHECKS = [
    "loads", "texts", "scripted turns", "topic cases", "controls", "seed floor", "domain words", "word gates",
    "examples",
]  # fmt: skip


def _verdicts(stdout: str) -> dict[str, str]:
    rows = stdout.splitlines()[3:]
    found = {}
    for name in CHECKS:
        row = next(row for row in rows if row.startswith(name + "  "))
        found[name] = row[len(name) :].split()[0]
    return found


def test_new_pack_then_check_pack_passes(tmp_path: Path) -> None:
    desk = tmp_path / "ferry_desk"
    made = run_devstack("new-pack", "ferry_desk", str(desk))
    assert made.returncode == 0, made.stderr
    assert load_pack(desk).spec.domain.name == "Ferry desk"
    checked = run_devstack("check-pack", str(desk))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    verdicts = _verdicts(checked.stdout)
    assert verdicts == {**dict.fromkeys(CHECKS, "pass"), "examples": "skip"}, checked.stdout
    assert "checks passed or skipped." in checked.stdout.splitlines()[-1]


def test_new_pack_will_not_write_over_a_folder_or_take_a_bad_name(tmp_path: Path) -> None:
    assert run_devstack("new-pack", "ferry_desk", str(tmp_path)).returncode == 2
    refused = run_devstack("new-pack", "Ferry Desk!", str(tmp_path / "x"))
    assert refused.returncode == 2 and "lower-case letters" in refused.stderr
    assert "Ferry Desk!" not in refused.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("desk", DESKS, ids=[desk.name for desk in DESKS])
def test_every_desk_under_data_passes_check_pack(desk: Path) -> None:
    checks = check_pack(desk, gate_samples=100)
    assert [check.name for check in checks] == CHECKS
    assert [check for check in checks if check.passed is False] == []


def test_check_pack_fails_a_turn_that_does_not_match_and_a_control_that_misses(tmp_path: Path) -> None:
    desk = tmp_path / "desk"
    assert run_devstack("new-pack", "ferry_desk", str(desk)).returncode == 0
    turns = desk / "scripted_turns.csv"
    lines = turns.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].rsplit(",", 1)[0] + ",hand_off"  # the first turn now expects the wrong action
    turns.write_text("\n".join(lines) + "\n", encoding="utf-8")
    controls = desk / "screen_controls.csv"
    controls.write_text(
        controls.read_text(encoding="utf-8").replace("held for human review", "not flagged by screen", 1)
    )
    result = run_devstack("check-pack", str(desk))
    assert result.returncode == 1
    verdicts = _verdicts(result.stdout)
    assert (verdicts["scripted turns"], verdicts["controls"], verdicts["texts"]) == ("FAIL", "FAIL", "pass")
    assert "failed: scripted turns, controls" in result.stdout


def test_check_pack_reports_a_pack_that_does_not_load_by_file_table_entry_and_field(tmp_path: Path) -> None:
    desk = tmp_path / "desk"
    shutil.copytree(DATA / "harbourview_library", desk)
    edit_domain(desk, 'fixed_text = "Would you rather come', 'fixed_text = "{reminder} Would you rather come')
    result = run_devstack("check-pack", str(desk))
    assert result.returncode == 1
    assert _verdicts_first(result.stdout) == ("loads", "FAIL")
    assert "table actions.request_visit_part_of_day, field fixed_text: {reminder} names no slot" in result.stdout


def _verdicts_first(stdout: str) -> tuple[str, str]:
    name, verdict = stdout.splitlines()[3].split()[:2]
    return name, verdict
