"""Issue 40, items 4, 5 and 7, in Chromium: the console opens where people wait and says why in words; a
shown reply waits for a check only when drawn; the
chat keeps what is typed through a reload, never cuts a long paste silently, writes right-to-left text
right to left and does not scroll sideways at 200% zoom on a phone; Escape leaves an item; a correction
chooses Reject where the person is looking.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from pack_files import edit_domain
from playwright.sync_api import Browser, expect
from serving import Served
from test_pages import (
    GREETING,
    HELD_DRAFT,
    ROOT,
    Resident,
    Staff,
    _close_contexts,  # noqa: F401  # the pages' contexts close after each test
    serious_violations,
)

INTERNAL_NAMES = ("hand_off", "abstain_hand_off", "human_request", "contact_left")


def test_the_console_opens_on_the_hand_offs_when_a_person_waits_and_says_why_in_words(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    served = server_factory()
    resident = Resident(browser, served)
    resident.say("Can I talk to a person?")
    staff = Staff(browser, served)
    page = staff.page
    expect(page.locator("#queue-heading")).to_have_text("Hand-offs")
    expect(page.locator('[data-tab="handoffs"]')).to_have_attribute("aria-current", "page")
    row = page.locator("#queue li").first
    expect(row).to_contain_text("asked for a person")
    row.get_by_role("button").click()
    item = page.locator("#item-panel")
    expect(item.get_by_role("heading", level=2)).to_have_text("Hand-off: asked for a person")
    shown = item.inner_text() + page.locator("#queue").inner_text()
    assert not [name for name in INTERNAL_NAMES if name in shown], shown
    # Escape leaves the item for its queue, focus on the row it came from.
    page.keyboard.press("Escape")
    expect(item).to_be_hidden()
    expect(page.locator("#queue [data-item]").first).to_be_focused()
    assert serious_violations(page) == []


def test_a_long_paste_is_never_cut_and_what_is_typed_survives_a_reload(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    served = server_factory()
    resident = Resident(browser, served)
    page = resident.page
    box = page.get_by_role("textbox", name="Message")
    expect(box).to_have_attribute("dir", "auto")
    box.fill("x" * 1200)
    expect(box).to_have_value("x" * 1200)  # nothing cut off
    expect(page.locator("#counter")).to_have_text("1,200 of 1,000: 200 too many")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator("#status")).to_contain_text("200 characters over the limit")
    expect(page.locator("#transcript li.you")).to_have_count(0)  # not sent

    # An empty conversation reloaded greets again, and keeps the half-typed message.
    box.fill("When does the forklift cou")
    page.reload()
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()
    expect(page.locator("#transcript li.greeting")).to_have_text("Assistant" + GREETING)
    expect(page.locator("#restored-note")).to_be_hidden()
    expect(page.get_by_role("textbox", name="Message")).to_have_value("When does the forklift cou")

    # Sent, it is no longer kept; a reply in a right-to-left script reads right to left.
    resident.say("مرحبا، متى يبدأ الدرس؟")
    expect(page.locator("#transcript li.assistant p").last).to_have_attribute("dir", "auto")
    page.reload()
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()
    expect(page.get_by_role("textbox", name="Message")).to_have_value("")
    expect(page.locator("#restored-note")).to_be_visible()


def test_the_chat_does_not_scroll_sideways_at_200_percent_zoom_on_a_phone(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    served = server_factory()
    resident = Resident(browser, served, width=195, height=422)  # a 390-pixel phone at 200% zoom
    widths = resident.page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths
    resident.say("Can I talk to a person?")
    widths = resident.page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], widths


def test_a_correction_chooses_reject_and_says_so_beside_the_box(
    browser: Browser, server_factory: Callable[..., Served], tmp_path: Path
) -> None:
    canned = tmp_path / "held.csv"
    canned.write_text(f'conversation_id,turn_id,reply\n*,1,"{HELD_DRAFT}"\n', encoding="utf-8")
    served = server_factory("--realizer", f"canned:{canned}")
    resident = Resident(browser, served)
    resident.say("I want the forklift course.")
    staff = Staff(browser, served)
    staff.open_first("Held replies")
    staff.claim()
    page = staff.page
    page.get_by_role("radio", name="Approve").check()
    page.get_by_label("Correction", exact=False).fill("We will write to you.")
    expect(page.get_by_role("radio", name="Reject")).to_be_checked()
    expect(page.get_by_role("radio", name="Approve")).not_to_be_checked()
    note = page.locator("#correction-note")
    expect(note).to_have_text("A correction goes with Reject: Reject is now chosen.")
    expect(note).to_be_in_viewport()


def test_the_hand_off_shows_what_the_resident_saw_and_the_reply_just_sent(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    served = server_factory()
    resident = Resident(browser, served)
    resident.say("Can I talk to a person?")
    staff = Staff(browser, served)
    staff.open_first("Hand-offs")
    seen = staff.page.locator("#item-seen li")
    expect(seen).to_have_count(1)
    expect(seen.first).to_contain_text("(this item)")
    expect(seen.first).to_contain_text(resident.assistant_replies()[-1])
    staff.claim()
    staff.page.get_by_label("Reply to the resident").fill("Hello, Ana here. How can I help?")
    staff.page.get_by_role("button", name="Send reply").click()
    expect(staff.said()).to_have_text("Reply sent to the resident.")
    expect(seen).to_have_count(2)
    expect(seen.last).to_contain_text("Staff")
    expect(seen.last).to_contain_text("Hello, Ana here. How can I help?")
    assert serious_violations(staff.page) == []


def test_only_held_replies_and_the_drawn_shown_ones_wait_for_a_check(
    browser: Browser, server_factory: Callable[..., Served], tmp_path: Path
) -> None:
    """Issue 40, item 5: a held reply always waits for a person; a reply the resident already saw waits only
    when the desk's draw picks it (here a rate so small that none is picked)."""
    pack = tmp_path / "riverton"
    shutil.copytree(ROOT / "data" / "riverton", pack)
    edit_domain(pack, "max_message_chars = 1000\n", "max_message_chars = 1000\nshown_check_rate = 1e-9\n")
    canned = tmp_path / "held.csv"
    shown = "I recorded the Forklift Operator Licence, with contact by email."
    canned.write_text(f'conversation_id,turn_id,reply\n*,1,"{HELD_DRAFT}"\n*,2,"{shown}"\n', encoding="utf-8")
    served = server_factory("--pack", str(pack), "--realizer", f"canned:{canned}")
    resident = Resident(browser, served)
    resident.say("I want the forklift course.")  # held: the resident is shown the fallback
    resident.say("Email is best.")  # shown as worded
    assert resident.assistant_replies()[-1] == shown
    staff = Staff(browser, served)
    page = staff.page
    expect(page.locator("#count-held")).to_have_text("1")
    expect(page.locator("#count-awaiting")).to_have_text("0")
    staff.show("Awaiting a check")
    expect(page.locator("#queue li")).to_have_count(0)
    expect(page.locator("#queue-empty")).to_be_visible()
    assert serious_violations(page) == []
