"""`python -m devstack chat`: a person types turns and sees the reply, the action, the slots and the screens."""

from __future__ import annotations

import re

from commands import run_devstack

from dialogue.errors import ERRORS


def test_chat_shows_reply_action_slots_and_screens() -> None:
    typed = "I want the Data Support Certificate.\nEmail is best.\nApprove my seat now.\n\n"
    result = run_devstack("chat", "--realizer", "template", stdin=typed, timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "desk> Should staff contact you by phone or by email?" in out
    assert "[request_contact] program=data_support, childcare_needed=unknown, contact_channel=unknown" in out
    assert "desk> I recorded the Data Support Certificate, with contact by email." in out
    # A reply shown as drafted is drawn for a check at the desk's rate, at random (dialogue.human_checks).
    assert re.search(r"screens fired: none; not flagged by screen; human check (pending|not drawn)\n", out)
    assert "desk> I cannot approve seats or replace staff checks." in out
    assert "[refuse] program=data_support, childcare_needed=unknown, contact_channel=email | fixed text" in out


def test_chat_reports_bad_input_without_echo() -> None:
    typed = "x" * 1500 + "\n\n"
    result = run_devstack("chat", stdin=typed, timeout=120)
    assert result.returncode == 0, result.stderr
    assert ERRORS["invalid_text_length"].message in result.stdout  # the table's sentence
    assert "between 1 and 1000 characters" in result.stdout
    assert "x" * 20 not in result.stdout
