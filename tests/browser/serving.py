"""A `devstack serve` subprocess for the browser tests, on a free port of 127.0.0.1."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
URL_LINE = re.compile(r"on (http://127\.0\.0\.1:\d+) ")
START_TIMEOUT_S = 60


@dataclass
class Served:
    """A `devstack serve` on a fixed port, which a test may pause (SIGSTOP) and resume."""

    url: str
    port: int
    args: tuple[str, ...]
    process: subprocess.Popen[bytes]
    log: Path

    def pause(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve(tmp_path: Path, *args: str) -> Served:
    port = _free_port()
    log = tmp_path / f"serve-{port}.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "devstack", "serve", "--port", str(port), "--quiet", *args],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    assert process.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    line = b""
    while not line.endswith(b"\n"):
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise AssertionError(f"devstack serve did not start: {log.read_text()[-2000:]}")
        line += process.stdout.read1(1)  # type: ignore[attr-defined]
    match = URL_LINE.search(line.decode())
    assert match, line
    return Served(url=match.group(1), port=port, args=args, process=process, log=log)
