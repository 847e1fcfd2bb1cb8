"""Debian's Chromium under Playwright, for the browser tests and the screenshots: no browser download.

The flags keep Chromium from reaching out to Google's services (this machine's network is closed, and
a test has no use for them) and let it run as root in a container.
"""

from __future__ import annotations

import os
from typing import Any

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def launch(playwright: Any) -> Any:
    """A headless Chromium browser from CHROMIUM (default /usr/bin/chromium)."""
    if not os.access(CHROMIUM, os.X_OK):
        raise RuntimeError(f"no Chromium at {CHROMIUM}: install Debian's chromium package or set CHROMIUM")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=list(FLAGS), headless=True)
