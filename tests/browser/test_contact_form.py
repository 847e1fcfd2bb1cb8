"""The contact form in Chromium (issue 40, item 1): a resident who chose phone leaves a number in the chat's
separate form, and the member of staff who claims the hand-off it opens sees it; a number typed into the
chat itself is answered with a pointer to the form. Both pages pass axe with no serious violations.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from playwright.sync_api import Browser, Route, expect
from serving import Served
from test_pages import (
    REPLY_WAIT_MS,
    Resident,
    Staff,
    _close_contexts,  # noqa: F401  # the pages' contexts close after each test
    serious_violations,
)

from dialogue.pack import get_pack

NUMBER = "07700 900123"


def test_a_number_left_in_the_form_reaches_the_staff_member_who_claims_its_hand_off(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    served = server_factory()  # a desk of its own: its only hand-off is this one
    form = get_pack().spec.contact
    assert form is not None
    resident = Resident(browser, served, width=390, height=844)  # a phone
    resident.say("forklift")
    contact = resident.page.locator("#contact")
    expect(contact).to_be_visible()
    expect(contact).not_to_have_attribute("open", "")  # nothing to reach yet: it waits, closed
    resident.say("call me")
    expect(contact).to_have_attribute("open", "")  # the channel is chosen: the form opens, once
    field = resident.page.get_by_label("Your phone number")
    expect(field).to_have_attribute("type", "tel")
    expect(field).to_have_attribute("autocomplete", "tel")

    field.fill("call me maybe")
    resident.page.get_by_role("button", name="Send to staff").click()
    expect(resident.page.locator("#contact-status")).to_have_text(
        "Please check the detail: it does not look like the format the form asks for."
    )
    answered = resident.page.locator("#transcript li.assistant").count()
    field.fill(NUMBER)
    resident.page.get_by_label(form.note_label).fill("After 3pm please.")
    resident.page.get_by_role("button", name="Send to staff").click()
    expect(resident.page.locator("#contact-status")).to_have_text("Sent to staff. Only they can read it.")
    expect(resident.page.locator("#transcript li.assistant")).to_have_count(answered + 1, timeout=REPLY_WAIT_MS)
    assert resident.assistant_replies()[-1] == form.received_text
    expect(field).to_have_value("")  # the page keeps nothing of it either

    resident.say(f"or just ring {NUMBER}")
    assert resident.assistant_replies()[-1] == form.typed_in_chat_text
    assert serious_violations(resident.page) == []

    staff = Staff(browser, served)
    staff.open_first("Hand-offs")
    item = staff.page.locator("#item-panel")
    section = item.locator("#item-contact")
    expect(section).to_contain_text("The resident left a contact detail (phone) and a note")
    show = section.get_by_role("button", name="Show what the resident left")
    expect(show).to_be_disabled()  # only for the claim's holder
    expect(item).not_to_contain_text(NUMBER)
    staff.claim()
    section.get_by_role("button", name="Show what the resident left").click()
    expect(section).to_contain_text(NUMBER)
    expect(section).to_contain_text("After 3pm please.")
    expect(item.locator("#item-trail")).to_contain_text("read_contact")
    assert serious_violations(staff.page) == []


def test_the_chat_waits_for_a_person_says_when_one_answers_and_shows_their_reply(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    """Issue 40, item 3: a hand-off says that a person is to answer (and, outside the desk's hours, when),
    until a staff message arrives; on a phone the staff message comes into view."""
    served = server_factory()
    hours = get_pack().spec.hours
    assert hours is not None
    resident = Resident(browser, served, width=390, height=844)
    waiting = resident.page.locator("#waiting")
    expect(waiting).to_be_hidden()
    resident.say("Can I talk to a person?")
    expect(waiting).to_be_visible()
    expect(waiting).to_contain_text(re.compile(r"Waiting for a member of staff|The desk is closed now"))

    # Outside the hours (the API's next_opening, here on a Saturday's hand-off), in the desk's words and time.
    def closed(route: Route) -> None:
        page = route.fetch().json()
        for message in page["messages"]:
            if message.get("to_person"):
                message["next_opening"] = "2026-12-07T09:00:00Z"
        route.fulfill(json=page)

    later = Resident(browser, served, width=390, height=844)
    later.page.route("**/messages?*", closed)
    later.say("Can I talk to a person?")
    expected = hours.closed_text.replace("{next_opening}", "Monday 7 December at 9:00")
    expect(later.page.locator("#waiting")).to_have_text(expected)
    assert serious_violations(later.page) == []
    later.page.unroute_all(behavior="ignoreErrors")  # its handler fetches from the server, which stops first
    later.context.close()

    staff = Staff(browser, served)
    staff.show("Hand-offs")  # the first resident's hand-off: below the later one's (newest ask first)
    staff.page.locator("#queue li").last.get_by_role("button").click()
    staff.claim()
    staff.page.get_by_label("Reply to the resident").fill("Hello, Ana here. How can I help?")
    staff.page.get_by_role("button", name="Send reply").click()
    expect(staff.said()).to_have_text("Reply sent to the resident.")
    message = resident.page.locator("#transcript li.staff").last
    expect(message).to_contain_text("Ana here", timeout=REPLY_WAIT_MS)
    expect(message).to_be_in_viewport()
    expect(waiting).to_be_hidden()
    # the message came into view, so no cue points at it (a class's display never overrides `hidden`)
    expect(resident.page.locator("#new-staff")).to_be_hidden()


def test_a_staff_message_shows_a_cue_where_the_resident_reads_further_up(
    browser: Browser, server_factory: Callable[..., Served]
) -> None:
    """Issue 40, item 3: a staff message does not pull a resident reading earlier replies away; a cue says
    it came, and takes them to it."""
    served = server_factory()
    resident = Resident(browser, served, width=390, height=844)
    for text in ("I want the forklift course.", "Email is best.", "What is the parking fee?"):
        resident.say(text)
    cue = resident.page.locator("#new-staff")
    expect(cue).to_be_hidden()
    resident.page.evaluate("document.querySelector('.transcript').scrollTo(0, 0)")
    staff = Staff(browser, served)
    staff.open_first("Hand-offs")
    staff.claim()
    staff.page.get_by_label("Reply to the resident").fill("Hello, Ana here. Parking is free after 5 pm.")
    staff.page.get_by_role("button", name="Send reply").click()
    expect(cue).to_be_visible(timeout=REPLY_WAIT_MS)
    message = resident.page.locator("#transcript li.staff").last
    expect(message).not_to_be_in_viewport()
    cue.click()
    expect(message).to_be_in_viewport()
    expect(message).to_be_focused()
    expect(cue).to_be_hidden()
    assert serious_violations(resident.page) == []
