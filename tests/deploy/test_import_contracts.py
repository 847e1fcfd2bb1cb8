"""The import contracts `make lint` checks (pyproject.toml's [tool.importlinter]) hold on the layer as it
is, and break on a copy of it with a deliberate breach: a core module that reads an adapter, one that
imports botocore, and a staff API that reaches past the desk's port.

The import graph takes packages only, so, as `make lint` does, the staff API's module is linked in as a
package of its own on PYTHONPATH."""

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
STAFF_API = ROOT / "functions" / "staff_api" / "staff_api.py"


def lint_imports(
    graph: Path, layer_parent: Path | None = None, staff_api: Path = STAFF_API
) -> subprocess.CompletedProcess[str]:
    """lint-imports as `make lint` runs it, with `staff_api` linked in as a package under `graph`."""
    package = graph / "staff_api"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").symlink_to(staff_api)
    env = dict(os.environ)
    # A copy of the layer comes before the editable install on sys.path.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(layer_parent or ""), str(graph), env.get("PYTHONPATH"))))
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_contracts_hold(tmp_path: Path) -> None:
    done = lint_imports(tmp_path / "graph")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "5 kept, 0 broken" in done.stdout


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
    done = lint_imports(tmp_path / "graph", tmp_path)
    assert done.returncode == 1, done.stdout[-3000:]
    assert broken in done.stdout


def test_a_staff_api_that_reaches_past_the_port_breaks_them(tmp_path: Path) -> None:
    copy = tmp_path / "staff_api.py"
    copy.write_text(
        STAFF_API.read_text() + "\nfrom dialogue.aws.stores import DynamoDeskStore  # a deliberate breach\n"
    )
    done = lint_imports(tmp_path / "graph", staff_api=copy)
    assert done.returncode == 1, done.stdout[-3000:]
    assert "staff_api is not allowed to import dialogue.aws.stores" in done.stdout
