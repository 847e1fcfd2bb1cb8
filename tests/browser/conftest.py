"""`devstack serve` subprocesses and a Chromium browser for the browser tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Playwright, sync_playwright
from serving import Served, serve

from devstack.browser import launch


@pytest.fixture(scope="session")
def playwright_session() -> Iterator[Playwright]:
    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(scope="session")
def browser(playwright_session: Playwright) -> Iterator[Browser]:
    chromium = launch(playwright_session)
    yield chromium
    chromium.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The template realizer: fixed wording, no model."""
    running = serve(tmp_path_factory.mktemp("serve"))
    yield running
    running.stop()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(*args: str) -> Served:
        running = serve(tmp_path, *args)
        started.append(running)
        return running

    yield start
    for running in started:
        running.stop()
