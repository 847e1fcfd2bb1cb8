"""Running a command as the tests do (its output captured as text, never raising on its exit status),
and loading a script that is not a package module (web/publish.py, realizer_container/image.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def run_command(
    args: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: Path = ROOT,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), env=dict(env) if env is not None else None, cwd=cwd, input=stdin, capture_output=True,
        text=True, timeout=timeout, check=False,
    )  # fmt: skip


def run_devstack(
    *args: str, stdin: str | None = None, timeout: float = 180, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m devstack ARGS` from the repository root, as a user runs it."""
    return run_command([sys.executable, "-m", "devstack", *args], timeout=timeout, env=env, stdin=stdin)


def load_script(relative_path: str, name: str) -> ModuleType:
    """A script of the repository loaded as a module under `name`, for its functions."""
    spec = importlib.util.spec_from_file_location(name, ROOT / relative_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
