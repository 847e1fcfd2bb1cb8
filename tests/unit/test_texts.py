"""Every fixed text of every desk renders for every state its frame allows, a placeholder that names
no slot is refused at load, and a topic may carry its own text for its abstention."""

from __future__ import annotations

import itertools
import string
from pathlib import Path

import pytest
from pack_files import edit_domain

from dialogue.actions import Action
from dialogue.pack import PackError, load_pack
from dialogue.replies import fixed_reply
from dialogue.state import DialogueState

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "data"
DESKS = sorted(path.parent for path in DATA.glob("*/domain.toml"))


@pytest.mark.parametrize("desk", DESKS, ids=[desk.name for desk in DESKS])
def test_every_text_renders_for_every_state(desk: Path) -> None:
    pack = load_pack(desk)
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
                fields = {name for _, name, _, _ in string.Formatter().parse(spec.template_text) if name}
                assert fields <= {*pack.frame.slot_names, "program_display", "facts"}
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
