"""The operator tools run from their own small Python 3.12 venv (.venv-ops, requirements-ops.txt), not the
dev venv with torch, vLLM, moto and Playwright: what the deploy guide asks of an operator is Python 3.12.

Three checks: every module the tools import, followed through the project's own modules, is the
standard library's, the project's or a distribution requirements-ops.txt names; each operator make
target runs .venv-ops's python and does not build .venv; and, where .venv-ops is built (always in CI),
each tool answers --help from it and every module it can import, imports there.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "Makefile"
OPS_REQUIREMENTS = ROOT / "requirements-ops.txt"
OPS_VENV = ROOT / ".venv-ops"
OPS_PYTHON = ".venv-ops/bin/python"
OPS_STAMP = ".venv-ops/.installed"
DEV_STAMP = ".venv/.installed"

# The operator make targets, with the variables each needs to reach its command.
OPS_TARGETS = {
    "preflight": (),
    "verify-audit": ("STACK=enrollment-desk",),
    "rotate-origin-secret": ("STACK=enrollment-desk",),
    "smoke": ("STACK=enrollment-desk",),
    "teardown": ("STACK=enrollment-desk",),
    "publish-pages": ("STACK=enrollment-desk",),
    "pin-base-image": (),
    "push-image": ("STACK=enrollment-desk",),
    "ops-tools": (),
}
# The files those targets run, and every `python -m ops` command (docs/DEPLOY.md runs them by hand).
ENTRY_POINTS = tuple(
    ROOT / path
    for path in (
        "ops/__main__.py",
        "ops/preflight.py",
        "ops/verify_audit.py",
        "ops/rotate_origin_secret.py",
        "ops/smoke.py",
        "ops/teardown.py",
        "realizer_container/image.py",
        "web/publish.py",
    )
)
# Each tool's --help, run from .venv-ops: the targets' commands up to their first option, and the rest.
HELP_COMMANDS = (
    ("-m", "ops"),
    ("-m", "ops", "preflight"),
    ("-m", "ops", "verify-audit"),
    ("-m", "ops", "rotate-origin-secret"),
    ("-m", "ops", "smoke"),
    ("-m", "ops", "teardown"),
    ("-m", "ops.smoke"),
    ("-m", "ops.teardown"),
    ("-m", "ops.preflight"),
    ("realizer_container/image.py",),
    ("realizer_container/image.py", "pin"),
    ("realizer_container/image.py", "push"),
    ("web/publish.py",),
)

# Imports each module named on its command line, then prints the interpreter's version.
IMPORT_PROBE = """
import importlib, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(sys.version_info[:2])
"""

# Distributions whose import name is not their project name made lower-case with `_` for `-`.
IMPORT_NAMES = {"pyyaml": {"yaml", "_yaml"}, "pyjwt": {"jwt"}}


# --- The imports, followed through the project's own modules ----------------------------------------


@cache
def import_roots() -> tuple[Path, ...]:
    """The folders the editable install puts on sys.path (pyproject.toml's dev-mode-dirs), as in AWS."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return tuple((ROOT / folder).resolve() for folder in pyproject["tool"]["hatch"]["build"]["dev-mode-dirs"])


def project_file(module: str) -> Path | None:
    """The project's file for a dotted module name, or None if it is not the project's."""
    parts = module.split(".")
    for root in import_roots():
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def module_name(path: Path) -> str:
    """The dotted name a project file is imported under (from the deepest import root holding it; a
    script outside them, its own name)."""
    roots = [root for root in import_roots() if path.resolve().is_relative_to(root)]
    if not roots:
        return path.stem
    root = max(roots, key=lambda r: len(r.parts))
    path = path.resolve()
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _guards_import_error(node: ast.Try) -> bool:
    names: list[ast.expr] = []
    for handler in node.handlers:
        if isinstance(handler.type, ast.Tuple):
            names += handler.type.elts
        elif handler.type is not None:
            names.append(handler.type)
    return any(isinstance(name, ast.Name) and name.id in {"ImportError", "ModuleNotFoundError"} for name in names)


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import that runs, at any depth (inside functions too); not those under `if TYPE_CHECKING:`
    nor those in a `try` that catches ImportError (optional imports)."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
        return
    if isinstance(node, ast.If) and _is_type_checking(node):
        children: list[ast.AST] = list(node.orelse)
    elif isinstance(node, ast.Try) and _guards_import_error(node):
        children = [*node.handlers, *node.orelse, *node.finalbody]
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _import_nodes(child)


def imported_modules(path: Path) -> set[str]:
    """The dotted names one file imports (`from a import b` gives a, and a.b in case b is a module)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    names: set[str] = set()
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1] if package else []
            base = ".".join([*anchor, *([base] if base else [])])
        names.add(base)
        names.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names if alias.name != "*")
    return {name for name in names if name}


def closure(entry_points: list[Path]) -> tuple[set[str], set[str]]:
    """The project's modules the entry points reach (with their packages' __init__) and the top-level
    names of every other module they import."""
    project: set[str] = set()
    outside: set[str] = set()
    todo = list(entry_points)
    seen: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in imported_modules(path):
            parts = name.split(".")
            top = parts[0]
            if project_file(top) is None:
                outside.add(top)
                continue
            # Importing a.b.c runs a/__init__.py and a/b/__init__.py first.
            for depth in range(1, len(parts) + 1):
                found = project_file(".".join(parts[:depth]))
                if found is not None:
                    project.add(module_name(found))
                    todo.append(found)
    return project, outside


def third_party(names: set[str]) -> set[str]:
    return {name for name in names if name not in sys.stdlib_module_names}


# --- requirements-ops.txt ----------------------------------------------------------------------------


def requirement_lines(path: Path) -> Iterator[str]:
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("-r"):
            yield from requirement_lines(path.parent / line[2:].strip())
        elif line:
            yield line


def distribution(line: str) -> str:
    name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line)
    assert name, line
    return re.sub(r"[-_.]+", "-", name.group(0)).lower()


def ops_distributions() -> set[str]:
    return {distribution(line) for line in requirement_lines(OPS_REQUIREMENTS)}


def provided_modules(distributions: set[str]) -> set[str]:
    """The top-level modules those distributions provide: their installed files where this interpreter
    has them, else the usual spelling of the name."""
    modules: set[str] = set()
    for module, owners in importlib.metadata.packages_distributions().items():
        if any(distribution(owner) in distributions for owner in owners):
            modules.add(module)
    for name in distributions:
        modules.add(name.replace("-", "_"))
        modules |= IMPORT_NAMES.get(name, set())
    return modules


def test_requirements_ops_pins_every_line() -> None:
    lines = list(requirement_lines(OPS_REQUIREMENTS))
    assert lines
    for line in lines:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[\w,-]+\])?==[\w.]+", line), f"not pinned: {line}"


def test_requirement_files_agree_on_shared_pins() -> None:
    """A distribution pinned in two requirements files is pinned to one release."""
    pins: dict[str, dict[str, str]] = {}
    for path in [*sorted(ROOT.glob("requirements-*.txt")), ROOT / "layers" / "dialogue" / "requirements.txt"]:
        for line in requirement_lines(path):
            if "==" in line:
                pins.setdefault(distribution(line), {})[path.name] = line.split("==", 1)[1]
    split = {name: files for name, files in pins.items() if len(set(files.values())) > 1}
    assert not split, split


# --- The make targets -------------------------------------------------------------------------------


def make_dry_run(target: str, *arguments: str) -> str:
    """What `make TARGET` would run (make -n runs nothing), with every venv's requirements taken as just
    changed (-W), so a venv the target depends on, however indirectly, shows its build."""
    what_if = [f"-W{name}" for name in ("requirements-dev.txt", "requirements-ops.txt", "pyproject.toml")]
    result = subprocess.run(
        ["make", "-n", *what_if, target, *arguments], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    return result.stdout.replace("\\\n", " ")


def tool_commands(target: str, *arguments: str) -> list[list[str]]:
    """The commands a target runs with the ops venv's python, from `make -n` with the venv taken as built."""
    result = subprocess.run(
        ["make", "-s", "-n", "-o", OPS_STAMP, target, *arguments],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    lines = result.stdout.replace("\\\n", " ").splitlines()
    return [shlex.split(line) for line in lines if line.startswith(OPS_PYTHON + " ")]


@pytest.mark.parametrize("target", sorted(OPS_TARGETS))
def test_ops_target_uses_the_ops_venv_and_not_the_dev_venv(target: str) -> None:
    planned = make_dry_run(target, *OPS_TARGETS[target])
    assert f"-m venv {OPS_VENV.name}" in planned, f"make {target} does not build .venv-ops"
    assert "-r requirements-ops.txt" in planned
    assert "requirements-dev.txt" not in planned, f"make {target} builds the dev venv"
    assert DEV_STAMP not in planned, f"make {target} builds the dev venv"
    assert not re.search(r"(^|[\s/])\.venv/", planned), f"make {target} runs something from .venv"
    if target != "ops-tools":
        assert tool_commands(target, *OPS_TARGETS[target]), f"make {target} runs no {OPS_PYTHON}"


def test_make_smoke_require_model_asks_the_smoke_for_a_worded_reply() -> None:
    """make smoke REQUIRE_MODEL=1 fails on the fixed fallback (ops.smoke --require-model); without it the
    smoke only reports which kind of reply came."""
    (required,) = tool_commands("smoke", "STACK=enrollment-desk", "REQUIRE_MODEL=1")
    assert required == [OPS_PYTHON, "-m", "ops.smoke", "--stack", "enrollment-desk", "--require-model"]
    (on_api,) = tool_commands("smoke", "API_URL=http://127.0.0.1:3000", "REQUIRE_MODEL=1")
    assert on_api[-1] == "--require-model"
    (plain,) = tool_commands("smoke", "STACK=enrollment-desk")
    assert "--require-model" not in plain


def test_ops_venv_is_python_312() -> None:
    planned = make_dry_run("ops-tools")
    (build,) = [line for line in planned.splitlines() if f"-m venv {OPS_VENV.name}" in line]
    assert re.search(r"python3\.12 -m venv", build), build


def test_the_makefile_has_every_ops_target() -> None:
    targets = set(re.findall(r"^([a-z][a-z0-9-]*):", MAKEFILE.read_text(), flags=re.MULTILINE))
    assert set(OPS_TARGETS) <= targets, set(OPS_TARGETS) - targets


# --- The tools' imports -----------------------------------------------------------------------------


def entry_point(command: list[str]) -> Path:
    """The file `python -m MODULE ...` or `python SCRIPT ...` runs."""
    if command[1] == "-m":
        module = command[2]
        found = project_file(f"{module}.__main__") or project_file(module)
        assert found is not None, module
        return found
    return ROOT / command[1]


def test_the_targets_run_only_the_listed_tools() -> None:
    commands = [command for target in sorted(OPS_TARGETS) for command in tool_commands(target, *OPS_TARGETS[target])]
    assert {entry_point(command) for command in commands} <= set(ENTRY_POINTS)
    for command in commands:
        options = [i for i, word in enumerate(command) if word.startswith("--")]
        assert tuple(command[1 : options[0] if options else len(command)]) in HELP_COMMANDS, command


@pytest.mark.parametrize("path", ENTRY_POINTS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_module_a_tool_imports_is_in_requirements_ops(path: Path) -> None:
    project, outside = closure([path])
    missing = third_party(outside) - provided_modules(ops_distributions())
    assert not missing, (
        f"{path.relative_to(ROOT)} imports {sorted(missing)} (through {sorted(project)}), "
        "which requirements-ops.txt does not install"
    )


def test_the_walk_follows_the_projects_modules() -> None:
    """A sanity check of the walk itself: smoke reaches the layer and the turn API's models."""
    project, outside = closure([ROOT / "ops" / "smoke.py"])
    assert {"ops.aws", "api_models", "dialogue", "dialogue.pack"} <= project
    assert {"pydantic", "boto3"} <= outside


def test_a_new_import_of_a_dev_package_fails_the_check(tmp_path: Path) -> None:
    """What the check exists for: a tool that starts importing moto (or reaches it through the project)."""
    tool = tmp_path / "tool.py"
    tool.write_text("from ops import smoke\n\ndef main() -> None:\n    import moto\n")
    _, outside = closure([tool])
    assert third_party(outside) - provided_modules(ops_distributions()) == {"moto"}


# --- The tools in .venv-ops -------------------------------------------------------------------------


def ops_python() -> Path:
    python = OPS_VENV / "bin" / "python"
    if not (OPS_VENV / ".installed").exists():
        if os.environ.get("CI"):
            pytest.fail("the operator tools' venv is not built: `make ops-tools` (and `make test`) build .venv-ops")
        pytest.skip("the operator tools' venv is not built (make ops-tools)")
    return python


def clean_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = f"{OPS_VENV / 'bin'}:{env.get('PATH', '')}"
    return env


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=" ".join)
def test_each_tool_answers_help_in_the_ops_venv(command: tuple[str, ...]) -> None:
    python = ops_python()
    result = subprocess.run(
        [str(python), *command, "--help"], cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "usage" in (result.stdout + result.stderr).lower() or "python -m ops" in result.stdout


def test_ops_venv_is_312_and_imports_everything_the_tools_reach() -> None:
    python = ops_python()
    project, outside = closure(list(ENTRY_POINTS))
    modules = sorted(project | third_party(outside))
    result = subprocess.run(
        [str(python), "-c", IMPORT_PROBE, *modules], cwd=ROOT, env=clean_env(), capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "(3, 12)"
