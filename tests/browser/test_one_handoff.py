"""Issue 40, items 2 and 7, in Chromium: a conversation has one open hand-off, which a later ask joins and
brings to the top, saying every reason in words; once closed, the next ask opens a new one; a claim says
who holds it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.sync_api import Browser, expect
from serving import Served
from test_pages import (
    Resident,
    Staff,
    _close_contexts,  # noqa: F401  # the pages' contexts close after each test
    serious_violations,
)


def conversation_of(resident: Resident) -> str:
    """The resident's conversation id, as the chat keeps it for its tab."""
    kept = resident.page.evaluate("sessionStorage.getItem('desk-conversation')")
    assert isinstance(kept, str)
    return kept


def test_a_later_ask_joins_the_open_hand_off_and_brings_it_to_the_top(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    served = server_factory()
    # Given a resident whose question the handbook does not answer, then another who asks for a person
    first = Resident(browser, served)
    first.say("What is the parking fee?")
    second = Resident(browser, served)
    second.say("Can I talk to a person?")
    # When the first asks for a person too
    first.say("Can I talk to a person?")

    # Then the hand-offs hold one item per conversation, the first's on top, saying both reasons
    staff = Staff(browser, served)
    page = staff.page
    rows = page.locator("#queue li")
    expect(rows).to_have_count(2)
    top = rows.first
    expect(top).to_contain_text(f"Conversation {conversation_of(first)[:8]}, turn 1")
    expect(top).to_contain_text("no handbook row answers: parking; asked for a person")
    expect(top).to_contain_text("asked 2 times")
    expect(rows.last).to_contain_text(f"Conversation {conversation_of(second)[:8]}, turn 1")

    # And its item lists each ask in order, in words
    top.get_by_role("button").click()
    item = page.locator("#item-panel")
    expect(item.get_by_role("heading", level=2)).to_have_text(
        "Hand-off: no handbook row answers: parking; asked for a person"
    )
    asks = item.get_by_role("list", name="What the resident asked a person for").get_by_role("listitem")
    expect(asks).to_have_count(2)
    expect(asks.first).to_contain_text("Turn 1")
    expect(asks.first).to_contain_text("no handbook row answers: parking")
    expect(asks.last).to_contain_text("Turn 2")
    expect(asks.last).to_contain_text("asked for a person")
    assert serious_violations(page) == []

    # When staff answer and close it
    staff.claim()
    page.get_by_label("Reply to the resident").fill("Parking is free after 5 pm; I am here if you need more.")
    page.get_by_role("button", name="Send reply").click()
    expect(staff.said()).to_have_text("Reply sent to the resident.")
    page.get_by_role("button", name="Close hand-off").click()
    expect(staff.said()).to_have_text("Hand-off closed.")
    page.keyboard.press("Escape")
    staff.show("Hand-offs")
    expect(rows).to_have_count(1)

    # Then the resident's next ask opens a new item, at the top
    first.say("Can I talk to a person?")
    staff.show("Hand-offs")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text(f"Conversation {conversation_of(first)[:8]}, turn 3")
    expect(rows.first).to_contain_text("asked for a person")


def test_a_claim_says_who_holds_it(browser: Browser, server_factory: Callable[..., Served]) -> None:
    served = server_factory()
    Resident(browser, served).say("Can I talk to a person?")
    ana = Staff(browser, served, name="ana")
    ana.open_first("Hand-offs")
    ana.claim()
    ben = Staff(browser, served, name="ben")
    row = ben.page.locator("#queue li").first
    expect(row).to_contain_text("claimed by ana")
    row.get_by_role("button").click()
    expect(ben.page.locator("#item-panel")).to_contain_text("ana's until")
    # in the desk's locale (en-GB, from its pack), whatever the browser's (en-US here): day before month
    assert ben.page.evaluate("navigator.language") == "en-US"
    expect(ben.page.locator("#item-panel")).to_contain_text(
        re.compile(r"ana's until \d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}")
    )
    expect(ben.page.locator("#item-panel").get_by_role("button", name="Claim")).to_be_disabled()
    assert serious_violations(ben.page) == []
