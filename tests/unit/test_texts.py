"""Every fixed text of every desk renders for every state its frame allows, in either understanding
profile; a placeholder that names no slot is refused at load; a slot's values have labels and confirm
phrases; a topic may carry its own text for its abstention, and the desk profile its own texts."""

from __future__ import annotations

import itertools
import string
from pathlib import Path

import pytest
from pack_files import edit_domain

from dialogue.actions import Action
from dialogue.pack import PackError, load_pack
from dialogue.replies import fixed_reply, reply_fields
from dialogue.state import DialogueState

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"
DESKS = sorted(path.parent for path in DATA.glob("*/domain.toml"))


@pytest.mark.parametrize("profile", ["lesson", "desk"])
@pytest.mark.parametrize("desk", DESKS, ids=[desk.name for desk in DESKS])
def test_every_text_renders_for_every_state(desk: Path, profile: str) -> None:
    pack = load_pack(desk, profile=profile)
    rendered = 0
    for values in itertools.product(*(slot.values for slot in pack.frame.slots)):
        state = DialogueState.from_slots(pack.frame, dict(zip(pack.frame.slot_names, values, strict=True)))
        for action in pack.actions:
            topics = (
                [None, *(topic.name for topic in pack.spec.topics)] if action is Action.ABSTAIN_HAND_OFF else [None]
            )
            for topic in topics:
                text = fixed_reply(action, state, pack, topic)
                assert text.strip() and "{" not in text and "}" not in text, (action, values, topic)
                rendered += 1
            spec = pack.action(action)
            if spec.template_text:
                fields = {
                    name.partition(".")[0] for _, name, _, _ in string.Formatter().parse(spec.template_text) if name
                }
                assert fields <= {*pack.frame.slot_names, "program_display", "facts"}
                assert "{" not in spec.template_text.format_map(reply_fields(state.slots, pack, "facts"))
    assert rendered >= len(pack.actions)


def test_a_placeholder_that_names_no_slot_is_refused(pack_copy: Path) -> None:
    edit_domain(pack_copy, 'fixed_text = "Should staff contact you by phone or by email?"',
          'fixed_text = "Should staff contact you by {reminder}?"')  # fmt: skip
    with pytest.raises(
        PackError, match=r"domain.toml, table actions.request_contact, field fixed_text: \{reminder\} names no slot"
    ):
        load_pack(pack_copy)


def test_unbalanced_braces_are_refused(pack_copy: Path) -> None:
    edit_domain(pack_copy, 'fixed_text = "Should staff contact you by phone or by email?"',
          'fixed_text = "Should staff contact you by {contact_channel?"')  # fmt: skip
    with pytest.raises(PackError, match=r"field fixed_text: unbalanced braces"):
        load_pack(pack_copy)


def test_a_topic_may_carry_its_own_abstention_text(pack_copy: Path) -> None:
    own = 'fixed_text = "Parking is run by the city. A staff member will follow up."\n'
    edit_domain(pack_copy, 'name = "parking"\ncovered = false\n', 'name = "parking"\ncovered = false\n' + own)
    pack = load_pack(pack_copy)
    state = DialogueState.new(pack.frame)
    assert fixed_reply(Action.ABSTAIN_HAND_OFF, state, pack, "parking").startswith("Parking is run by the city.")
    assert (
        fixed_reply(Action.ABSTAIN_HAND_OFF, state, pack, "transport")
        == pack.action(Action.ABSTAIN_HAND_OFF).fixed_text
    )
    assert fixed_reply(Action.ABSTAIN_HAND_OFF, state, pack) == pack.action(Action.ABSTAIN_HAND_OFF).fixed_text


def test_a_topic_text_with_a_stray_placeholder_is_refused(pack_copy: Path) -> None:
    edit_domain(
        pack_copy,
        'name = "parking"\ncovered = false\n',
        'name = "parking"\ncovered = false\nfixed_text = "See {lot}."\n',
    )
    with pytest.raises(PackError, match=r"table topics, entry 1, field fixed_text: \{lot\} names no slot"):
        load_pack(pack_copy)


@pytest.mark.parametrize(
    ("placeholder", "message"),
    [
        ("{contact_channel.colour}", r"\{contact_channel.colour\} names no slot"),
        ("{facts.label}", r"\{facts.label\} names no slot"),
        ("{contact_channel:>9}", r"\{contact_channel\} may hold only a name"),
        ("{contact_channel[0]}", r"\{contact_channel\[0\]\} may hold only a name"),
    ],
)
def test_a_placeholder_may_name_only_a_slots_label_or_phrase(pack_copy: Path, placeholder: str, message: str) -> None:
    edit_domain(pack_copy, 'fixed_text = "Should staff contact you by phone or by email?"',
                f'fixed_text = "Should staff contact you by {placeholder}?"')  # fmt: skip
    with pytest.raises(PackError, match=r"table actions.request_contact, field fixed_text: " + message):
        load_pack(pack_copy)


def test_a_value_reads_by_its_label_and_a_confirmation_adds_its_phrase(pack_copy: Path) -> None:
    child_care = 'label = "Child care"\n'
    labels = 'value_labels = { yes = "child care needed" }\nconfirm_phrases = { yes = ", with evening child care" }\n'
    edit_domain(pack_copy, child_care, child_care + labels)
    edit_domain(pack_copy, 'fixed_text = "I recorded the {program_display}, with contact by {contact_channel}."',
                'fixed_text = "I recorded the {program_display}{childcare_needed.phrase}, with contact by '
                '{contact_channel.label}: {childcare_needed.label}."')  # fmt: skip
    pack = load_pack(pack_copy, profile="lesson")  # the lesson's confirm text, which the edit above changed
    state = DialogueState.new(pack.frame).with_updates({"program": "forklift", "contact_channel": "email"})
    assert fixed_reply(Action.CONFIRM, state, pack) == (
        "I recorded the Forklift Operator Licence, with contact by email: unknown."
    )
    state = state.with_updates({"childcare_needed": "yes"})
    assert fixed_reply(Action.CONFIRM, state, pack) == (
        "I recorded the Forklift Operator Licence, with evening child care, with contact by email: child care needed."
    )


def test_a_label_for_a_value_the_slot_never_holds_is_refused(pack_copy: Path) -> None:
    child_care = 'label = "Child care"\n'
    edit_domain(pack_copy, child_care, child_care + 'value_labels = { maybe = "perhaps" }\n')
    with pytest.raises(PackError, match=r"value_labels: childcare_needed never holds \['maybe'\]"):
        load_pack(pack_copy)


def test_the_desk_profile_reads_the_desks_own_hand_off_and_the_lesson_the_seeds(pack_copy: Path) -> None:
    lesson, desk = load_pack(pack_copy, profile="lesson"), load_pack(pack_copy, profile="desk")
    state = DialogueState.new(lesson.frame)
    assert fixed_reply(Action.HAND_OFF, state, lesson) == (
        "I will route this to a staff member. This scripted lesson stores no contact details."
    )
    assert "scripted lesson" not in fixed_reply(Action.HAND_OFF, state, desk)
    assert fixed_reply(Action.REFUSE, state, desk) == fixed_reply(
        Action.REFUSE, state, lesson
    )  # no desk text: the same


def test_a_desk_text_with_a_stray_placeholder_is_refused(pack_copy: Path) -> None:
    edit_domain(pack_copy, '[actions.hand_off.desk]\nfixed_text = "', '[actions.hand_off.desk]\nfixed_text = "{who} ')
    with pytest.raises(PackError, match=r"table actions.hand_off.desk, field fixed_text: \{who\} names no slot"):
        load_pack(pack_copy)
