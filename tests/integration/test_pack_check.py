"""`devstack new-pack` writes a starter desk that `devstack check-pack` passes; check-pack passes every
desk under data/, and fails a pack with a mistake, naming the check and exiting non-zero, and naming
what is at fault: the turn, the topic case, the held-out text, the line of code."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from commands import run_devstack
from pack_files import edit_domain

from devstack.pack_check import ROOT, check_pack, find_words, new_pack, word_pattern
from dialogue.normalize import normalize
from dialogue.pack import load_pack

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parents[2] / "data"
DESKS = sorted(path.parent for path in DATA.glob("*/domain.toml"))
CHECKS = ["loads", "texts", "scripted turns", "topic cases", "controls", "seed floor", "domain words", "examples"]


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
    checks = check_pack(desk)
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
    assert "failed: scripted turns, controls" in result.stdout.splitlines()[-1]
    # Under the table, the turn at fault, what it expected and what it got.
    named = 'S1/1 "Hello, I\'d like to make a request.": expected hand_off, got request_program'
    assert f"scripted turns: what failed\n  {named}" in result.stdout


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


def _starter(tmp_path: Path) -> Path:
    return new_pack("ferry_desk", tmp_path / "ferry_desk")


def _only(desk: Path, name: str, root: Path = ROOT) -> tuple[bool | None, str, tuple[str, ...]]:
    loads, check = check_pack(desk, only={name}, root=root)
    assert loads.passed, loads.detail
    return check.passed, check.detail, check.findings


def _append_row(path: Path, **cells: str) -> int:
    """Add a row to a CSV file (blank where `cells` names no column); return its line."""
    with path.open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    with path.open("a", newline="", encoding="utf-8") as handle:
        csv.writer(handle, lineterminator="\n").writerow([cells.get(name, "") for name in header])
    return len(path.read_text(encoding="utf-8").splitlines())


def test_check_pack_names_each_held_out_text_that_is_an_example(tmp_path: Path) -> None:
    """Every `*_heldout*.csv`, in the pack's folder or its eval/, is held out; a text of one that is also
    an example is named by file and line, as written, unless the desk's own topic cases or a tuning part
    (`*_tune.csv`) holds it too (the example was drawn from there)."""
    desk = tmp_path / "desk"
    shutil.copytree(DATA / "harbourview_library", desk)
    assert _only(desk, "examples")[0] is True
    examples = load_pack(desk).examples
    assert examples is not None
    drawn = {normalize(row["text"]) for row in csv.DictReader((desk / "topic_cases.csv").open(encoding="utf-8"))}
    # The slot values' examples are written by hand (no set holds them); the topics' are drawn from sets.
    leaked = [text for values in examples.values.values() for texts in values.values() for text in texts][:2]
    repeated = next(text for texts in examples.topics.values() for text in texts if normalize(text) in drawn)
    in_eval = _append_row(desk / "eval" / "injections_heldout.csv", text=leaked[0], expected_action="!refuse")
    in_pack = _append_row(desk / "topic_cases_heldout.csv", text=leaked[1], expected_action="inform")
    _append_row(desk / "topic_cases_heldout.csv", text=repeated, expected_action="inform")
    (desk / "topic_cases_heldout2.csv").write_text((desk / "topic_cases_heldout.csv").read_text(encoding="utf-8"))

    passed, detail, findings = _only(desk, "examples")
    assert passed is False
    second = len((desk / "topic_cases_heldout2.csv").read_text(encoding="utf-8").splitlines()) - 1
    assert findings == (
        f"eval/injections_heldout.csv:{in_eval}: {leaked[0]!r}",
        f"topic_cases_heldout.csv:{in_pack}: {leaked[1]!r}",
        f"topic_cases_heldout2.csv:{second}: {leaked[1]!r}",
    )
    assert detail.startswith("3 of ") and f"examples.toml: {findings[0]} and 2 more" in detail


def test_check_pack_names_the_topic_cases_that_miss(tmp_path: Path) -> None:
    desk = _starter(tmp_path)
    cases = desk / "topic_cases_heldout.csv"
    cases.write_text(
        "topic,service,text,expected_action,expected_passage_ids\n"
        "opening_hours,unknown,When do you open on Mondays?,inform,S01\n"
        "opening_hours,unknown,What time do you open?,hand_off,\n",
        encoding="utf-8",
    )
    passed, detail, findings = _only(desk, "topic cases")
    assert passed is False
    miss = "topic_cases_heldout.csv:3 (opening_hours) 'What time do you open?': got inform opening_hours [S01]; "
    assert findings == (miss + "expected action hand_off",)
    assert "topic_cases_heldout.csv 1 of 2 (50%)" in detail and f"missed: {findings[0]}" in detail
    # A file at the goal names none of its misses: the one miss of 23 leaves topic_cases.csv at 96%.
    cases.unlink()
    own = desk / "topic_cases.csv"
    own.write_text(own.read_text(encoding="utf-8").replace("open?,inform,S01", "open?,refuse,", 1))
    assert _only(desk, "topic cases")[::2] == (True, ())


def test_check_pack_fails_a_reply_replaced_by_the_fallback_unless_the_file_expects_it(tmp_path: Path) -> None:
    """With the template realizer every generated reply is the pack's own text: one that a screen holds is
    a broken text, named with the screens it failed, unless the turn's `expected_fallback` is true."""
    desk = _starter(tmp_path)
    assert _only(desk, "scripted turns")[0] is True
    confirm = 'template_text = "I noted your request for {program_display}."'
    edit_domain(desk, confirm, 'template_text = "I noted your request for {program_display}, ready in 3 days."')
    passed, detail, findings = _only(desk, "scripted turns")
    assert passed is False and detail.endswith("; replaced by the fallback: S1/2, S1/3, S3/1, S3/2")
    assert len(findings) == 4
    assert findings[0].startswith("S1/2: the confirm reply was replaced by the fixed fallback (screens fired: ")
    assert findings[0].endswith("its text fails them: 'I noted your request for Service A, ready in 3 days.'")

    turns = desk / "scripted_turns.csv"
    rows = list(csv.DictReader(turns.open(encoding="utf-8")))
    for row in rows:
        row["expected_fallback"] = "true" if row["expected_action"] == "confirm" else ""
    rows[3]["expected_fallback"] = "false"  # S1/4, an inform, stays shown
    _write_rows(turns, rows)
    passed, detail, findings = _only(desk, "scripted turns")
    assert (passed, findings) == (True, ())
    assert "7 generated, 4 replaced by the fallback (as expected_fallback says)" in detail

    rows[3]["expected_fallback"] = "true"
    _write_rows(turns, rows)
    passed, detail, findings = _only(desk, "scripted turns")
    assert (passed, findings) == (False, ("S1/4: expected_fallback is true, but the inform reply was shown",))
    assert detail.endswith("; shown, though expected_fallback is true: S1/4")


def _write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _weekend_desk(tmp_path: Path) -> Path:
    """The starter with a second slot, `visit_day`, whose value is `weekend`."""
    desk = _starter(tmp_path)
    edit_domain(
        desk,
        'label = "Service"\n',
        'label = "Service"\n\n[[frame.slots]]\nname = "visit_day"\nvalues = ["weekend", "unknown"]\n'
        'why_kept = "when the resident means to come"\nlabel = "Visit day"\n',
    )
    return desk


def test_a_slot_value_only_devstacks_simulation_uses_passes_the_domain_word_check(tmp_path: Path) -> None:
    """devstack/month.py's simulated residents come at the weekend; a desk may still offer `weekend`."""
    assert find_words(word_pattern({"weekend"}), [ROOT / "devstack" / "month.py"], ROOT)
    desk = _weekend_desk(tmp_path)
    assert "weekend" in load_pack(desk).frame.slot("visit_day").values
    assert _only(desk, "domain words") == (
        True, "no shared code names this desk; no file names any of 3 other desks", ()
    )  # fmt: skip


def test_the_domain_word_check_reads_the_codes_identifiers_and_strings_not_its_comments(tmp_path: Path) -> None:
    root = tmp_path / "repository"
    (root / "layers").mkdir(parents=True)
    (root / "devstack").mkdir()
    (root / "layers" / "core.py").write_text(
        '"""The weekend docstring."""\n'
        "# a comment about the weekend\n"
        "def opening(weekend: bool) -> str:\n"
        '    """Closed at the weekend."""\n'
        '    return "closed" if weekend else "open"\n'
        "MESSAGE = f\"We are shut at the {'weekend'}.\"\n"
        "WEEKEND_HOURS = None\n",
        encoding="utf-8",
    )
    (root / "layers" / "Makefile").write_text("# the weekend build\nweekend:\n\techo\n", encoding="utf-8")
    (root / "devstack" / "month.py").write_text("weekend = True\n", encoding="utf-8")
    passed, detail, findings = _only(_weekend_desk(tmp_path), "domain words", root)
    assert passed is False
    assert findings == tuple(
        f"code names this desk: {where}: 'weekend'"
        for where in ("layers/Makefile:2", "layers/core.py:3", "layers/core.py:5", "layers/core.py:6")
    )
    assert detail == f"{findings[0]} and 3 more (each listed below)"
