"""The resident chat and the staff console in Chromium, as people use them, through `devstack serve`.

The resident types into the chat; a staff member signs in to the console with the local sign-in (the
same authorization-code flow with PKCE the console uses against Cognito) and works the queues. Pages,
API and sign-in are all served by one `devstack serve` on loopback.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from pack_files import edit_domain
from playwright.sync_api import Browser, Locator, Page, Route, expect
from serving import Served

from dialogue.errors import pages_errors
from dialogue.pack import ScriptedTurn, get_pack, read_scripted_turns

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED = ROOT / "data" / "riverton" / "scripted_turns.csv"
REPLY_WAIT_MS = 20_000
HELD_DRAFT = "Should staff contact you by phone or by email? Your seat is guaranteed."
STAFF_REPLY = "Hello, this is Ana at the enrollment desk. I will call you this afternoon."
CORRECTION = "A seat is held only after staff check your documents; we will write to you."
GREETING = "Hello. Ask a question, or say what you would like to sign up for."
ERRORS = pages_errors()  # what the pages say for each error code: the one table, from /config.json
TURN_LIMIT = "This conversation has reached its turn limit; start a new conversation."
BUSY = "The desk was busy with your previous message; try again."


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
        expect(self.page.get_by_role("button", name="Send", exact=True)).to_be_enabled()

    def say(self, text: str, *, by_keyboard: bool = False) -> None:
        answered = self.page.locator("#transcript li.assistant").count()
        if by_keyboard:  # as a keyboard user: Tab to the box, type, Enter sends
            expect(self.page.get_by_role("textbox", name="Message")).to_be_focused()
            self.page.keyboard.type(text)
            self.page.keyboard.press("Enter")
        else:
            self.page.get_by_role("textbox", name="Message").fill(text)
            self.page.get_by_role("button", name="Send", exact=True).click()
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
        expect(self.said()).to_have_text("Claimed: it is yours until the claim expires.")

    def said(self) -> Locator:
        """The open item's status line, next to its controls."""
        return self.page.locator("#item-panel").get_by_role("status")

    def decide(self, decision: str, *, reason: str | None = None, correction: str | None = None) -> None:
        if correction is not None:
            self.page.get_by_label("Correction", exact=False).fill(correction)
        self.page.get_by_role("radio", name=decision).check()
        if reason is not None:
            self.page.get_by_label("Reason (for a rejection)").select_option(reason)
        self.page.get_by_role("button", name="Record decision").click()


def held_desk(server_factory: Callable[..., Served], tmp_path: Path) -> Served:
    """A desk whose model drafts a promise for every conversation's first turn: a screen holds it."""
    canned = tmp_path / "held.csv"
    canned.write_text(f'conversation_id,turn_id,reply\n*,1,"{HELD_DRAFT}"\n', encoding="utf-8")
    return server_factory("--realizer", f"canned:{canned}")


def checking_every_reply(server_factory: Callable[..., Served], tmp_path: Path) -> Served:
    """A desk whose pack checks every reply shown as drafted (`shown_check_rate = 1.0`), so each one waits in
    "Awaiting a check" (a desk's default draws a tenth of them, at random)."""
    pack = tmp_path / "riverton"
    shutil.copytree(ROOT / "data" / "riverton", pack)
    edit_domain(pack, "max_message_chars = 1000\n", "max_message_chars = 1000\nshown_check_rate = 1.0\n")
    return server_factory("--pack", str(pack))


def contrast(page: Page, selector: str) -> float:
    """The WCAG contrast ratio of an element's text colour against its background colour."""
    colours = page.eval_on_selector(
        selector, "el => [getComputedStyle(el).color, getComputedStyle(el).backgroundColor]"
    )

    def luminance(css: str) -> float:
        red, green, blue = (int(part) / 255 for part in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (red, green, blue)]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    lighter, darker = sorted((luminance(colours[0]), luminance(colours[1])), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


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
        + f"  - listitem:\n    - text: Assistant\n    - paragraph: {json.dumps(GREETING)}\n"
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
    resident.page.get_by_role("button", name="Send", exact=True).click()
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
        resident.page.get_by_role("button", name="Send", exact=True).click()
        # Then one clear line says so, with a way to try again, and the typed text is still there
        alert = resident.page.get_by_role("alert")
        expect(alert).to_contain_text("The desk cannot be reached", timeout=REPLY_WAIT_MS)
        expect(resident.page.get_by_role("button", name="Try again")).to_be_visible()
        expect(resident.page.get_by_role("textbox", name="Message")).to_have_value("Email is best.")
        # and focus is back in the box, next to the text and Try again
        expect(resident.page.get_by_role("textbox", name="Message")).to_be_focused()
    finally:
        server.resume()
    # And once it is back, trying again sends the same message once and the reply arrives
    resident.page.get_by_role("button", name="Try again").click()
    expect(resident.page.locator("#transcript li.assistant")).to_have_count(2, timeout=REPLY_WAIT_MS)
    expect(resident.page.get_by_role("alert")).to_be_hidden()
    assert [t.strip() for t in resident.page.locator("#transcript li.you p").all_text_contents()] == [
        "I want the forklift course.", "Email is best."
    ]  # fmt: skip
    assert resident.assistant_replies()[-1] == (
        "I recorded the Forklift Operator Licence, with contact by email. To be contacted by email, leave your "
        "details in the form below the chat; until then a member of staff answers here in this chat, during the "
        "desk's opening hours."
    )  # the desk's confirm, with its next step: truthful without a detail (the contact form)


def test_a_conversation_at_its_turn_limit_offers_a_new_one_not_a_retry(browser: Browser, served: Served) -> None:
    resident = Resident(browser, served)
    first = resident.page.locator("#reference-code").inner_text()
    refused = {"left": 1}

    def at_the_limit(route: Route) -> None:
        if route.request.method == "POST" and refused["left"]:
            refused["left"] -= 1
            # The page words it by its code, from the table: the answer's own sentence is not needed
            route.fulfill(status=409, json={"error": "TurnLimitReached"})
        else:
            route.continue_()

    resident.page.route("**/conversations/*/turns", at_the_limit)
    resident.page.get_by_role("textbox", name="Message").fill("I want the forklift course.")
    resident.page.get_by_role("button", name="Send", exact=True).click()
    expect(resident.page.get_by_role("alert")).to_contain_text(TURN_LIMIT)
    expect(resident.page.get_by_role("alert")).not_to_contain_text(BUSY)
    expect(resident.page.get_by_role("button", name="Try again")).to_have_count(0)
    resident.page.get_by_role("button", name="Start a new conversation").click()
    # A new conversation starts, and the typed message goes into it
    expect(resident.page.locator("#transcript li.assistant")).to_have_count(1, timeout=REPLY_WAIT_MS)
    expect(resident.page.locator("#reference-code")).not_to_have_text(first)
    expect(resident.page.get_by_role("alert")).to_be_hidden()


@pytest.mark.parametrize(
    ("status", "code", "offers_retry"),
    [(429, "GeneratedTurnLimitReached", True), (409, "ConcurrentTurnConflict", True),
     (400, "InvalidIdempotencyKey", False), (503, "StoreUnavailable", True), (429, "", True)],
)  # fmt: skip
def test_a_refused_send_says_the_tables_sentence_for_its_code_and_offers_a_retry_only_where_it_may_work(
    browser: Browser, served: Served, status: int, code: str, offers_retry: bool
) -> None:
    """The answer carries a sentence of its own, which the page does not show: it words the refusal by its
    code from /config.json's table (a throttle with no code, by its status), and offers Try again only
    where the table says sending again may work."""
    resident = Resident(browser, served)
    body = {"error": code, "message": "Not the sentence the page shows."} if code else {"message": "Too Many"}

    def refuse(route: Route) -> None:
        if route.request.method == "POST":
            route.fulfill(status=status, json=body)
        else:
            route.continue_()

    resident.page.route("**/conversations/*/turns", refuse)
    resident.page.get_by_role("textbox", name="Message").fill("I want the forklift course.")
    resident.page.get_by_role("button", name="Send", exact=True).click()
    expect(resident.page.get_by_role("alert")).to_be_visible()
    expect(resident.page.locator("#problem-text")).to_have_text(ERRORS[code or "throttled"]["message"])
    if code in ("GeneratedTurnLimitReached", ""):
        expect(resident.page.get_by_role("alert")).not_to_contain_text(BUSY)
    expect(resident.page.get_by_role("button", name="Try again")).to_have_count(1 if offers_retry else 0)
    expect(resident.page.get_by_role("textbox", name="Message")).to_have_value("I want the forklift course.")


def test_an_idle_poll_in_flight_during_a_send_shows_no_message_twice(browser: Browser, served: Served) -> None:
    resident = Resident(browser, served)
    resident.say("I want the forklift course.")
    held: list[Route] = []

    def hold_the_idle_poll(route: Route) -> None:
        if not held:
            held.append(route)  # the next idle poll stays in flight until the test lets it go
        else:
            route.continue_()

    resident.page.route("**/messages?*", hold_the_idle_poll)
    for _ in range(40):  # the idle poll comes within IDLE_POLL_MS (5 s)
        if held:
            break
        resident.page.wait_for_timeout(250)
    assert held, "no idle poll came"
    resident.page.get_by_role("textbox", name="Message").fill("Email is best.")
    resident.page.get_by_role("button", name="Send", exact=True).click()
    resident.page.wait_for_timeout(1500)  # the send's own read has had its chance
    held[0].continue_()
    expect(resident.page.locator("#transcript li.assistant")).to_have_count(2, timeout=REPLY_WAIT_MS)
    resident.page.wait_for_timeout(1500)
    replies = resident.assistant_replies()
    assert len(replies) == 2 and len(set(replies)) == 2, replies


def test_a_reply_that_never_comes_frees_the_box_after_a_bounded_wait(browser: Browser, served: Served) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.clock.install()  # the page's timers and Date run on a clock the test moves
    page.goto(f"{served.url}/chat")
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()
    # Every answer to /messages says a reply is still being prepared
    page.route("**/messages?*", lambda route: route.fulfill(json={"messages": [], "next_after": 0, "waiting": True}))
    page.get_by_role("textbox", name="Message").fill("I want the forklift course.")
    # The turn is taken before the clock moves: on a busy machine its POST can take real seconds, and
    # moving the page's clock past its 8 s timeout meanwhile would abort it as unreachable
    with page.expect_response("**/turns"):
        page.get_by_role("button", name="Send", exact=True).click()
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_disabled()
    # Five seconds at a time (the longest pause between reads), past the 90 s bound, each read answered
    # before the clock moves on (so no read outlives the page's own 8 s timeout)
    for _ in range(20):
        if not page.get_by_role("button", name="Send", exact=True).is_disabled():
            break
        with page.expect_response("**/messages?*"):
            page.clock.run_for(5000)
    # The page's own work after the last read (rendering the notice) runs on real time: on a loaded machine it has
    # taken longer than expect's default 5 s, so these wait up to 20 s (a page that never shows the notice still fails)
    expect(page.get_by_role("alert")).to_be_hidden(timeout=20_000)
    expect(page.get_by_role("status")).to_contain_text("The reply is taking longer than it should.", timeout=20_000)
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled(timeout=20_000)


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
    expect(staff.said()).to_have_text("Reply sent to the resident.")
    staff.page.get_by_role("button", name="Close hand-off").click()
    expect(staff.said()).to_have_text("Hand-off closed.")
    # The resident's transcript shows the staff reply, marked as from staff
    staff_item = resident.page.locator("#transcript li.staff")
    expect(staff_item).to_contain_text(STAFF_REPLY, timeout=REPLY_WAIT_MS)
    expect(staff_item.locator(".who")).to_have_text("Staff")
    assert serious_violations(staff.page) == []


def test_a_held_reply_is_rejected_with_a_correction_that_the_resident_sees(
    browser: Browser, server_factory: Callable[..., Served], tmp_path: Path
) -> None:
    # Given a desk whose model drafts a promise for every conversation's first turn: a screen holds it
    server = held_desk(server_factory, tmp_path)
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
        - 'heading "Reply to turn 1: asks for Contact" [level=2]'
        - term: The reply
        - definition: asks for Contact
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
    staff.decide("Reject", reason="promise", correction=CORRECTION)
    expect(staff.said()).to_have_text("Rejected: the correction is sent to the resident.")
    expect(item).to_contain_text("corrected")
    expect(staff.page.locator("#count-held")).to_have_text("0")

    # Then the resident sees the correction, from staff
    expect(resident.page.locator("#transcript li.staff")).to_contain_text(CORRECTION, timeout=REPLY_WAIT_MS)
    # And the figures count the decision, drawn as charts with text for screen readers
    staff.page.get_by_role("button", name="Figures").click()
    expect(staff.page.get_by_role("img", name="Decisions per day")).to_be_visible()
    screens_chart = staff.page.get_by_role("img", name="The screens against staff decisions")
    expect(screens_chart).to_be_visible()
    # one decision draws no 100% bar: the chart says it is too few to read (and that none passed was decided)
    expect(screens_chart).to_contain_text("too few to read (1 decided)")
    expect(screens_chart).to_contain_text("none decided")
    expect(screens_chart).not_to_contain_text("100%")
    expect(staff.page.get_by_role("row", name="Rejected with a correction")).to_contain_text("1")
    # a held reply is not one of the shown replies the miss rate is read from
    expect(staff.page.get_by_role("row", name="Shown replies staff rejected")).to_contain_text("none checked yet")
    assert serious_violations(staff.page) == []
    # The console never shows what the resident typed
    assert "I want the forklift course." not in staff.page.content()


def test_the_figures_read_a_share_only_from_enough_decisions_and_the_miss_rate_with_its_interval(
    browser: Browser, served: Served
) -> None:
    staff = Staff(browser, served)
    given: dict[str, object] = {}

    def figures(route: Route) -> None:  # the desk's own figures, with the counts this test gives
        response = route.fetch()
        route.fulfill(response=response, json={**response.json(), **given})

    staff.page.route("**/staff/stats", figures)
    # Given one held reply rejected, and 4 shown replies checked of which 1 was rejected: too few to read
    given["screens_overall"] = {"held": 1, "held_rejected_share": 1.0, "passed": 4, "passed_rejected_share": 0.25}
    given["screens_missed"] = {
        "checked": 4, "rejected": 1, "share": 0.25, "low": 0.0456, "high": 0.6994, "readable": False
    }  # fmt: skip
    staff.page.get_by_role("button", name="Figures").click()
    # Then no bare percentage: the table, the miss-rate chart and the screens chart say the sample is too small
    page = staff.page
    expect(page.get_by_role("row", name="Shown replies staff rejected")).to_contain_text(
        "too few checked to read: 1 of 4 rejected (30 checks needed)"
    )
    expect(page.get_by_role("row", name="Shown replies checked")).to_contain_text("10%, drawn at random")
    missed = page.get_by_role("img", name="Shown replies staff rejected")
    expect(missed).to_contain_text("Too few checked to read (4 of 30)")
    expect(missed).not_to_contain_text("25%")
    expect(page.get_by_role("img", name="The screens against staff decisions")).not_to_contain_text("%")

    # When 120 shown replies have been checked, 6 rejected, and 40 held ones, 30 rejected
    given["screens_overall"] = {"held": 40, "held_rejected_share": 0.75, "passed": 120, "passed_rejected_share": 0.05}
    given["screens_missed"] = {
        "checked": 120, "rejected": 6, "share": 0.05, "low": 0.0231, "high": 0.1048, "readable": True
    }  # fmt: skip
    page.get_by_role("button", name="Figures").click()
    # Then the estimate is given with its 95% interval and its sample, and the screens chart draws its bars
    expect(page.get_by_role("row", name="Shown replies staff rejected")).to_contain_text(
        "5% (95% interval 2% to 10%), from 120 checked"
    )
    expect(missed).to_contain_text("5% (2% to 10%), from 120 checked")
    expect(missed.locator("circle")).to_have_count(1)
    screens = page.get_by_role("img", name="The screens against staff decisions")
    expect(screens).to_contain_text("75% of 40")
    expect(screens).to_contain_text("5% of 120")
    assert serious_violations(page) == []


def test_the_console_holds_no_resident_words(
    browser: Browser, server_factory: Callable[..., Served], tmp_path: Path
) -> None:
    served = checking_every_reply(server_factory, tmp_path)  # so every reply's item view is opened
    turns = seed_turns("C2") + seed_turns("C4")
    resident = Resident(browser, served)
    for turn in turns:
        resident.say(turn.user_utterance)
    staff = Staff(browser, served)
    expect(staff.page.locator("#count-awaiting")).to_have_text("3")  # C2's three worded replies
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


# --- the loop between the two people (issue 23) ---------------------------------------------------------


def test_the_first_screen_greets_offers_the_desks_questions_and_counts_and_an_empty_send_says_so(
    browser: Browser, served: Served
) -> None:
    resident = Resident(browser, served)
    page = resident.page
    expect(page.locator("#transcript li.greeting")).to_have_text("Assistant" + GREETING)
    examples = page.locator("#example-list").get_by_role("button")
    expect(examples).to_have_text(list(get_pack().spec.domain.examples))
    expect(page.locator("#person-answers")).to_have_text(str(get_pack().spec.domain.person_answers))
    # An empty send says so and keeps focus in the box
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.get_by_role("status")).to_have_text("Type a message first.")
    expect(page.get_by_role("textbox", name="Message")).to_be_focused()
    # An example fills the box, and the counter counts it
    examples.first.click()
    first = get_pack().spec.domain.examples[0]
    expect(page.get_by_role("textbox", name="Message")).to_have_value(first)
    expect(page.locator("#counter")).to_have_text(f"{len(first)} of 1,000")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator("#transcript li.assistant")).to_have_count(1, timeout=REPLY_WAIT_MS)
    expect(page.locator("#examples")).to_be_hidden()
    expect(page.locator("#counter")).to_have_text("0 of 1,000")
    assert serious_violations(page) == []


def test_a_reload_keeps_the_conversation_and_a_staff_reply_still_reaches_it(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    server = server_factory()
    resident = Resident(browser, server)
    resident.say("Can I talk to a person?")
    hand_off = resident.assistant_replies()[-1]
    reference = resident.page.locator("#reference-code").inner_text()
    link = resident.page.locator("#reference-link").get_attribute("href")
    kept = resident.page.evaluate("() => sessionStorage.getItem('desk-conversation')")
    assert link is not None and link.endswith(f"#c={kept}") and kept.startswith(reference)
    # When the resident reloads the page
    resident.page.reload()
    # Then the conversation is the same one: its replies come back, its words do not, and it says so
    expect(resident.page.locator("#reference-code")).to_have_text(reference)
    expect(resident.page.locator("#restored-note")).to_be_visible()
    expect(resident.page.locator("#transcript li.assistant")).to_have_text(["Assistant" + hand_off])
    expect(resident.page.locator("#transcript li.you")).to_have_count(0)
    # And a staff reply posted now reaches the reloaded page
    staff = Staff(browser, server)
    staff.open_first("Hand-offs")
    staff.claim()
    staff.page.get_by_label("Reply to the resident").fill(STAFF_REPLY)
    staff.page.get_by_role("button", name="Send reply").click()
    expect(staff.said()).to_have_text("Reply sent to the resident.")
    expect(resident.page.locator("#transcript li.staff")).to_contain_text(STAFF_REPLY, timeout=REPLY_WAIT_MS)
    # And the link opens the same conversation in another browser, with the id gone from the address
    elsewhere = browser.new_context().new_page()
    elsewhere.goto(link)
    expect(elsewhere.locator("#transcript li.staff")).to_contain_text(STAFF_REPLY, timeout=REPLY_WAIT_MS)
    expect(elsewhere.locator("#reference-code")).to_have_text(reference)
    assert "#c=" not in elsewhere.url
    assert serious_violations(resident.page) == []


def test_approving_a_held_reply_sends_the_resident_the_approved_draft(
    browser: Browser, server_factory: Callable[..., Served], tmp_path: Path
) -> None:
    server = held_desk(server_factory, tmp_path)
    resident = Resident(browser, server)
    resident.say("I want the forklift course.")
    staff = Staff(browser, server)
    staff.show("Held replies")
    row = staff.page.locator("#queue li").first
    expect(row).to_contain_text("the resident saw the fallback")
    expect(row).to_contain_text("Conversation ")
    # On a short screen the item opens in view, not below the fold
    staff.page.set_viewport_size({"width": 390, "height": 420})
    staff.open_first("Held replies")
    expect(staff.page.locator("#item-heading")).to_be_in_viewport()
    staff.page.set_viewport_size({"width": 1280, "height": 800})
    staff.claim()
    staff.decide("Approve")
    expect(staff.said()).to_have_text("Approved: the draft is sent to the resident.")
    expect(resident.page.locator("#transcript li.staff")).to_contain_text(HELD_DRAFT, timeout=REPLY_WAIT_MS)


def test_a_token_capped_reply_is_filed_as_held(
    browser: Browser, server_factory: Callable[..., Served], tmp_path: Path
) -> None:
    canned = tmp_path / "capped.csv"
    canned.write_text(
        "conversation_id,turn_id,reply,output_tokens,ended_by_eos,hit_token_cap\n"
        '*,1,"Should staff contact you by phone or by email?",60,false,true\n',
        encoding="utf-8",
    )
    server = server_factory("--realizer", f"canned:{canned}")
    Resident(browser, server).say("I want the forklift course.")
    staff = Staff(browser, server)
    expect(staff.page.locator("#count-held")).to_have_text("1")
    expect(staff.page.locator("#count-awaiting")).to_have_text("0")


def test_counts_and_lists_refresh_on_their_own(browser: Browser, server_factory: Callable[..., Served]) -> None:
    server = server_factory()
    staff = Staff(browser, server)
    staff.show("Hand-offs")
    expect(staff.page.locator("#count-handoffs")).to_have_text("0")
    Resident(browser, server).say("Can I talk to a person?")
    # No click: the badge and its list catch up by themselves, and agree
    expect(staff.page.locator("#count-handoffs")).to_have_text("1", timeout=REPLY_WAIT_MS)
    expect(staff.page.locator("#queue li")).to_have_count(1)


def test_text_typed_before_claim_survives_the_claim(browser: Browser, server_factory: Callable[..., Served]) -> None:
    server = server_factory()
    Resident(browser, server).say("Can I talk to a person?")
    staff = Staff(browser, server)
    staff.open_first("Hand-offs")
    staff.page.get_by_label("Reply to the resident").fill(STAFF_REPLY)
    staff.claim()
    expect(staff.page.get_by_label("Reply to the resident")).to_have_value(STAFF_REPLY)


def test_a_correction_is_neither_dropped_nor_sent_unasked(
    browser: Browser, server_factory: Callable[..., Served], tmp_path: Path
) -> None:
    server = held_desk(server_factory, tmp_path)
    resident = Resident(browser, server)
    resident.say("I want the forklift course.")
    staff = Staff(browser, server)
    staff.open_first("Held replies")
    page = staff.page
    # Nothing is preselected
    expect(page.get_by_role("radio", name="Approve")).not_to_be_checked()
    expect(page.get_by_role("radio", name="Reject")).not_to_be_checked()
    staff.claim()
    # Typing a correction with Approve chosen chooses Reject
    page.get_by_role("radio", name="Approve").check()
    page.get_by_label("Correction", exact=False).fill(CORRECTION)
    expect(page.get_by_role("radio", name="Reject")).to_be_checked()
    # Choosing Approve again and recording asks, and sends nothing
    page.get_by_role("radio", name="Approve").check()
    page.get_by_role("button", name="Record decision").click()
    expect(page.locator("#item-panel").get_by_role("alert")).to_contain_text("A correction is sent only with Reject")
    expect(page.get_by_label("Correction", exact=False)).to_have_value(CORRECTION)
    expect(page.locator("#item-panel")).to_contain_text("pending")
    assert list(resident.staff_messages()) == []


def test_each_clash_gets_its_own_words_and_focus_follows_each_action(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    server = server_factory()
    Resident(browser, server).say("Can I talk to a person?")
    ana, ben = Staff(browser, server, "ana"), Staff(browser, server, "ben")
    ana.open_first("Hand-offs")
    ben.open_first("Hand-offs")
    ben.claim()
    expect(ben.page.get_by_label("Reply to the resident")).to_be_focused()  # after a claim: what comes next
    ana.page.locator("#item-panel").get_by_role("button", name="Claim").click()
    expect(ana.page.locator("#item-panel").get_by_role("alert")).to_have_text(
        "Someone else has this item. It is theirs until they release it or their claim expires."
    )
    # A disabled control stays readable: at least 4.5:1 (ana's Claim, while ben holds the item)
    expect(ana.page.locator("#claim")).to_be_disabled()
    assert contrast(ana.page, "#claim") >= 4.5
    ben.page.get_by_role("button", name="Release").click()
    expect(ben.said()).to_have_text("Released.")
    expect(ben.page.locator("#claim")).to_be_focused()  # after a release: Claim again
    # A hand-off closed in one tab, then closed again in another of the same person's tabs
    ben.claim()
    second = ben.context.new_page()
    second.goto(f"{server.url}/console")
    expect(second.locator("#who")).to_have_text("Signed in as ben.")  # one sign-in for every tab
    second.get_by_role("button", name="Hand-offs").click()
    second.locator("#queue").get_by_role("button").first.click()
    expect(second.get_by_role("button", name="Close hand-off")).to_be_enabled()
    ben.page.get_by_role("button", name="Close hand-off").click()
    expect(ben.said()).to_have_text("Hand-off closed.")
    expect(ben.page.locator("#item-heading")).to_be_focused()  # after a close: the item's heading
    second.get_by_role("button", name="Close hand-off").click()
    expect(second.locator("#item-panel").get_by_role("alert")).to_have_text(
        "This hand-off was already closed, by a colleague or in another tab."
    )
    assert serious_violations(ben.page) == []


def test_signing_out_signs_out_every_tab_and_releases_the_claims(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    server = server_factory()
    Resident(browser, server).say("Can I talk to a person?")
    ana = Staff(browser, server, "ana")
    ana.open_first("Hand-offs")
    ana.claim()
    other_tab = ana.context.new_page()
    other_tab.goto(f"{server.url}/console")
    expect(other_tab.locator("#who")).to_have_text("Signed in as ana.")
    ana.page.get_by_role("button", name="Sign out").click()
    expect(other_tab.locator("#who")).to_have_text("Not signed in.", timeout=REPLY_WAIT_MS)
    expect(other_tab.get_by_role("status").first).to_have_text("You signed out in another tab.")
    ben = Staff(browser, server, "ben")
    ben.show("Hand-offs")
    expect(ben.page.locator("#queue li").first).to_contain_text("unclaimed")


def test_the_open_item_shows_its_trail_of_who_did_what_and_that_it_verifies(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    server = server_factory()
    Resident(browser, server).say("Can I talk to a person?")
    ana = Staff(browser, server, "ana")
    ana.open_first("Hand-offs")
    trail = ana.page.locator("#item-trail")
    expect(trail.get_by_role("heading", name="Trail", level=3)).to_be_visible()
    expect(trail).to_contain_text("No one has acted on this item yet.")
    # Each step joins the trail, oldest first, as the item is drawn again after it
    ana.claim()
    ana.page.get_by_role("button", name="Release").click()
    expect(ana.said()).to_have_text("Released.")
    ana.claim()
    ana.page.get_by_label("Reply to the resident").fill(STAFF_REPLY)
    ana.page.get_by_role("button", name="Send reply").click()
    expect(ana.said()).to_have_text("Reply sent to the resident.")
    ana.page.get_by_role("button", name="Close hand-off").click()
    expect(ana.said()).to_have_text("Hand-off closed.")
    table = ana.page.get_by_role("table", name="Who did what to this item, oldest first")
    expect(table.get_by_role("columnheader")).to_have_text(["When", "Who", "What"])
    rows = table.locator("tbody tr")
    expect(rows.locator("td:nth-child(3)")).to_have_text(
        ["Claimed", "Released", "Claimed", "Replied to the resident", "Closed"]
    )
    expect(rows.locator("td:nth-child(2)")).to_have_text(["You"] * 5)
    stamp = rows.first.locator("time").get_attribute("datetime") or ""
    assert stamp[:4].isdigit() and "T" in stamp  # a machine-readable time, shown in the reader's own words
    expect(ana.page.locator("#trail-verified")).to_have_text(
        "Verified against the write-once copy: every step matches its locked copy and is chained to the one "
        "before; none was changed, added or removed."
    )
    # The trail holds who, when and what: never the reply's words
    assert STAFF_REPLY not in (trail.text_content() or "")
    assert serious_violations(ana.page) == []


@pytest.fixture(autouse=True)
def _close_contexts(browser: Browser) -> Iterator[None]:
    yield
    for context in browser.contexts:
        context.close()
