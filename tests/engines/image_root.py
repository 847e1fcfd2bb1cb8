"""The realizer image's root, on this machine: its ENV over fresh folders, and what was written where.

The task runs the image with a read-only root filesystem and one tmpfs at /tmp. The Dockerfile's ENV is
the one list of where things may write (tests/dockerfile_support.py reads it): here every value under
/tmp moves under a fresh folder T, HOME is an empty folder H outside T, the working directory an empty
folder W, and HF_HOME a hub cache holding the weights where the image bakes them.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dockerfile_support import WRITABLE_MOUNT, dockerfile_env, writable_paths

from realizer.engines import VLLM_ENV_DEFAULTS

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ImageRoot:
    """The folders a run in the image's environment had: T (the image's /tmp), H, W and HF_HOME, with
    HF_HOME's files as baked before the run."""

    tmp: Path
    home: Path
    work: Path
    hf_home: Path
    baked: dict[str, tuple[int, int]]


def image_environment(tmp: Path, home: Path, hf_home: Path) -> dict[str, str]:
    """The image's ENV with /tmp moved to `tmp`, plus what this machine needs to run the realizer's code."""
    image = {name: value for name, value in dockerfile_env().items() if "$" not in value}  # build-time values out
    moved = {name: str(tmp / Path(value).relative_to(WRITABLE_MOUNT)) for name, value in writable_paths(image).items()}
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),  # nothing else of this machine's environment
        **image,
        **moved,
        **VLLM_ENV_DEFAULTS,
        "HOME": str(home),  # off T: anything that writes to ~ instead of its variable shows up in H
        "HF_HOME": str(hf_home),
        "PYTHONPATH": os.pathsep.join(str(ROOT / part) for part in ("realizer_container", "layers/dialogue")),
        "TOKENIZERS_PARALLELISM": "false",
    }


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under `root`: relative path -> (size, modification time)."""
    return {str(path.relative_to(root)): (path.lstat().st_size, path.lstat().st_mtime_ns) for path in root.rglob("*")}


@contextmanager
def read_only(*folders: Path) -> Iterator[None]:
    """Folders without write permission (enforced when the tests do not run as root), restored after."""
    everything = [path for folder in folders for path in (folder, *folder.rglob("*")) if not path.is_symlink()]
    modes = {path: path.stat().st_mode for path in everything}
    for path in everything:
        path.chmod(modes[path] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield
    finally:
        for path in reversed(everything):
            path.chmod(modes[path])


def summary(root: Path) -> list[str]:
    """Bytes and files per folder two levels under `root`, largest first, and the total."""
    sizes: dict[str, list[int]] = {}
    for path in root.rglob("*"):
        if path.is_file() or path.is_socket():
            key = "/".join(path.relative_to(root).parts[:2]) if len(path.relative_to(root).parts) > 1 else "."
            entry = sizes.setdefault(key, [0, 0])
            entry[0] += path.lstat().st_size
            entry[1] += 1
    lines = [f"{size / 2**20:9.2f} MiB {count:5d} files  {key}" for key, (size, count) in
             sorted(sizes.items(), key=lambda item: -item[1][0])]  # fmt: skip
    total = sum(size for size, _ in sizes.values())
    return [*lines, f"{total / 2**20:9.2f} MiB {sum(count for _, count in sizes.values()):5d} files  in all"]
