"""`make test` runs the Lambda code's tiers (unit, integration, fuzz) on Python 3.12, the functions'
runtime, in .venv-lambda, and the engines, deploy and browser tiers on the dev venv (3.11, where vLLM's
CPU wheels are): each tier once, its runs side by side, and a failure in any run fails make test without
stopping the others."""

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
STAMPS = ("STAMP", "LAMBDA_STAMP", "OPS_STAMP", "DEPLOY_STAMP", "CHECKOV_STAMP")
PYTEST_RUNS = "test-unit-integration test-engines test-fuzz test-deploy-browser"


def make(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)


def built(folder: Path, *overrides: str) -> list[str]:
    """make's variables that take the venvs as built: each stamp a fresh file, newer than what it is made
    from. (make's -o is not passed down to make test's own make; variables given on the command line are.)
    A stamp named in `overrides` is left out."""
    stamp = folder / "stamp"
    stamp.touch()
    return [f"{name}={stamp}" for name in STAMPS if not any(o.startswith(f"{name}=") for o in overrides)]


def dry_run(folder: Path, *arguments: str) -> str:
    """What make would run (-n runs nothing), the venvs taken as built; continuation lines joined."""
    result = make("-n", "-s", *arguments, *built(folder, *arguments))
    assert result.returncode == 0, result.stderr
    return result.stdout.replace("\\\n", " ")


def pytest_runs(planned: str) -> list[tuple[str, set[str]]]:
    """Each `PYTHON -m pytest PATHS` in the plan: the interpreter and the paths it is given."""
    runs = re.findall(r"(\S+) -m pytest((?: tests/\w+)+)", planned)
    return [(python, set(paths.split())) for python, paths in runs]


def tier_folders() -> set[str]:
    return {f"tests/{path.name}" for path in (ROOT / "tests").iterdir() if any(path.glob("test_*.py"))}


def test_make_test_runs_each_tier_once_lambda_tiers_in_the_312_venv(tmp_path: Path) -> None:
    planned = dry_run(tmp_path, "test")
    runs = pytest_runs(planned)
    # unit and integration on xdist's workers; fuzz in one process (one shared server); the engines in one
    # process (one tiny Qwen2, one vLLM run); deploy and browser on xdist's workers; side by side, so in
    # any order
    assert sorted(runs, key=lambda run: sorted(run[1])) == [
        (DEV_PYTHON, {"tests/deploy", "tests/browser"}),
        (DEV_PYTHON, {"tests/engines"}),
        (LAMBDA_PYTHON, {"tests/fuzz"}),
        (LAMBDA_PYTHON, {"tests/unit", "tests/integration"}),
    ], runs
    lambda_paths = set().union(*(paths for python, paths in runs if python == LAMBDA_PYTHON))
    dev_paths = set().union(*(paths for python, paths in runs if python == DEV_PYTHON))
    assert (lambda_paths, dev_paths) == (LAMBDA_TIERS, DEV_TIERS)
    assert sum(len(paths) for _, paths in runs) == len(lambda_paths | dev_paths), "a tier run twice"
    assert lambda_paths | dev_paths == tier_folders(), "a tier that make test does not run"
    options = re.findall(r"-m pytest((?: tests/\w+)+)([^\n]*)", planned)
    assert len(options) == len(runs)
    for paths, rest in options:
        assert ("-n auto" in rest) == (paths.split() not in (["tests/fuzz"], ["tests/engines"])), (paths, rest)
        assert '-m "not slow"' in rest, (paths, rest)


def test_make_test_also_lints_and_checks_the_template(tmp_path: Path) -> None:
    planned = dry_run(tmp_path, "test")
    for check in ("ruff check .", "lint-imports", "mypy ", "hadolint ", "checkov --file template.yaml", "sam validate"):
        assert check in planned, check


def test_make_test_runs_every_benchmark_once_at_its_smallest_size(tmp_path: Path) -> None:
    """bench.run_all --smallest (each of P1-P8 once, BENCH_SMALLEST=1) on the dev venv, where the engines are."""
    planned = dry_run(tmp_path, "test")
    assert re.findall(r"(\S+) -m bench\.run_all([^\n]*)", planned) == [(DEV_PYTHON, " --smallest")]


def test_a_benchmark_that_breaks_fails_make_test(tmp_path: Path) -> None:
    log = tmp_path / "ran"
    (tmp_path / "bin").mkdir()
    fake_python(tmp_path / "bin" / "python", 3, log)
    result = make("-s", "test", f"BIN={tmp_path / 'bin'}", "TEST_RUNS=test-bench", *built(tmp_path))
    assert log.read_text().split() == [str(tmp_path / "bin" / "python"), "-m", "bench.run_all", "--smallest"]
    assert result.returncode != 0
    assert re.search(r"\[Makefile:\d+: test-bench\] Error 3", result.stderr), result.stderr


@pytest.mark.parametrize("target", ["unit", "integration", "fuzz"])
def test_the_lambda_tier_targets_run_in_the_312_venv(tmp_path: Path, target: str) -> None:
    assert pytest_runs(dry_run(tmp_path, target)) == [(LAMBDA_PYTHON, {f"tests/{target}"})]


@pytest.mark.parametrize("target", ["test", "unit", "integration", "fuzz"])
def test_the_lambda_venv_is_built_with_python_312(tmp_path: Path, target: str) -> None:
    planned = dry_run(tmp_path, target, f"LAMBDA_STAMP={tmp_path / 'not-yet-built'}")
    (build,) = [line for line in planned.splitlines() if "-m venv .venv-lambda" in line]
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
    ("lambda_status", "dev_status", "errors"),
    [(0, 0, set()), (1, 0, {1}), (0, 1, {1}), (5, 0, {5}), (1, 2, {1, 2})],
)
def test_a_failing_run_fails_make_test_and_does_not_stop_the_others(
    tmp_path: Path, lambda_status: int, dev_status: int, errors: set[int]
) -> None:
    """make test's pytest runs with stand-ins for both pythons (the venvs taken as built; lint and the
    template checks, which call no python, left out): every run runs, and each failure is named with its
    run and status."""
    log = tmp_path / "ran"
    (tmp_path / "bin").mkdir()
    fake_python(tmp_path / "lambda-python", lambda_status, log)
    fake_python(tmp_path / "bin" / "python", dev_status, log)
    stand_ins = [
        f"LAMBDA_PYTHON={tmp_path / 'lambda-python'}", f"BIN={tmp_path / 'bin'}", "CHROMIUM=/bin/sh",
        f"TEST_RUNS={PYTEST_RUNS}", *built(tmp_path),
    ]  # fmt: skip
    result = make("-s", "test", *stand_ins)
    ran = log.read_text().splitlines()
    lambda_python, dev_python = str(tmp_path / "lambda-python"), str(tmp_path / "bin" / "python")
    assert sorted(line.split()[0] for line in ran) == sorted([lambda_python] * 2 + [dev_python] * 2)
    assert (result.returncode == 0) == (not errors), result.stderr
    failed = dict(re.findall(r"\[Makefile:\d+: (test-[\w-]+)\] Error (\d+)", result.stderr))
    lambda_runs = {"test-unit-integration", "test-fuzz"}
    expected = {run: str(lambda_status if run in lambda_runs else dev_status) for run in PYTEST_RUNS.split()}
    assert failed == {run: status for run, status in expected.items() if status != "0"}, result.stderr
    if errors:
        assert "make test failed" in result.stderr
