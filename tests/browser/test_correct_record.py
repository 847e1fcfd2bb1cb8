"""Staff correct the record in Chromium (issue 40, item 6): a member of staff who holds a wrong Forklift
confirmation's item sets the conversation's program from the console's small form, the trail shows the
correction, the resident's chat receives the desk's confirmation of the corrected record, and the resident's
next turn reads it. Both pages pass axe with no serious violations.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Browser, expect
from serving import Served
from test_pages import REPLY_WAIT_MS, Resident, Staff, checking_every_reply, serious_violations

from dialogue.actions import Action
from dialogue.pack import get_pack
from dialogue.replies import reply_fields

CORRECTED = {"program": "data_support", "childcare_needed": "unknown", "contact_channel": "email"}


def test_a_wrong_program_is_corrected_from_the_console_and_the_resident_is_sent_the_confirmation(
    browser: Browser, server_factory: Callable[..., Served], tmp_path: Path
) -> None:
    # Given a desk of its own that checks every reply, and a resident the desk confirmed as Forklift
    served = checking_every_reply(server_factory, tmp_path)
    pack = get_pack()
    resident = Resident(browser, served)
    resident.say("I want the forklift course.")
    resident.say("Email is best.")
    assert "Forklift Operator Licence" in resident.assistant_replies()[-1]

    # When a member of staff opens the confirmation's item, the form waits for the claim
    staff = Staff(browser, served)
    staff.show("Awaiting a check")
    staff.page.locator("#queue").get_by_role("button", name=re.compile(r"turn 2$")).click()
    item = staff.page.locator("#item-panel")
    expect(item.get_by_role("heading", level=2)).to_have_text("Reply to turn 2: reads back the choices")
    form = item.get_by_role("group", name="Correct the record")
    button = form.get_by_role("button", name="Correct the record")
    expect(button).to_be_disabled()
    expect(form).to_contain_text("Claim the item to correct its record.")
    staff.claim()
    expect(button).to_be_enabled()

    # Nothing is preselected, and the values offered are the chosen slot's, by the pack's labels
    slot, value = form.get_by_label("Slot"), form.get_by_label("New value")
    expect(slot).to_have_value("")
    button.click()
    expect(item.get_by_role("alert")).to_have_text("Choose the slot to correct.")
    expect(slot).to_be_focused()
    slot.select_option(label="Program")
    expect(value.locator("option")).to_have_text(
        ["Choose a value", "Data Support Certificate", "Forklift Operator Licence", "unknown"]
    )
    value.select_option(label="Data Support Certificate")
    button.click()

    # Then the console says so, moves on to the decision, and the trail shows the correction, verified
    expect(staff.said()).to_have_text(
        "Record corrected: Program: Data Support Certificate. The desk tells the resident in the chat."
    )
    expect(staff.page.get_by_role("radio", name="Approve")).to_be_focused()
    rows = item.locator("#item-trail tbody tr td:nth-child(3)")
    expect(rows).to_have_text(["Claimed", "Corrected the record: Program: Data Support Certificate"])
    expect(staff.page.locator("#trail-verified")).to_contain_text("Verified")
    expect(form.get_by_label("Slot")).to_have_value("")  # the form is ready for the next correction
    assert serious_violations(staff.page) == []

    # And the resident's chat receives the desk's confirmation of the corrected record, by itself
    confirmation = pack.action(Action.CONFIRM).fixed_text.format_map(reply_fields(CORRECTED, pack))
    expect(resident.page.locator("#transcript li.assistant")).to_have_count(3, timeout=REPLY_WAIT_MS)
    assert resident.assistant_replies()[-1] == confirmation
    assert "Data Support Certificate" in confirmation

    # And the resident's next turn reads the corrected record
    resident.say("thanks")
    assert "Data Support Certificate" in resident.assistant_replies()[-1]
    assert "Forklift" not in resident.assistant_replies()[-1]
    assert serious_violations(resident.page) == []
