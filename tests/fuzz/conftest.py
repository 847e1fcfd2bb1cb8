"""A `devstack serve` subprocess on 127.0.0.1 with a free port, for the fuzz tests."""

from __future__ import annotations

import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
URL_LINE = re.compile(r"on (http://127\.0\.0\.1:\d+) ")
START_TIMEOUT_S = 60
SERVE = (sys.executable, "-m", "devstack", "serve", "--host", "127.0.0.1", "--port", "0", "--quiet")
STOP_TIMEOUT_S = 20


@dataclass
class ServedApi:
    url: str
    process: subprocess.Popen[bytes]
    stderr_path: Path
    audit_dir: Path

    def stderr_tail(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        """Stop the server (it writes the table's items to the audit folder as it exits)."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.communicate(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.communicate(timeout=STOP_TIMEOUT_S)


def _first_line(process: subprocess.Popen[bytes]) -> str:
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + START_TIMEOUT_S
    buffer = b""
    try:
        while b"\n" not in buffer:
            left = deadline - time.monotonic()
            if left <= 0 or process.poll() is not None:
                raise RuntimeError(f"devstack serve did not start (exit status {process.poll()})")
            if selector.select(timeout=min(left, 1.0)):
                buffer += process.stdout.read1(4096)
    finally:
        selector.close()
    return buffer.decode().splitlines()[0]


@pytest.fixture(scope="session")
def served_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedApi]:
    folder = tmp_path_factory.mktemp("fuzz")
    stderr_path = folder / "serve.stderr"
    audit_dir = folder / "audit"
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [*SERVE, "--audit-dir", str(audit_dir)],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
    try:
        match = URL_LINE.search(_first_line(process))
        assert match, "devstack serve printed no loopback URL"
        served = ServedApi(url=match.group(1), process=process, stderr_path=stderr_path, audit_dir=audit_dir)
        yield served
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.communicate(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate(timeout=STOP_TIMEOUT_S)


# Lines the fuzz tests leave for the end of the run: how many requests, by route and by status.
SUMMARY: list[str] = []


@pytest.fixture(scope="session")
def fuzz_summary() -> list[str]:
    return SUMMARY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in SUMMARY:
        terminalreporter.write_line(f"fuzz: {line}")
