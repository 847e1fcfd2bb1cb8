"""Running a command as the tests do (its output captured as text, never raising on its exit status),
and loading a script that is not a package module (web/publish.py, realizer_container/image.py)."""

from __future__ import annotations

import atexit
import importlib.util
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import runpy
import subprocess
import sys
import tempfile
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
    *args: str,
    stdin: str | None = None,
    timeout: float = 180,
    env: Mapping[str, str] | None = None,
    fresh: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`python -m devstack ARGS` from the repository root, as a user runs it: its own process, its own
    environment (this one's, or `env`), its stdin, stdout, stderr and exit status.

    The process is forked from a forkserver that imported the libraries and read the tokenizer once
    (tests/devstack_preload.py), not started afresh: a fresh interpreter spends about five seconds on them,
    and the tests run dozens of commands. `fresh=True` starts a new `python -m devstack` instead."""
    if fresh:
        return run_command([sys.executable, "-m", "devstack", *args], timeout=timeout, env=env, stdin=stdin)
    context = _forkserver()
    with tempfile.TemporaryDirectory(prefix="devstack-run-") as folder:
        streams = [Path(folder) / name for name in ("stdin", "stdout", "stderr")]
        streams[0].write_text(stdin or "", encoding="utf-8")
        for path in streams[1:]:
            path.touch()  # read back even when the process fails before it writes
        command = (list(args), dict(os.environ if env is None else env), [str(path) for path in streams])
        process = context.Process(target=_devstack_in_fork, args=command, daemon=True)
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(["devstack", *args], timeout)
        stdout, stderr = (path.read_text(encoding="utf-8", errors="replace") for path in streams[1:])
    return subprocess.CompletedProcess(["devstack", *args], process.exitcode, stdout, stderr)


def _forkserver() -> multiprocessing.context.ForkServerContext:
    """multiprocessing's forkserver, started once a process with tests/devstack_preload.py imported. Its
    preload is imported from the forkserver's PYTHONPATH (Python 3.12's forkserver does not take this
    process's sys.path), so tests/ goes on it while the forkserver starts."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["devstack_preload"])
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "tests"), saved]))
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
    return context


def _devstack_in_fork(args: list[str], env: dict[str, str], streams: list[str]) -> None:
    """In the forked process: the command's environment, working directory and streams, then devstack's
    __main__ as `python -m` runs it; its exit status is the process's, as after `python -m`."""
    os.environ.clear()
    os.environ.update(env)
    os.chdir(ROOT)
    for fd, (path, flags) in enumerate(zip(streams, (os.O_RDONLY, os.O_WRONLY, os.O_WRONLY), strict=True)):
        opened = os.open(path, flags)  # run_devstack made all three
        os.dup2(opened, fd)
        os.close(opened)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115  # multiprocessing set it to devnull
    sys.argv = ["devstack", *args]
    status: object = 0
    try:
        runpy.run_module("devstack", run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        status = exit_.code
    finally:
        atexit._run_exitfuncs()  # what a finishing interpreter runs (the forked process ends with os._exit)
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
    sys.exit(status)


def load_script(relative_path: str, name: str) -> ModuleType:
    """A script of the repository loaded as a module under `name`, for its functions."""
    spec = importlib.util.spec_from_file_location(name, ROOT / relative_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
