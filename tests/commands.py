"""Running a command as the tests do: its output captured as text, never raising on its exit status."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_command(
    args: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), env=dict(env) if env is not None else None, cwd=cwd, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip
