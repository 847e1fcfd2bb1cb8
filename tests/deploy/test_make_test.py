"""`make test` runs the Lambda code's tiers (unit, integration, fuzz) on Python 3.12, the functions'
runtime, in .venv-lambda, and the engines, deploy and browser tiers on the dev venv (3.11, where vLLM's
CPU wheels are): each tier once, and a failure in either run fails make test."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAMBDA_PYTHON = ".venv-lambda/bin/python"
DEV_PYTHON = ".venv/bin/python"
LAMBDA_TIERS = {"tests/unit", "tests/integration", "tests/fuzz"}
DEV_TIERS = {"tests/engines", "tests/deploy", "tests/browser"}
STAMPS = (".venv/.installed", ".venv-lambda/.installed", ".venv-ops/.installed")


def make(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)


def dry_run(*arguments: str) -> str:
    """What make would run (-n runs nothing), the venvs taken as built; continuation lines joined."""
    skip = [option for stamp in STAMPS for option in ("-o", stamp)]
    result = make("-n", "-s", *skip, *arguments)
    assert result.returncode == 0, result.stderr
    return result.stdout.replace("\\\n", " ")


def pytest_runs(planned: str) -> list[tuple[str, set[str]]]:
    """Each `PYTHON -m pytest PATHS` in the plan: the interpreter and the paths it is given."""
    runs = re.findall(r"(\S+) -m pytest((?: tests/\w+)+)", planned)
    return [(python, set(paths.split())) for python, paths in runs]


def tier_folders() -> set[str]:
    return {f"tests/{path.name}" for path in (ROOT / "tests").iterdir() if any(path.glob("test_*.py"))}


def test_make_test_runs_each_tier_once_lambda_tiers_in_the_312_venv() -> None:
    runs = pytest_runs(dry_run("test"))
    # unit and integration on xdist's workers; fuzz in one process (one shared server); the engines in one
    # process (one tiny Qwen2, one vLLM run); deploy and browser on xdist's workers
    assert runs == [
        (LAMBDA_PYTHON, {"tests/unit", "tests/integration"}),
        (LAMBDA_PYTHON, {"tests/fuzz"}),
        (DEV_PYTHON, {"tests/engines"}),
        (DEV_PYTHON, {"tests/deploy", "tests/browser"}),
    ], runs
    lambda_paths = set().union(*(paths for python, paths in runs if python == LAMBDA_PYTHON))
    dev_paths = set().union(*(paths for python, paths in runs if python == DEV_PYTHON))
    assert (lambda_paths, dev_paths) == (LAMBDA_TIERS, DEV_TIERS)
    assert sum(len(paths) for _, paths in runs) == len(lambda_paths | dev_paths), "a tier run twice"
    assert lambda_paths | dev_paths == tier_folders(), "a tier that make test does not run"
    options = re.findall(r"-m pytest((?: tests/\w+)+)([^;]*)", dry_run("test"))
    assert len(options) == len(runs)
    for paths, rest in options:
        assert ("-n auto" in rest) == (paths.split() not in (["tests/fuzz"], ["tests/engines"])), (paths, rest)
        assert '-m "not slow"' in rest, (paths, rest)


@pytest.mark.parametrize("target", ["unit", "integration", "fuzz"])
def test_the_lambda_tier_targets_run_in_the_312_venv(target: str) -> None:
    assert pytest_runs(dry_run(target)) == [(LAMBDA_PYTHON, {f"tests/{target}"})]


@pytest.mark.parametrize("target", ["test", "unit", "integration", "fuzz"])
def test_the_lambda_venv_is_built_with_python_312(target: str) -> None:
    others = ["-o", ".venv/.installed", "-o", ".venv-ops/.installed"]
    result = make("-n", "-s", "-W", "requirements-test.txt", *others, target)
    assert result.returncode == 0, result.stderr
    (build,) = [line for line in result.stdout.splitlines() if "-m venv .venv-lambda" in line]
    assert re.match(r"\S*python3\.12 -m venv \.venv-lambda$", build), build


def test_the_lambda_venv_is_312() -> None:
    python = ROOT / LAMBDA_PYTHON
    if not (ROOT / ".venv-lambda" / ".installed").exists():
        if os.environ.get("CI"):
            pytest.fail("the Python 3.12 test venv is not built: `make test` builds .venv-lambda")
        pytest.skip("the Python 3.12 test venv is not built (make lambda-venv)")
    result = subprocess.run(
        [str(python), "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["3", "12"]


def fake_python(path: Path, status: int, log: Path) -> None:
    path.write_text(f'#!/bin/sh\necho "$0 $*" >> {log}\nexit {status}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize(
    ("lambda_status", "dev_status", "expected"),
    [(0, 0, 0), (1, 0, 1), (0, 1, 1), (5, 0, 5), (1, 2, 1)],
)
def test_a_failing_run_fails_make_test_and_does_not_stop_the_other(
    tmp_path: Path, lambda_status: int, dev_status: int, expected: int
) -> None:
    """make test's recipe run with stand-ins for both pythons (its prerequisites taken as made)."""
    log = tmp_path / "ran"
    (tmp_path / "bin").mkdir()
    fake_python(tmp_path / "lambda-python", lambda_status, log)
    fake_python(tmp_path / "bin" / "python", dev_status, log)
    skip = [option for target in (*STAMPS, "lint", "template-checks", "/usr/bin/chromium") for option in ("-o", target)]
    stand_ins = [f"LAMBDA_PYTHON={tmp_path / 'lambda-python'}", f"BIN={tmp_path / 'bin'}", "CHROMIUM=/usr/bin/chromium"]
    result = make("-s", *skip, "test", *stand_ins)
    ran = log.read_text().splitlines()
    lambda_python, dev_python = str(tmp_path / "lambda-python"), str(tmp_path / "bin" / "python")
    assert [line.split()[0] for line in ran] == [lambda_python, lambda_python, dev_python, dev_python]
    assert (result.returncode == 0) == (expected == 0), result.stderr
    if expected:
        assert f"Error {expected}" in result.stderr
