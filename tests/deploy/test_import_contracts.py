"""The import contracts `make lint` checks (pyproject.toml's [tool.importlinter]) hold on the layer as it
is, and break on a copy of it with a deliberate breach: a core module that reads an adapter, and one that
imports botocore."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "dialogue" / "dialogue"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(layer_parent: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if layer_parent is not None:  # the copy comes before the editable install on sys.path
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(layer_parent), env.get("PYTHONPATH"))))
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_contracts_hold() -> None:
    done = lint_imports()
    assert done.returncode == 0, done.stdout[-3000:]
    assert "4 kept, 0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "breach", "broken"),
    [
        (
            "policy.py",
            "from dialogue.aws.table import TURN_PREFIX",
            "dialogue.policy is not allowed to import dialogue.aws",
        ),
        ("sweep.py", "import botocore", "dialogue is not allowed to import botocore"),
        ("state.py", "import devstack", "dialogue is not allowed to import devstack"),
        ("pack/schema.py", "from dialogue.pack.domain import DomainPack", "No cycles are allowed in dialogue.pack"),
    ],
)
def test_a_breach_breaks_them(tmp_path: Path, module: str, breach: str, broken: str) -> None:
    copy = tmp_path / "dialogue"
    shutil.copytree(LAYER, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / module).open("a", encoding="utf-8") as source:
        source.write(f"\n{breach}  # a deliberate breach\n")
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout[-3000:]
    assert broken in done.stdout
