"""A `devstack serve` subprocess on 127.0.0.1 with a free port, for the fuzz tests."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from fuzzing import Budget, ConversationPool

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


@pytest.fixture(scope="session")
def fuzz_session() -> Iterator[requests.Session]:
    with requests.Session() as session:
        yield session


@pytest.fixture(scope="session")
def budget(fuzz_summary: list[str]) -> Iterator[Budget]:
    """The turn API's fuzzing: FUZZ_REQUESTS requests (default 3,000) in FUZZ_SECONDS (default 600). At
    make test's size (FUZZ_EXAMPLES' default) the examples run out first, at about 1,100 requests."""
    yield from _summarized(
        Budget(int(os.environ.get("FUZZ_REQUESTS", "3000")), float(os.environ.get("FUZZ_SECONDS", "600"))),
        fuzz_summary,
        "turn API",
    )


@pytest.fixture(scope="session")
def staff_budget(fuzz_summary: list[str]) -> Iterator[Budget]:
    """The staff API's: STAFF_FUZZ_REQUESTS (default 1,500) in STAFF_FUZZ_SECONDS (default 600); at make test's
    size the examples run out first, at about 930 requests."""
    yield from _summarized(
        Budget(int(os.environ.get("STAFF_FUZZ_REQUESTS", "1500")), float(os.environ.get("STAFF_FUZZ_SECONDS", "600"))),
        fuzz_summary,
        "staff API",
    )


def _summarized(counted: Budget, fuzz_summary: list[str], api: str) -> Iterator[Budget]:
    yield counted
    if counted.sent:
        seconds = counted.last - counted.started
        routes = ", ".join(f"{route}: {n}" for route, n in sorted(counted.by_route.items()))
        statuses = ", ".join(f"{status}: {n}" for status, n in sorted(counted.statuses.items()))
        fuzz_summary.append(
            f"{api}: {counted.sent} requests in {seconds:.0f} s ({counted.skipped} cases past the budget, not sent)"
        )
        fuzz_summary.append(f"by route: {routes}")
        fuzz_summary.append(f"by status: {statuses}")


@pytest.fixture(scope="session")
def pool(served_api: Any, fuzz_session: requests.Session, budget: Budget) -> ConversationPool:
    return ConversationPool(served_api.url, fuzz_session, budget)


# Lines the fuzz tests leave for the end of the run: how many requests, by route and by status.
SUMMARY: list[str] = []


@pytest.fixture(scope="session")
def fuzz_summary() -> list[str]:
    return SUMMARY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in SUMMARY:
        terminalreporter.write_line(f"fuzz: {line}")
