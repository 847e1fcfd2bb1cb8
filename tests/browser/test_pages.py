"""The resident chat and the staff console in Chromium, as people use them, through `devstack serve`.

The resident types into the chat; a staff member signs in to the console with the local sign-in (the
same authorization-code flow with PKCE the console uses against Cognito) and works the queues. Pages,
API and sign-in are all served by one `devstack serve` on loopback.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, Route, expect
from serving import Served

from dialogue.pack import ScriptedTurn, get_pack, read_scripted_turns

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED = ROOT / "data" / "riverton" / "scripted_turns.csv"
REPLY_WAIT_MS = 20_000
HELD_DRAFT = "Should staff contact you by phone or by email? Your seat is guaranteed."
STAFF_REPLY = "Hello, this is Ana at the enrollment desk. I will call you this afternoon."
CORRECTION = "A seat is held only after staff check your documents; we will write to you."


def seed_turns(conversation: str) -> list[ScriptedTurn]:
    turns = read_scripted_turns(SCRIPTED, get_pack().frame)
    return [turn for turn in turns if turn.conversation_id == conversation]


def seed_replies(turns: list[ScriptedTurn]) -> list[str]:
    """The replies the seed's turns get through the whole pipeline with the template realizer."""
    from devstack.replay import replay_conversation
    from devstack.stack import local_stack

    with local_stack() as stack:
        return [row.final_reply for row in replay_conversation(stack, turns)]


# --- people -----------------------------------------------------------------------------------------------


class Resident:
    def __init__(self, browser: Browser, served: Served, *, width: int = 1280, height: int = 800) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page = self.context.new_page()
        self.page.goto(f"{served.url}/chat")
        expect(self.page.get_by_role("button", name="Send")).to_be_enabled()

    def say(self, text: str, *, by_keyboard: bool = False) -> None:
        answered = self.page.locator("#transcript li.assistant").count()
        if by_keyboard:  # as a keyboard user: Tab to the box, type, Enter sends
            expect(self.page.get_by_role("textbox", name="Message")).to_be_focused()
            self.page.keyboard.type(text)
            self.page.keyboard.press("Enter")
        else:
            self.page.get_by_role("textbox", name="Message").fill(text)
            self.page.get_by_role("button", name="Send").click()
        expect(self.page.locator("#transcript li.assistant")).to_have_count(answered + 1, timeout=REPLY_WAIT_MS)

    def assistant_replies(self) -> list[str]:
        return [text.strip() for text in self.page.locator("#transcript li.assistant p").all_text_contents()]

    def staff_messages(self) -> Iterator[str]:
        return (text.strip() for text in self.page.locator("#transcript li.staff p").all_text_contents())


class Staff:
    def __init__(self, browser: Browser, served: Served, name: str = "ana") -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 800})
        self.page = self.context.new_page()
        self.page.goto(f"{served.url}/console")
        self.page.get_by_role("button", name="Sign in").click()
        expect(self.page.get_by_text("This is devstack's local sign-in")).to_be_visible()
        self.page.get_by_label("Your name").fill(name)
        self.page.get_by_role("button", name="Sign in").click()
        expect(self.page.locator("#who")).to_have_text(f"Signed in as {name}.")
        # The title is the desk's, from its pack (/staff/desk), not written into the page.
        expect(self.page.get_by_role("heading", level=1)).to_have_text(
            "Riverton Skills Centre enrollment desk: staff console"
        )

    def show(self, tab: str) -> None:
        self.page.get_by_role("button", name=tab).click()
        expect(self.page.locator("#queue-panel")).to_have_attribute("aria-busy", "false")

    def open_first(self, tab: str) -> None:
        self.show(tab)
        opener = self.page.locator("#queue").get_by_role("button").first
        expect(opener).to_be_visible()
        opener.click()
        expect(self.page.locator("#item-panel")).to_be_visible()

    def claim(self) -> None:
        self.page.locator("#item-panel").get_by_role("button", name="Claim").click()
        expect(self.page.get_by_role("status")).to_have_text("Claimed: it is yours until the claim expires.")


def serious_violations(page: Page) -> list[str]:
    results = Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}): {v['help']}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


# --- the resident chat ------------------------------------------------------------------------------------


def test_the_seeds_c1_conversation_typed_into_the_chat_shows_the_seeds_replies(
    browser: Browser, served: Served
) -> None:
    turns = seed_turns("C1")
    expected = seed_replies(turns)
    resident = Resident(browser, served)
    # The desk's name is the pack's, from config.json: the page names no desk itself
    expect(resident.page.get_by_role("heading", level=1)).to_have_text(get_pack().spec.domain.name)
    resident.page.keyboard.press("Tab")  # the skip link, then on to the message box
    resident.page.keyboard.press("Enter")
    for turn in turns:
        resident.say(turn.user_utterance, by_keyboard=True)
    assert resident.assistant_replies() == expected
    # The transcript reads, to a screen reader, as a log of who said what, in order
    expect(resident.page.get_by_role("log", name="Conversation")).to_match_aria_snapshot(
        "- list:\n  - /children: equal\n"
        + "\n".join(
            f"  - listitem:\n    - text: {who}\n    - paragraph: {json.dumps(text)}"
            for pair in zip([t.user_utterance for t in turns], expected, strict=True)
            for who, text in zip(("You", "Assistant"), pair, strict=True)
        )
    )
    # The resident's words are nowhere but the page: not in storage, cookies or the address
    stored = resident.page.evaluate(
        "() => JSON.stringify([localStorage, sessionStorage, document.cookie, location.href])"
    )
    for turn in turns:
        assert turn.user_utterance not in stored
    assert serious_violations(resident.page) == []


def test_a_reply_being_prepared_is_announced(browser: Browser, served: Served) -> None:
    resident = Resident(browser, served)
    # The first answers to /messages after the send say a reply is still being prepared
    held_back = {"left": 4}

    def still_preparing(route: Route) -> None:
        if held_back["left"] > 0:
            held_back["left"] -= 1
            route.fulfill(json={"messages": [], "next_after": 0, "waiting": True})
        else:
            route.continue_()

    resident.page.route("**/messages?*", still_preparing)
    resident.page.get_by_role("textbox", name="Message").fill("I want the forklift course.")
    resident.page.get_by_role("button", name="Send").click()
    expect(resident.page.get_by_role("status").filter(has_text="A reply is being prepared")).to_be_visible(
        timeout=REPLY_WAIT_MS
    )
    expect(resident.page.locator("#transcript li.assistant")).to_have_count(1, timeout=REPLY_WAIT_MS)
    expect(resident.page.get_by_role("status").filter(has_text="A reply is being prepared")).to_have_count(0)
    assert held_back["left"] == 0


def test_a_stopped_server_gives_one_clear_line_keeps_the_text_and_recovers(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    server = server_factory()
    resident = Resident(browser, server)
    resident.say("I want the forklift course.")
    # When the server stops answering mid-conversation
    server.pause()
    try:
        resident.page.get_by_role("textbox", name="Message").fill("Email is best.")
        resident.page.get_by_role("button", name="Send").click()
        # Then one clear line says so, with a way to try again, and the typed text is still there
        alert = resident.page.get_by_role("alert")
        expect(alert).to_contain_text("The desk cannot be reached", timeout=REPLY_WAIT_MS)
        expect(resident.page.get_by_role("button", name="Try again")).to_be_visible()
        expect(resident.page.get_by_role("textbox", name="Message")).to_have_value("Email is best.")
    finally:
        server.resume()
    # And once it is back, trying again sends the same message once and the reply arrives
    resident.page.get_by_role("button", name="Try again").click()
    expect(resident.page.locator("#transcript li.assistant")).to_have_count(2, timeout=REPLY_WAIT_MS)
    expect(resident.page.get_by_role("alert")).to_be_hidden()
    assert [t.strip() for t in resident.page.locator("#transcript li.you p").all_text_contents()] == [
        "I want the forklift course.", "Email is best."
    ]  # fmt: skip
    assert resident.assistant_replies()[-1] == "I recorded the Forklift Operator Licence, with contact by email."


def test_the_chat_reads_at_phone_width(browser: Browser, served: Served) -> None:
    resident = Resident(browser, served, width=390, height=844)
    resident.say("I want the forklift course.")
    overflow = resident.page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    assert serious_violations(resident.page) == []


# --- the staff console ------------------------------------------------------------------------------------


def test_a_hand_off_reaches_a_person_whose_reply_reaches_the_resident(browser: Browser, served: Served) -> None:
    resident = Resident(browser, served)
    resident.say("Can I talk to a person?")
    staff = Staff(browser, served)
    staff.open_first("Hand-offs")
    item = staff.page.locator("#item-panel")
    expect(item.get_by_role("heading", level=2)).to_contain_text("Hand-off")
    staff.claim()
    staff.page.get_by_label("Reply to the resident").fill(STAFF_REPLY)
    staff.page.get_by_role("button", name="Send reply").click()
    expect(staff.page.get_by_role("status")).to_have_text("Reply sent to the resident.")
    staff.page.get_by_role("button", name="Close hand-off").click()
    expect(staff.page.get_by_role("status")).to_have_text("Hand-off closed.")
    # The resident's transcript shows the staff reply, marked as from staff
    staff_item = resident.page.locator("#transcript li.staff")
    expect(staff_item).to_contain_text(STAFF_REPLY, timeout=REPLY_WAIT_MS)
    expect(staff_item.locator(".who")).to_have_text("Staff")
    assert serious_violations(staff.page) == []


def test_a_held_reply_is_rejected_with_a_correction_that_the_resident_sees(
    browser: Browser, server_factory: Callable[..., Served], tmp_path: Path
) -> None:
    # Given a desk whose model drafts a promise for every conversation's first turn: a screen holds it
    canned = tmp_path / "held.csv"
    canned.write_text(f'conversation_id,turn_id,reply\n*,1,"{HELD_DRAFT}"\n', encoding="utf-8")
    server = server_factory("--realizer", f"canned:{canned}")
    resident = Resident(browser, server)
    resident.say("I want the forklift course.")
    assert resident.assistant_replies()[-1] != HELD_DRAFT  # the fallback was shown

    # When a staff member opens the held reply, sees what the reviewer needs, and rejects it
    staff = Staff(browser, server)
    expect(staff.page.locator("#count-held")).to_have_text("1")
    staff.open_first("Held replies")
    item = staff.page.locator("#item-panel")
    expect(item).to_contain_text(HELD_DRAFT)
    expect(item).to_contain_text("Promise words")
    # Slots by the pack's labels (/staff/desk), not raw names: a program by its name.
    expect(item).to_contain_text("Program: Forklift Operator Licence, Child care: unknown, Contact: unknown")
    expect(item).to_match_aria_snapshot(
        """
        - heading "Reply to turn 1 (request_contact)" [level=2]
        - term: Action
        - definition: request_contact
        - heading "Handbook rows the prompt used" [level=3]
        - heading "Draft" [level=3]
        - blockquote: Should staff contact you by phone or by email? Your seat is guaranteed.
        - heading "Screens fired" [level=3]
        - list:
          - listitem: Promise words
        - heading "Reply shown" [level=3]
        - button "Claim"
        - group "Decision"
        """
    )
    staff.claim()
    staff.page.get_by_role("radio", name="Reject").check()
    staff.page.get_by_label("Reason (for a rejection)").select_option("promise")
    staff.page.get_by_label("Correction (optional; sent to the resident as a staff message)").fill(CORRECTION)
    staff.page.get_by_role("button", name="Record decision").click()
    expect(staff.page.get_by_role("status")).to_have_text("Rejected.")
    expect(item).to_contain_text("corrected")
    expect(staff.page.locator("#count-held")).to_have_text("0")

    # Then the resident sees the correction, from staff
    expect(resident.page.locator("#transcript li.staff")).to_contain_text(CORRECTION, timeout=REPLY_WAIT_MS)
    # And the figures count the decision, drawn as charts with text for screen readers
    staff.page.get_by_role("button", name="Figures").click()
    expect(staff.page.get_by_role("img", name="Decisions per day")).to_be_visible()
    expect(staff.page.get_by_role("img", name="The screens against staff decisions")).to_be_visible()
    expect(staff.page.get_by_role("row", name="Corrected")).to_contain_text("1")
    assert serious_violations(staff.page) == []
    # The console never shows what the resident typed
    assert "I want the forklift course." not in staff.page.content()


def test_the_console_holds_no_resident_words(browser: Browser, served: Served) -> None:
    turns = seed_turns("C2") + seed_turns("C4")
    resident = Resident(browser, served)
    for turn in turns:
        resident.say(turn.user_utterance)
    staff = Staff(browser, served)
    seen = []
    for tab in ("Held replies", "Awaiting a check", "Hand-offs"):
        staff.show(tab)
        for opener in staff.page.locator("#queue").get_by_role("button").all():
            opener.click()
            expect(staff.page.locator("#item-panel")).to_be_visible()
            seen.append(staff.page.content())
    seen.append(staff.page.evaluate("() => JSON.stringify([localStorage, sessionStorage, document.cookie])"))
    assert len(seen) > 3
    for turn in turns:
        assert all(turn.user_utterance not in page for page in seen), turn.user_utterance


def test_the_console_refuses_a_local_sign_in_that_skips_pkce(browser: Browser, served: Served) -> None:
    page = browser.new_page()
    page.goto(f"{served.url}/local-auth/oauth2/authorize?response_type=code&client_id=devstack-staff-console"
              f"&redirect_uri={served.url}/console")  # fmt: skip
    expect(page.get_by_role("alert")).to_have_text("The sign-in request needs a PKCE challenge (S256).")
    page.close()


@pytest.fixture(autouse=True)
def _close_contexts(browser: Browser) -> Iterator[None]:
    yield
    for context in browser.contexts:
        context.close()
