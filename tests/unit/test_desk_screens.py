"""The desk profile's eight screens, each on a draft that should fire it and one that should not."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest

from dialogue.actions import DESK_SCREENS, FIXED_ACTIONS, LESSON_SCREENS, Action, Screen, ScreenProfile
from dialogue.pack import DomainPack, PackError, load_pack
from dialogue.screens import screen_reply

DESK = ScreenProfile.DESK


def slots(program: str = "forklift", channel: str = "email") -> dict[str, str]:
    return {"program": program, "childcare_needed": "unknown", "contact_channel": channel}


def fired(pack: DomainPack, text: str, action: Action, state: dict[str, str], topic: str | None = None) -> set[str]:
    rows = pack.passage_ids_for(action, state["program"], topic)
    return {str(screen) for screen in screen_reply(text, action, state, pack, rows, DESK).fired}


CONFIRM_OK = "I recorded the Forklift Operator Licence, with contact by email."

CASES = [
    # (screen, a draft that fires it, action, state, topic)
    ("status_claims", "You are now enrolled in the Forklift Operator Licence course, with contact by email.",
     Action.CONFIRM, slots(), None),
    ("status_claims", "Forklift Operator Licence course sessions run on Saturdays. Enrollment is open via email.",
     Action.INFORM, slots(), "schedule"),
    ("personal_questions", "Should staff contact you by phone or by email? Please also tell us how old you are.",
     Action.REQUEST_CONTACT, slots(channel="unknown"), None),
    ("unknown_programs", "I recorded the Forklift Operator Licence and the Welding Certificate, with contact by email.",
     Action.CONFIRM, slots(), None),
    ("date_words", "I recorded the Forklift Operator Licence, with contact by email. Classes start next week.",
     Action.CONFIRM, slots(), None),
    ("third_person", "Should the applicant be contacted by phone or by email?",
     Action.REQUEST_CONTACT, slots(channel="unknown"), None),
    ("third_person", "Staff should contact them by phone or by email. Which is it?",
     Action.REQUEST_CONTACT, slots(channel="unknown"), None),
    ("unknown_programs", "I RECORDED THE FORKLIFT OPERATOR LICENCE AND THE WELDING CERTIFICATE, WITH CONTACT BY EMAIL.",
     Action.CONFIRM, slots(), None),
    ("request_asks", "Staff can contact you by phone or by email.",
     Action.REQUEST_CONTACT, slots(channel="unknown"), None),
    ("boilerplate", "As an AI, I recorded the Forklift Operator Licence, with contact by email.",
     Action.CONFIRM, slots(), None),
    ("contact_promises", "I recorded the Forklift Operator Licence, with contact by email. Staff will call you.",
     Action.CONFIRM, slots(), None),
    ("contact_promises", "I recorded the Forklift Operator Licence, with contact by email. Staff will email you soon.",
     Action.CONFIRM, slots(), None),
]  # fmt: skip


@pytest.mark.parametrize(("screen", "text", "action", "state", "topic"), CASES)
def test_each_desk_screen_fires_on_its_kind_of_draft(
    pack: DomainPack, screen: str, text: str, action: Action, state: dict[str, str], topic: str | None
) -> None:
    assert screen in fired(pack, text, action, state, topic)
    # and none of the lesson's six sees it
    rows = pack.passage_ids_for(action, state["program"], topic)
    assert not screen_reply(text, action, state, pack, rows, ScreenProfile.LESSON).fired


@pytest.mark.parametrize(
    ("text", "action", "state", "topic"),
    [
        (CONFIRM_OK, Action.CONFIRM, slots(), None),
        ("Should staff contact you by phone or by email?", Action.REQUEST_CONTACT, slots(channel="unknown"), None),
        (
            "Could you tell me whether staff should contact you by phone or by email?",
            Action.REQUEST_CONTACT,
            slots(channel="unknown"),
            None,
        ),
        ("I RECORDED THE FORKLIFT OPERATOR LICENCE, WITH CONTACT BY EMAIL.", Action.CONFIRM, slots(), None),
        (
            "Which program would you like: the Data Support Certificate or the Forklift Operator Licence course?",
            Action.REQUEST_PROGRAM,
            slots(program="unknown", channel="unknown"),
            None,
        ),
        # The rows' own words pass: the weekday, "the applicant", "a seat is held"
        (
            "Forklift Operator Licence course sessions run on Saturdays from 8 a.m. to 4 p.m. for 3 weeks, outdoors.",
            Action.INFORM,
            slots(),
            "schedule",
        ),
        (
            "A seat is held only after a staff member checks eligibility documents. Staff contact each applicant by "
            "the channel the applicant chose.",
            Action.INFORM,
            slots(),
            "enrollment_process",
        ),
        (
            "I recorded the Forklift Operator Licence, with contact by email. Staff will email you.",
            Action.CONFIRM,
            slots(),
            None,
        ),
        (
            "Staff will contact you by phone or by email, whichever you choose. Which do you prefer?",
            Action.REQUEST_CONTACT,
            slots(channel="unknown"),
            None,
        ),
    ],
)
def test_good_drafts_pass_every_desk_screen(
    pack: DomainPack, text: str, action: Action, state: dict[str, str], topic: str | None
) -> None:
    assert fired(pack, text, action, state, topic) == set()


@pytest.mark.parametrize(
    ("text", "action", "state", "profiles"),
    [
        ("You\u2019re enrolled. I recorded the Forklift Operator Licence, with contact by email.", Action.CONFIRM,
         slots(), {DESK}),
        ("I recorded the Forklift Operator Licence, with contact by email. We\u2019ll text you soon.", Action.CONFIRM,
         slots(), {DESK}),
        ("Which program would you like: the Data Support Certificate or the Forklift Operator Licence course? And "
         "what is your child\u2019s name?", Action.REQUEST_PROGRAM, slots(program="unknown", channel="unknown"),
         {DESK, ScreenProfile.LESSON}),
    ],
)  # fmt: skip
def test_typographic_apostrophes_are_screened_as_plain_ones(
    pack: DomainPack, text: str, action: Action, state: dict[str, str], profiles: set[ScreenProfile]
) -> None:
    rows = pack.passage_ids_for(action, state["program"])
    for profile in ScreenProfile:
        curly = screen_reply(text, action, state, pack, rows, profile).fired
        plain = screen_reply(text.replace("\u2019", "'"), action, state, pack, rows, profile).fired
        assert curly == plain
        assert bool(curly) == (profile in profiles), (profile, curly)


def test_the_profiles_run_the_screens_they_name(pack: DomainPack) -> None:
    lesson = screen_reply(CONFIRM_OK, Action.CONFIRM, slots(), pack, profile=ScreenProfile.LESSON)
    desk = screen_reply(CONFIRM_OK, Action.CONFIRM, slots(), pack, profile=DESK)
    assert tuple(lesson.passed) == LESSON_SCREENS
    assert tuple(desk.passed) == DESK_SCREENS
    assert set(DESK_SCREENS) - set(LESSON_SCREENS) == {
        Screen.STATUS_CLAIMS, Screen.PERSONAL_QUESTIONS, Screen.UNKNOWN_PROGRAMS, Screen.DATE_WORDS,
        Screen.THIRD_PERSON, Screen.REQUEST_ASKS, Screen.BOILERPLATE, Screen.CONTACT_PROMISES,
    }  # fmt: skip
    assert pack.spec.screens.profile is DESK, "the pack's default is the desk profile"


def test_the_desk_profile_without_its_words_names_the_table(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    text = domain.read_text()
    start = text.index("[screens.desk]")
    end = text.index("# ----", start)
    domain.write_text(text[:start] + text[end:])
    with pytest.raises(PackError, match=r"domain\.toml, table screens, field desk: the desk profile needs"):
        load_pack(pack_copy)


def test_channel_words_must_name_the_contact_slots_values(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    domain.write_text(domain.read_text().replace("\nemail = '\\b(?:e-?mail", "\npigeon = '\\b(?:e-?mail", 1))
    with pytest.raises(PackError, match=r"table screens\.desk, field channel_patterns: must name exactly"):
        load_pack(pack_copy)


def test_a_pack_without_desk_words_runs_the_lesson_profile_only(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    text = domain.read_text()
    start = text.index("[screens.desk]")
    end = text.index("# ----", start)
    domain.write_text(text[:start].replace('profile = "desk"\n', "") + text[end:])
    bare = load_pack(pack_copy)
    state = dict.fromkeys(bare.frame.slot_names, "unknown")
    assert bare.spec.screens.profile is ScreenProfile.LESSON
    with pytest.raises(ValueError, match="only the lesson profile"):
        screen_reply("Hello?", Action.REQUEST_PROGRAM, state, bare, profile=DESK)


LIBRARY = Path(__file__).resolve().parents[2] / "data" / "harbourview_library"


def library_state(service: str = "library_card", channel: str = "sms") -> dict[str, str]:
    return {"service": service, "visit_part_of_day": "morning", "reply_channel": channel}


# The second desk brings its own words: a library's status claims, services and channels.
LIBRARY_CASES = [
    ("status_claims", "Your library card is ready, and we will text you.", Action.CONFIRM),
    ("status_claims", "The meeting room has been reserved for you on your chosen morning.", Action.CONFIRM),
    ("status_claims", "Your overdue fines have been waived.", Action.CONFIRM),
    ("unknown_programs", "I recorded the Harbourview library card and a Museum Pass, with replies by SMS.",
     Action.CONFIRM),
    ("contact_promises", "I recorded the Harbourview library card, with replies by SMS. We will post you a letter.",
     Action.CONFIRM),
    ("third_person", "Should the patron get replies by SMS or by post?", Action.REQUEST_CONTACT),
]  # fmt: skip


@pytest.mark.parametrize(("screen", "text", "action"), LIBRARY_CASES)
def test_the_library_desk_screens_with_its_own_words(screen: str, text: str, action: Action) -> None:
    library = load_pack(LIBRARY)
    assert library.spec.screens.profile is DESK
    state = library_state(channel="unknown" if action is Action.REQUEST_CONTACT else "sms")
    rows = library.passage_ids_for(action, state["service"])
    assert screen in {str(name) for name in screen_reply(text, action, state, library, rows, DESK).fired}


def test_the_library_desks_template_wording_passes_its_desk_screens() -> None:
    from dialogue.realize import build_realize_job
    from dialogue.state import DialogueState
    from realizer.engines import TemplateEngine

    library = load_pack(LIBRARY)
    engine = TemplateEngine(library)
    now = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    checked = 0
    for service in ("library_card", "meeting_room"):
        for channel in ("sms", "postal", "unknown"):
            state = DialogueState.from_slots(library.frame, library_state(service, channel))
            for action in (a for a in FIXED_ACTIONS if a.uses_model):
                topics = [topic.name for topic in library.spec.topics] if action is Action.INFORM else [None]
                for topic in topics:
                    job = build_realize_job(
                        conversation_id=UUID(int=1), turn_id=1, state=state, action=action, pack=library,
                        now=now, topic=topic,
                    )  # fmt: skip
                    text = engine.word(job)
                    report = screen_reply(text, action, job.slots, library, job.fact_ids, DESK)
                    assert not report.fired, (action, topic, text, report.fired)
                    checked += 1
    assert checked >= 12
