"""`python -m devstack.screenshots DIR` (`make screenshots`): both pages at 1280x800 and 390x844.

A local desk is served on loopback with drafts chosen so the pictures show each kind of message: a
reply shown as drafted, a reply a screen held (the fallback shown), a hand-off answered by staff, and in
the console the hand-off's item view (every ask it holds, what the resident saw) and the held reply's.
"""

from __future__ import annotations

import io
import socket
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from playwright.sync_api import Page

SIZES = {"1280x800": (1280, 800), "390x844": (390, 844)}
SCRIPT_FILE = "screenshots.toml"
"""The desk's screenshot script, beside its pack: what the resident types, the drafts, the staff reply."""


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    resident: tuple[str, ...] = Field(min_length=3)
    drafts: tuple[str, ...] = Field(min_length=2)
    staff_reply: str

    def drafts_csv(self) -> str:
        lines = ["conversation_id,turn_id,reply"]
        lines += [f'*,{turn},"{text.replace(chr(34), chr(34) * 2)}"' for turn, text in enumerate(self.drafts, start=1)]
        return "\n".join(lines) + "\n"


def load_script() -> Script:
    from dialogue.pack import default_pack_dir

    path = default_pack_dir() / SCRIPT_FILE
    return Script.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def take(folder: Path) -> list[Path]:
    from playwright.sync_api import expect, sync_playwright

    from devstack.browser import launch
    from devstack.serve import serve

    folder.mkdir(parents=True, exist_ok=True)
    drafts = Path(tempfile.mkdtemp(prefix="screenshots-")) / "drafts.csv"
    script = load_script()
    drafts.write_text(script.drafts_csv(), encoding="utf-8")
    port, stop = _free_port(), threading.Event()
    server = threading.Thread(
        target=serve,
        args=("127.0.0.1", port),
        kwargs={"realizer": f"canned:{drafts}", "quiet": True, "stdout": io.StringIO(), "install_signals": False,
                "stop": stop},
        daemon=True,
    )  # fmt: skip
    server.start()
    url = f"http://127.0.0.1:{port}"
    written = []
    try:
        _wait_for(url)
        with sync_playwright() as playwright:
            browser = launch(playwright)
            chat = browser.new_page(viewport={"width": 1280, "height": 800})
            chat.goto(f"{url}/chat")
            for number, text in enumerate(script.resident, start=1):
                expect(chat.get_by_role("button", name="Send", exact=True)).to_be_enabled()
                chat.get_by_role("textbox", name="Message").fill(text)
                chat.get_by_role("button", name="Send", exact=True).click()
                expect(chat.locator("#transcript li.assistant")).to_have_count(number, timeout=20_000)
            console = browser.new_page(viewport={"width": 1280, "height": 800})
            console.goto(f"{url}/console")
            console.get_by_role("button", name="Sign in").click()
            console.get_by_label("Your name").fill("ana")
            console.get_by_role("button", name="Sign in").click()
            expect(console.locator("#who")).to_have_text("Signed in as ana.")
            _open_first(console, "Hand-offs")
            _claim(console)
            console.get_by_label("Reply to the resident").fill(script.staff_reply)
            console.get_by_role("button", name="Send reply").click()
            expect(chat.locator("#transcript li.staff")).to_have_count(1, timeout=20_000)
            expect(console.locator("#item-seen li").last).to_contain_text(script.staff_reply)
            written += _shoot(console, folder, "handoff", "document.getElementById('item-heading').scrollIntoView()")
            _open_first(console, "Held replies")
            _claim(console)
            expect(console.get_by_role("button", name="Record decision")).to_be_enabled()
            # the chat at its latest message; the console from its top (queues, then the item)
            written += _shoot(chat, folder, "chat", "document.querySelector('.transcript').scrollTo(0, 1e9)")
            written += _shoot(console, folder, "console", "window.scrollTo(0, 0)")
            browser.close()
    finally:
        stop.set()
        server.join(timeout=30)
    return written


def _shoot(page: Page, folder: Path, name: str, placing: str) -> list[Path]:
    """`page` at each size, placed by the script `placing`: `<name>-<size>.png` in `folder`."""
    written = []
    for size, (width, height) in SIZES.items():
        page.set_viewport_size({"width": width, "height": height})
        page.evaluate(placing)
        path = folder / f"{name}-{size}.png"
        page.screenshot(path=str(path), full_page=False)
        written.append(path)
    return written


def _open_first(page: Page, tab: str) -> None:
    from playwright.sync_api import expect

    page.get_by_role("button", name=tab).click()
    opener = page.locator("#queue").get_by_role("button").first
    expect(opener).to_be_visible()
    opener.click()


def _claim(page: Page) -> None:
    from playwright.sync_api import expect

    page.locator("#item-panel").get_by_role("button", name="Claim").click()
    expect(page.locator("#item-panel").get_by_role("status")).to_have_text(
        "Claimed: it is yours until the claim expires."
    )


def _wait_for(url: str, seconds: float = 60) -> None:
    import urllib.request

    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"{url}/config.json", timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("the local desk did not start") from None
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    folder = Path(arguments[0] if arguments else "docs/screenshots")
    for path in take(folder):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
