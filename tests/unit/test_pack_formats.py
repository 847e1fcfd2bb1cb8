"""Packs keep loading: a pack written for an earlier format loads with a default for what later formats
added, a pack that declares a format is held to it in one line naming file, table and key, and
check-pack says which format it read and what it defaulted (dialogue.pack.formats)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest
from pack_files import edit_domain

from devstack.pack_check import STARTER_DIR, check_pack
from dialogue.actions import Action
from dialogue.pack import PackError, load_pack
from dialogue.pack.formats import CURRENT_FORMAT, DEFAULT_ACTIONS, PackFormat
from dialogue.policy import next_state
from dialogue.replies import fixed_reply
from dialogue.state import DialogueState
from dialogue.understanding import understand

ROOT = Path(__file__).resolve().parents[2]
# Riverton's domain.toml and handbook.csv as of commit f73972d, before [actions.clarify], [actions.next_step],
# [contact] and [hours] (tests/fixtures/riverton_before_clarify/README.md).
BEFORE_CLARIFY = ROOT / "tests" / "fixtures" / "riverton_before_clarify"
SHIPPED = [*sorted(path.parent for path in (ROOT / "data").glob("*/domain.toml")), STARTER_DIR]


def _toml(pack_dir: Path) -> dict:
    return tomllib.loads((pack_dir / "domain.toml").read_text(encoding="utf-8"))


@pytest.fixture
def old_pack(tmp_path: Path) -> Path:
    """A copy of the fixture pack, for tests that edit it."""
    target = tmp_path / "old_pack"
    shutil.copytree(BEFORE_CLARIFY, target)
    return target


@pytest.mark.parametrize("profile", ["lesson", "desk"])
def test_a_pack_of_an_earlier_format_loads_with_the_defaults(profile: str) -> None:
    written = _toml(BEFORE_CLARIFY)  # the fixture is of that format: none declared, none of what came later
    assert "format_version" not in written and not {"contact", "hours"} & set(written)
    assert not {"clarify", "next_step"} & set(written["actions"])
    pack = load_pack(BEFORE_CLARIFY, profile=profile)
    assert pack.pack_format == PackFormat(
        declared=None, read_as=1, defaulted=("[actions.clarify]", "[actions.next_step]")
    )
    assert pack.spec.format_version is None
    for action in (Action.CLARIFY, Action.NEXT_STEP):
        default = DEFAULT_ACTIONS[str(action)][1]
        assert (pack.action(action).instruction, pack.action(action).fixed_text) == (
            default["instruction"],
            default["fixed_text"],
        )
    # What the pack wrote stays its own.
    assert pack.action(Action.HAND_OFF).fixed_text == _toml(BEFORE_CLARIFY)["actions"]["hand_off"]["fixed_text"]
    assert pack.spec.contact is None and pack.spec.hours is None


def test_the_earlier_pack_clarifies_a_correction_with_the_default_text() -> None:
    """The turn clarify was made for: a correction the desk cannot read once a slot holds a value. The old
    pack answers it with the default text and never confirms the old value."""
    pack = load_pack(BEFORE_CLARIFY, profile="desk")
    state = DialogueState.new(pack.frame)
    state, action = next_state(state, understand("I want the forklift course", pack), pack)
    assert action == pack.frame.slot("contact_channel").request_action
    state, action = next_state(state, understand("sorry, I meant the other one", pack), pack)
    assert action is Action.CLARIFY
    assert fixed_reply(action, state, pack) == DEFAULT_ACTIONS["clarify"][1]["fixed_text"]


def test_a_declared_format_is_held_to_what_it_needs(old_pack: Path) -> None:
    """Declared, a format refuses a pack that lacks what it needs, in one line naming the file, the table
    and the keys to add, and still gives the defaults of the formats after it."""
    domain = old_pack / "domain.toml"
    edit_domain(old_pack, "[domain]\n", f"format_version = {CURRENT_FORMAT}\n\n[domain]\n")
    with pytest.raises(PackError) as raised:
        load_pack(old_pack)
    assert str(raised.value) == (
        f"{domain}, table actions: lacks ['clarify', 'next_step']; add [actions.clarify] and [actions.next_step], "
        "each with instruction and fixed_text"
    )
    edit_domain(old_pack, f"format_version = {CURRENT_FORMAT}\n", "format_version = 3\n")
    with pytest.raises(PackError) as raised:
        load_pack(old_pack)
    assert str(raised.value) == (
        f"{domain}, table actions: lacks ['clarify']; add [actions.clarify] with instruction and fixed_text"
    )
    edit_domain(
        old_pack,
        "[actions.confirm]\n",
        '[actions.clarify]\ninstruction = "Fixed."\nfixed_text = "Say that again?"\n\n[actions.confirm]\n',
    )
    pack = load_pack(old_pack)
    assert pack.pack_format == PackFormat(declared=3, read_as=3, defaulted=("[actions.next_step]",))
    assert pack.action(Action.CLARIFY).fixed_text == "Say that again?"


def test_a_current_pack_lacking_clarify_fails_in_one_line_naming_file_table_and_key(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    text = domain.read_text(encoding="utf-8")
    start = text.index("[actions.clarify]\n")
    end = text.index("[actions.", text.index("[actions.clarify.desk]\n") + 1)
    domain.write_text(text[:start] + text[end:], encoding="utf-8")
    assert "clarify" not in _toml(pack_copy)["actions"]
    with pytest.raises(PackError) as raised:
        load_pack(pack_copy)
    message = str(raised.value)
    assert message == (
        f"{domain}, table actions: lacks ['clarify']; add [actions.clarify] with instruction and fixed_text"
    )
    assert "\n" not in message


def test_a_missing_key_with_no_default_says_what_to_add_and_where(pack_copy: Path) -> None:
    edit_domain(pack_copy, 'label = "Program"\n', "")
    with pytest.raises(PackError) as raised:
        load_pack(pack_copy)
    assert str(raised.value) == (
        f"{pack_copy / 'domain.toml'}, table frame.slots, entry 1, field label: Field required; "
        "add label to entry 1 of [[frame.slots]]"
    )


def test_a_missing_table_with_no_default_says_what_to_add(old_pack: Path) -> None:
    domain = old_pack / "domain.toml"
    text = domain.read_text(encoding="utf-8")
    start = text.index("[understanding.negation]\n")
    domain.write_text(text[:start] + text[text.index("\n[", start + 1) + 1 :], encoding="utf-8")
    with pytest.raises(PackError) as raised:
        load_pack(old_pack)
    assert str(raised.value) == (
        f"{domain}, table understanding, field negation: Field required; add [understanding.negation] with "
        "cue_pattern, after_cue_pattern, scope_break_pattern and window_words"
    )


def test_format_1_leaves_unread_a_request_table_no_slot_asks_with(old_pack: Path) -> None:
    """Format 1 wanted [actions.request_contact] whether a slot asked with it or not; from format 2 a
    request table no slot asks with is refused."""
    edit_domain(old_pack, 'request_action = "request_contact"\n', "")
    pack = load_pack(old_pack)
    assert pack.pack_format is not None and pack.pack_format.left_unread == ("[actions.request_contact]",)
    assert Action.REQUEST_CONTACT not in pack.spec.actions and pack.frame.requested_slots[-1].name == "program"
    edit_domain(old_pack, "[domain]\n", "format_version = 2\n\n[domain]\n")
    with pytest.raises(PackError, match=r"table actions: \['request_contact'\] ask for no slot"):
        load_pack(old_pack)


@pytest.mark.parametrize("written", ["9", "0", '"4"', "true"])
def test_a_format_this_release_does_not_read_is_named(old_pack: Path, written: str) -> None:
    edit_domain(old_pack, "[domain]\n", f"format_version = {written}\n\n[domain]\n")
    with pytest.raises(PackError) as raised:
        load_pack(old_pack)
    assert str(raised.value).startswith(f"{old_pack / 'domain.toml'}, field format_version: ")
    assert str(raised.value).endswith(
        f"is no format this release reads; write a whole number from 1 to {CURRENT_FORMAT}"
    )


@pytest.mark.parametrize("desk", SHIPPED, ids=[desk.name for desk in SHIPPED])
def test_the_shipped_packs_declare_the_current_format_and_need_no_default(desk: Path) -> None:
    assert _toml(desk)["format_version"] == CURRENT_FORMAT
    assert load_pack(desk).pack_format == PackFormat(declared=CURRENT_FORMAT, read_as=CURRENT_FORMAT)


def test_check_pack_says_the_format_it_read_and_what_it_defaulted() -> None:
    (old,) = check_pack(BEFORE_CLARIFY, only=())
    assert old.passed and old.detail.endswith(
        "; format 1 (no format_version: the earliest); defaulted [actions.clarify], [actions.next_step]"
    )
    (current,) = check_pack(ROOT / "data" / "riverton", only=())
    assert current.passed and current.detail.endswith(f"; format {CURRENT_FORMAT}")
