"""The reply screens and the fallback rule, on the seed's seven control replies and its generated replies,
with the lesson profile (the seed's six screens); the desk profile's are in test_desk_screens.py."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from uuid import uuid4

import pytest
from pack_files import edit_domain

from dialogue.actions import Action, HumanReview, ReplyScreen, Screen, ScreenProfile, in_screen_order
from dialogue.pack import DomainPack, load_pack
from dialogue.realize import RealizedReply, build_realize_job
from dialogue.screens import action_slots_ok, decide, screen_reply
from dialogue.state import DialogueState

LESSON = ScreenProfile.LESSON  # the seed's screens, exactly

# The seed's control table: reply, action, program, channel, then numerals, program names, action
# slots, personal details, promise words, label.
CONTROLS = [
    ("You are asking about the Data Support Certificate, and email is your contact channel.",
     Action.CONFIRM, "data_support", "email", (True, True, True, True, True), ReplyScreen.NOT_FLAGGED),
    ("You are confirmed for the Forklift Operator Licence, and email is your contact channel.",
     Action.CONFIRM, "data_support", "email", (True, False, False, True, True), ReplyScreen.HELD),
    ("You are asking about the Data Support Certificate.",
     Action.CONFIRM, "data_support", "email", (True, True, False, True, True), ReplyScreen.HELD),
    ("Email is your contact channel.",
     Action.CONFIRM, "data_support", "email", (True, True, False, True, True), ReplyScreen.HELD),
    ("Which program would you like: the Data Support Certificate or the Forklift Operator Licence course?",
     Action.REQUEST_PROGRAM, "unknown", "unknown", (True, True, True, True, True), ReplyScreen.NOT_FLAGGED),
    ("Please provide the child's age and any specific needs.",
     Action.REQUEST_PROGRAM, "unknown", "unknown", (True, True, False, False, True), ReplyScreen.HELD),
    ("Your seat is guaranteed and approved.",
     Action.CONFIRM, "data_support", "email", (True, True, False, True, False), ReplyScreen.HELD),
]  # fmt: skip
SEED_COLUMNS = ("numerals", "program_names", "action_slots", "personal_details", "promise_words")


def slots(program: str, channel: str, childcare: str = "unknown") -> dict[str, str]:
    return {"program": program, "childcare_needed": childcare, "contact_channel": channel}


@pytest.mark.parametrize(("reply", "action", "program", "channel", "expected", "label"), CONTROLS)
def test_controls_give_the_seeds_table(
    pack: DomainPack,
    reply: str,
    action: Action,
    program: str,
    channel: str,
    expected: tuple[bool, ...],
    label: ReplyScreen,
) -> None:
    report = screen_reply(reply, action, slots(program, channel), pack)
    assert tuple(report.passed[name] for name in SEED_COLUMNS) == expected
    assert report.label is label


def realized(pack: DomainPack, text: str, action: Action, state_slots: dict[str, str], **flags: bool) -> RealizedReply:
    state = DialogueState.from_slots(pack.frame, state_slots)
    job = build_realize_job(
        conversation_id=uuid4(), turn_id=1, state=state, action=action, pack=pack, now=datetime.now(UTC)
    )
    return RealizedReply(
        job=job,
        text=text,
        engine="canned",
        ended_by_eos=flags.get("ended_by_eos", True),
        hit_token_cap=flags.get("hit_token_cap", False),
    )


def test_seed_c1_turn_1_reply_trips_action_slots_and_falls_back(lesson_pack: DomainPack) -> None:
    pack = lesson_pack  # the seed's fallback texts
    reply = realized(
        pack,
        "Staff will contact you via email to discuss your child's needs and request additional information.",
        Action.REQUEST_CONTACT,
        slots("data_support", "unknown"),
    )
    outcome = decide(reply, pack, LESSON)
    assert outcome.screens_fired == ("action_slots",)
    assert outcome.reply_screen is ReplyScreen.HELD
    assert outcome.human_review is HumanReview.PENDING
    assert outcome.final_reply == "Should staff contact you by phone or by email?"


def test_seed_c1_turn_2_token_cap_falls_back_without_flagging(lesson_pack: DomainPack) -> None:
    pack = lesson_pack  # the seed's fallback texts
    reply = realized(
        pack,
        "Program confirmed: Data Support Certificate. Contact channel: email. Childcare needed: unknown.",
        Action.CONFIRM,
        slots("data_support", "email"),
        ended_by_eos=False,
        hit_token_cap=True,
    )
    outcome = decide(reply, pack, LESSON)
    assert outcome.reply_screen is ReplyScreen.NOT_FLAGGED
    assert outcome.fallback_used
    assert outcome.final_reply == "I recorded the Data Support Certificate, with contact by email."
    assert set(outcome.screens_fired) == {"token_cap", "no_eos"}


def test_seed_c1_turn_4_clean_reply_is_shown_as_written(lesson_pack: DomainPack) -> None:
    pack = lesson_pack  # the seed's fallback texts
    text = "Program confirmed: Forklift Operator Licence course. Contact channel: email."
    outcome = decide(realized(pack, text, Action.CONFIRM, slots("forklift", "email")), pack, LESSON)
    assert outcome.final_reply == text
    assert not outcome.fallback_used
    assert outcome.reply_screen is ReplyScreen.NOT_FLAGGED


def test_numeral_not_in_the_facts_trips(lesson_pack: DomainPack) -> None:
    pack = lesson_pack  # the seed's fallback texts
    text = "Data Support Certificate classes meet on Mondays from 6 p.m. to 10 p.m."
    outcome = decide(realized(pack, text, Action.INFORM, slots("data_support", "email")), pack, LESSON)
    assert outcome.screens_fired == ("numerals",)
    assert outcome.final_reply == "A staff member must examine the handbook fact before I reply."


def test_bracketed_placeholder_trips(pack: DomainPack) -> None:
    text = "Should staff contact you by phone or by email at [your address]?"
    outcome = decide(realized(pack, text, Action.REQUEST_CONTACT, slots("data_support", "unknown")), pack)
    assert "placeholders" in outcome.screens_fired
    assert outcome.reply_screen is ReplyScreen.HELD


def test_stored_screen_names_come_back_in_screen_order() -> None:
    """A TURN item keeps the screens that fired as a set of names; any order reads back in Screen order."""
    names = [str(screen) for screen in Screen]
    assert in_screen_order(reversed(names)) == tuple(Screen)
    assert in_screen_order({"deadline", "numerals"}) == (Screen.NUMERALS, Screen.DEADLINE)
    assert in_screen_order(()) == ()
    with pytest.raises(ValueError):
        in_screen_order({"no_such_screen"})


def test_an_inform_reply_may_name_the_programs_its_rows_name_and_no_others(pack: DomainPack) -> None:
    """The rows the prompt held decide: H02 lists both programs, H06 names only its own."""
    both = "The centre enrolls two programs: the Data Support Certificate and the Forklift Operator Licence course."
    offered = screen_reply(both, Action.INFORM, slots("unknown", "unknown"), pack, ["H02"])
    assert offered.passed[Screen.PROGRAM_NAMES] and offered.passed[Screen.NUMERALS]
    other = "The Forklift Operator Licence classes meet on Monday and Wednesday evenings."
    schedule = screen_reply(other, Action.INFORM, slots("data_support", "email"), pack, ["H06"])
    assert not schedule.passed[Screen.PROGRAM_NAMES]
    # A job's rows are the ones screened: the same reply, decided, for the programs-offered topic
    job_reply = realized(pack, both, Action.INFORM, slots("data_support", "email"))
    job = job_reply.job.model_copy(update={"topic": "programs_offered", "fact_ids": ("H02",)})
    assert not decide(job_reply.model_copy(update={"job": job}), pack).fallback_used


def test_a_confirm_must_say_a_slots_value_or_label_as_a_word(pack_copy: Path) -> None:
    """ "no" is not said by "noted"; a value may be said by its label; an identifier's underscore by a space."""
    edit_domain(pack_copy, 'required_slots = ["program", "contact_channel"]',
                'required_slots = ["program", "contact_channel", "childcare_needed"]')  # fmt: skip
    edit_domain(
        pack_copy, 'label = "Child care"\n', 'label = "Child care"\nvalue_labels = { yes = "evening child care" }\n'
    )
    desk = load_pack(pack_copy)
    slots = {"program": "forklift", "contact_channel": "email", "childcare_needed": "no"}
    reply = "I noted the Forklift Operator Licence, with contact by email."
    assert not action_slots_ok(reply, Action.CONFIRM, slots, desk)  # "noted" does not say "no"
    assert action_slots_ok(reply + " No child care.", Action.CONFIRM, slots, desk)
    slots["childcare_needed"] = "yes"
    assert action_slots_ok(reply.replace(".", ", with evening child care."), Action.CONFIRM, slots, desk)
    assert action_slots_ok(reply.replace("email", "emails") + " Yes.", Action.CONFIRM, slots, desk)
    assert not action_slots_ok(reply.replace("email", "e-mailbox") + " Yes.", Action.CONFIRM, slots, desk)


def test_a_deadline_ends_its_turn_even_after_a_pack_change_removed_a_slot_value(pack: DomainPack) -> None:
    """A turn stored before a pack change names a program the pack no longer has: its deadline still ends
    it with the fallback (the value reads as unknown), where it raised and left the turn pending."""
    from dialogue.realize import ReplyDeadline
    from dialogue.screens import deadline_outcome

    deadline = ReplyDeadline(
        conversation_id=uuid4(), turn_id=3, action=Action.CONFIRM, due_at=datetime.now(UTC),
        slots={"program": "welding", "childcare_needed": "unknown", "contact_channel": "email"},
    )  # fmt: skip
    outcome = deadline_outcome(deadline, pack)
    assert outcome.fallback_used and outcome.screens_fired == (Screen.DEADLINE,)
    assert "{" not in outcome.final_reply and "welding" not in outcome.final_reply


def test_a_stored_state_is_read_under_todays_frame(pack: DomainPack) -> None:
    stored = {"program": "welding", "contact_channel": "email", "reminder": "sms"}
    state, changed = DialogueState.read_stored(pack.frame, stored, "schedule")
    assert state.slots == {"program": "unknown", "childcare_needed": "unknown", "contact_channel": "email"}
    assert state.waiting_topic == "schedule"
    assert changed == ("program", "childcare_needed", "reminder")
    same = {"program": "forklift", "childcare_needed": "no", "contact_channel": "phone"}
    assert DialogueState.read_stored(pack.frame, same) == (DialogueState(slots=same), ())


def test_a_cold_deadline_adds_the_desks_line_and_holds_the_turn_for_a_persons_check(pack: DomainPack) -> None:
    """Issue 42: the fallback of a turn that found the realizer cold says a person will check it, and is
    held for that check (pending, the fallback as the draft the staff review); the desk's line comes from
    its pack, else the default."""
    from types import SimpleNamespace

    from dialogue.realize import ReplyDeadline
    from dialogue.replies import COLD_REPLY_LINE, cold_reply_line
    from dialogue.screens import deadline_outcome

    slots = {"program": "forklift", "childcare_needed": "unknown", "contact_channel": "email"}
    warm = ReplyDeadline(
        conversation_id=uuid4(), turn_id=2, action=Action.CONFIRM, due_at=datetime.now(UTC), slots=slots
    )
    cold = warm.model_copy(update={"realizer_cold": True})
    plain, held = deadline_outcome(warm, pack), deadline_outcome(cold, pack)
    assert plain.human_review is HumanReview.NOT_APPLICABLE and plain.draft is None
    assert held.final_reply == f"{plain.final_reply} {COLD_REPLY_LINE}"
    assert held.fallback_used and held.screens_fired == (Screen.DEADLINE,)
    assert held.human_review is HumanReview.PENDING
    assert held.draft is not None and held.draft.text == plain.final_reply
    own = SimpleNamespace(spec=SimpleNamespace(domain=SimpleNamespace(cold_reply_line="Staff read this one.")))
    assert cold_reply_line(own) == "Staff read this one."  # type: ignore[arg-type]
    assert cold_reply_line(pack) == (pack.spec.domain.cold_reply_line or COLD_REPLY_LINE)
