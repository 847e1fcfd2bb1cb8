"""The realizer's Dockerfile read without Docker: its instructions, its ENV, and which ENV paths lie on the
task's one writable mount (/tmp). tests/deploy and tests/engines both read the image's variables here, so
the Dockerfile stays the only list of them."""

from __future__ import annotations

import shlex
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "realizer_container" / "Dockerfile"
WRITABLE_MOUNT = PurePosixPath("/tmp")


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined and comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue  # a comment inside a continued instruction is dropped too, as Docker does
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, arguments = whole.partition(" ")
        result.append((keyword.upper(), arguments.strip()))
    return result


def image_env(steps: list[tuple[str, str]]) -> dict[str, str]:
    """Every variable the image's ENV instructions set (`ENV NAME=value ...`), the last setting winning."""
    env: dict[str, str] = {}
    for keyword, arguments in steps:
        if keyword != "ENV":
            continue
        for assignment in shlex.split(arguments):
            name, separator, value = assignment.partition("=")
            assert separator, f"ENV {assignment!r}: write ENV NAME=value"
            env[name] = value
    return env


def on_writable_mount(value: str) -> bool:
    path = PurePosixPath(value)
    return path.is_absolute() and (path == WRITABLE_MOUNT or WRITABLE_MOUNT in path.parents)


def writable_paths(env: dict[str, str]) -> dict[str, str]:
    """The image's variables that name a path on the writable /tmp."""
    return {name: value for name, value in env.items() if on_writable_mount(value)}


def dockerfile_env() -> dict[str, str]:
    return image_env(instructions(DOCKERFILE.read_text()))
