"""Each screen, on a canned draft that trips it, shows the fallback and holds the reply for review;
a clean draft is shown as written. The drafts go through the real queue, worker and screen function.
"""

from __future__ import annotations

import json
from pathlib import Path

from commands import run_devstack
from pack_files import desk_reply

# One conversation per case: a turn whose action and state are known, and the draft for it.
SCRIPT = """conversation_id,turn_id,user_utterance
clean,1,I want the Data Support Certificate.
numerals,1,I want the Data Support Certificate by email.
numerals,2,When does it meet?
program_names,1,Forklift by phone.
action_slots,1,I want the Data Support Certificate.
personal_details,1,Hello.
promise_words,1,Data Support Certificate by email.
placeholders,1,I want the Data Support Certificate.
token_cap,1,I want the Data Support Certificate.
no_eos,1,I want the Data Support Certificate.
failed,1,I want the Data Support Certificate.
"""
DRAFTS = """conversation_id,turn_id,reply,ended_by_eos,hit_token_cap
clean,1,Should staff contact you by phone or by email?,true,false
numerals,1,"I recorded the Data Support Certificate, with contact by email.",true,false
numerals,2,Data Support Certificate classes meet on Monday evenings from 5 p.m. to 9 p.m.,true,false
program_names,1,"I recorded the Data Support Certificate and the Forklift Operator Licence, by phone.",true,false
action_slots,1,Should staff contact you by phone?,true,false
personal_details,1,Which program would you like: the Data Support Certificate? Please give your address.,true,false
promise_words,1,"Your Data Support Certificate seat is guaranteed, contact by email.",true,false
placeholders,1,Should staff contact you by phone or by email at [phone number]?,true,false
token_cap,1,Do you prefer phone or email for staff contact?,false,true
no_eos,1,Do you prefer phone or email for staff contact?,false,false
"""


def test_each_screen_trips_on_its_draft(tmp_path: Path) -> None:
    script, drafts = tmp_path / "turns.csv", tmp_path / "drafts.csv"
    script.write_text(SCRIPT)
    drafts.write_text(DRAFTS)
    result = run_devstack("replay", str(script), "--realizer", f"canned:{drafts}", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    rows = {row["conversation_id"]: row for row in map(json.loads, result.stdout.splitlines()) if row["turn_id"] == 1}
    rows["numerals"] = next(
        row for row in map(json.loads, result.stdout.splitlines()) if row["conversation_id"] == "numerals"
        and row["turn_id"] == 2
    )  # fmt: skip

    clean = rows.pop("clean")
    assert (clean["final_reply"], clean["fallback_used"], clean["reply_screen"], clean["screens_fired"]) == (
        "Should staff contact you by phone or by email?",
        False,
        "not flagged by screen",
        [],
    )
    content_screens = {"numerals", "program_names", "action_slots", "personal_details", "promise_words", "placeholders"}
    for case, row in rows.items():
        assert row["fallback_used"], case
        assert row["human_review"] == "pending", case
        assert case in row["screens_fired"], (case, row["screens_fired"])
        if case in content_screens:
            assert row["reply_screen"] == "held for human review", case
        assert row["final_reply"] != row["raw_reply"], case
    assert rows["numerals"]["final_reply"] == desk_reply("inform")
    assert rows["program_names"]["final_reply"] == desk_reply("confirm", program="forklift", contact_channel="phone")
    assert rows["personal_details"]["final_reply"] == (
        "Which program would you like: the Data Support Certificate or the Forklift Operator Licence course?"
    )
