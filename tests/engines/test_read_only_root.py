"""The vLLM engine under the image's read-only root: everything it writes lands on the writable /tmp.

The task runs the image with a read-only root filesystem and one tmpfs at /tmp. The Dockerfile's ENV is
the one list of where things may write (tests/dockerfile_support.py reads it): here every value under
/tmp moves under a fresh folder T, HOME is an empty folder H outside T, the working directory an empty
folder W, and HF_HOME a hub cache holding the weights where the image bakes them (the tiny Qwen2 under
the pinned Qwen id and revision, loaded offline as the image loads them). The engine runs in a
subprocess with torch.compile on, as on a GPU, so the compile caches and their .so kernels are written
and loaded too. Tests run as root, so read-only permissions prove nothing; H and W still empty and
HF_HOME unchanged afterwards do.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from commands import run_command
from dockerfile_support import WRITABLE_MOUNT, dockerfile_env, writable_paths
from tinyqwen_support import ROOT, VLLM_KWARGS, VLLM_SCRIPT, TinyQwen, fake_hub_cache

from realizer.engines import QWEN_MODEL_ID, QWEN_REVISION, VLLM_ENV_DEFAULTS

# torch.compile as the GPU runs it (the CPU tests otherwise run eager), so its caches are exercised.
COMPILED_KWARGS = {**VLLM_KWARGS, "enforce_eager": False}


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


def test_the_vllm_engine_writes_only_where_the_image_env_points(tiny_qwen: TinyQwen, tmp_path: Path) -> None:
    # Given the image's environment over a fresh T, an empty home and working directory, and the weights
    tmp, home, work, hf_home, job = (tmp_path / name for name in ("T", "H", "W", "hf", "job"))
    for folder in (tmp, home, work, job):
        folder.mkdir()
    fake_hub_cache(hf_home / "hub", tiny_qwen.path, QWEN_MODEL_ID, QWEN_REVISION)
    baked = tree(hf_home)
    env = image_environment(tmp, home, hf_home)
    assert (env["TMPDIR"], env["HF_HUB_OFFLINE"]) == (str(tmp), "1")
    request = {
        "model": QWEN_MODEL_ID,
        "revision": QWEN_REVISION,
        "llm_kwargs": COMPILED_KWARGS,
        "penalties": [1.05],
        "jobs": [tiny_qwen.jobs["C1t3"].model_dump(mode="json")],
    }
    (job / "request.json").write_text(json.dumps(request))

    # When the realizer's engine answers a job
    started = time.monotonic()
    with read_only(home, work, hf_home):
        completed = run_command(
            [sys.executable, str(VLLM_SCRIPT), str(job / "request.json"), str(job / "result.json")],
            env=env,
            cwd=work,
            timeout=600,
        )
    seconds = time.monotonic() - started
    assert completed.returncode == 0, completed.stderr[-6000:]

    # Then it replied, from the pinned id and revision under HF_HOME
    result = json.loads((job / "result.json").read_text())
    [answer] = result["by_penalty"]["1.05"]
    assert (result["model_id"], result["revision"]) == (QWEN_MODEL_ID, QWEN_REVISION)
    assert answer["realization"]["text"] and not answer["realization"]["failed"]
    # ... and wrote nothing to the home, the working directory or the weights
    assert sorted(os.listdir(home)) == [], f"written to HOME: {sorted(tree(home))}"
    assert sorted(os.listdir(work)) == [], f"written to the working directory: {sorted(tree(work))}"
    assert tree(hf_home) == baked, "HF_HOME changed"
    # ... but did write where the image points: the compile cache, with kernels loaded from there
    written = sorted(tree(tmp))
    assert any(name.startswith("cache/vllm/torch_compile_cache/") for name in written), written[:20]
    assert any(name.endswith(".so") for name in written), "no compiled kernel under T"
    print(f"\nvLLM subprocess {seconds:.0f}s; written under T (the image's /tmp):", *summary(tmp), sep="\n  ")
