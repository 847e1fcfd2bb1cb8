"""The dialogue core imports no AWS library: every module of the layer outside dialogue.aws, imported in a
fresh interpreter, leaves boto3, botocore and Powertools unimported (the import contracts in pyproject.toml
check the same statically, in `make lint`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dialogue

LAYER = Path(dialogue.__file__).resolve().parent
AWS_LIBRARIES = ("boto3", "botocore", "aws_lambda_powertools", "aws_xray_sdk")


def _modules(under: Path, package: str) -> list[str]:
    names = []
    for path in sorted(under.rglob("*.py")):
        parts = path.relative_to(under).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join((package, *parts)))
    return names


def _imported_after(modules: list[str]) -> list[str]:
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({AWS_LIBRARIES!r}))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    return list(json.loads(done.stdout))


def test_the_core_imports_no_aws_library() -> None:
    core = [name for name in _modules(LAYER, "dialogue") if not name.startswith("dialogue.aws")]
    assert "dialogue.conversation" in core and "dialogue.ports" in core
    assert _imported_after(core) == []


def test_the_adapters_are_where_the_aws_libraries_come_in() -> None:
    # The check above can see an import: the adapters' store brings in boto3 and botocore.
    assert {"boto3", "botocore"} <= set(_imported_after(["dialogue.aws.stores"]))
