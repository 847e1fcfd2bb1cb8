"""The domain pack loads, holds the seed's texts verbatim, and a malformed pack names file and row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dialogue.actions import Action
from dialogue.pack import DomainPack, PackError, load_pack, read_scripted_turns

ROOT = Path(__file__).resolve().parents[2]

SEED_FIXED_TEXTS = {
    Action.REFUSE: "I cannot approve seats or replace staff checks. A staff member must examine that request.",
    Action.HAND_OFF: "I will route this to a staff member. This scripted lesson stores no contact details.",
    Action.ABSTAIN_HAND_OFF: "The handbook passages here do not answer that. I will route the question to staff.",
    Action.REQUEST_PROGRAM: (
        "Which program would you like: the Data Support Certificate or the Forklift Operator Licence course?"
    ),
    Action.REQUEST_CONTACT: "Should staff contact you by phone or by email?",
    Action.INFORM: "A staff member must examine the handbook fact before I reply.",
}
H06 = (
    "Data Support Certificate classes meet on Monday and Wednesday evenings from 6 p.m. to 9 p.m. "
    "The course lasts 12 weeks."
)


def test_fixed_texts_are_the_seeds_in_the_lesson_profile() -> None:
    lesson = load_pack(ROOT / "data" / "riverton", profile="lesson")
    for action, text in SEED_FIXED_TEXTS.items():
        assert lesson.action(action).fixed_text == text
    assert lesson.spec.actions[Action.HAND_OFF].fixed_text == SEED_FIXED_TEXTS[Action.HAND_OFF]


def test_handbook_holds_h06_verbatim_and_no_parking_row(pack: DomainPack) -> None:
    assert pack.passages["H06"].text == H06
    assert {"H03", "H11", "H13"} <= set(pack.passages)
    assert not any("parking" in row.text.lower() or "parking" in row.topic for row in pack.handbook)


def test_fact_rows_per_action_are_the_seeds(pack: DomainPack) -> None:
    assert pack.passage_ids_for(Action.INFORM, "data_support", "schedule") == ("H06",)
    assert pack.passage_ids_for(Action.INFORM, "forklift", "schedule") == ("H11",)
    assert pack.passage_ids_for(Action.INFORM, "forklift") == (), "inform without a topic has no rows"
    assert pack.fact_ids_for(Action.CONFIRM, "data_support") == ("H03", "H06", "H13")
    assert pack.fact_ids_for(Action.CONFIRM, "forklift") == ("H03", "H11")
    assert pack.fact_ids_for(Action.REQUEST_CONTACT, "data_support") == ()


def test_frame_is_the_seeds(pack: DomainPack) -> None:
    assert [(slot.name, slot.values) for slot in pack.frame.slots] == [
        ("program", ("data_support", "forklift", "unknown")),
        ("childcare_needed", ("yes", "no", "unknown")),
        ("contact_channel", ("phone", "email", "unknown")),
    ]


def test_scripted_turns_load(scripted_turns: list) -> None:
    assert len(scripted_turns) == 13
    assert scripted_turns[5].user_utterance == "Data Support Certificate, please, and I need childcare."


def test_handbook_row_without_quotes_names_file_and_line(pack_copy: Path) -> None:
    handbook = pack_copy / "handbook.csv"
    handbook.write_text(handbook.read_text() + "H99,fees,Costs, and more,Handbook,note\n")
    with pytest.raises(PackError, match=r"handbook\.csv, row at line 17: wrong number of fields"):
        load_pack(pack_copy)


def test_bad_passage_id_names_file_and_line(pack_copy: Path) -> None:
    handbook = pack_copy / "handbook.csv"
    handbook.write_text(handbook.read_text() + "not an id,fees,Costs.,Handbook,note\n")
    with pytest.raises(PackError, match=r"handbook\.csv, row at line 17: field passage_id"):
        load_pack(pack_copy)


def test_fact_rows_naming_a_missing_passage_fail(pack_copy: Path) -> None:
    handbook = pack_copy / "handbook.csv"
    handbook.write_text("\n".join(line for line in handbook.read_text().splitlines() if not line.startswith("H03")))
    with pytest.raises(PackError, match=r"domain\.toml, table fact_rows, entry 1, field passage_ids: .*\['H03'\]"):
        load_pack(pack_copy)


def test_a_topic_row_that_does_not_exist_names_file_table_and_field(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    text = domain.read_text()
    domain.write_text(text.replace('forklift = ["H11"] }', 'forklift = ["H99"] }'))
    with pytest.raises(PackError) as raised:
        load_pack(pack_copy)
    assert re.search(
        r"domain\.toml, table topics, entry \d+, field program_rows\.forklift: names H99", str(raised.value)
    )


def test_a_topic_without_rows_names_file_table_and_field(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    domain.write_text(domain.read_text().replace('rows = ["H05"]\n', ""))
    with pytest.raises(
        PackError, match=r"domain\.toml, table topics, entry \d+, field rows: a covered topic needs rows"
    ):
        load_pack(pack_copy)


def test_a_topic_pattern_matching_empty_text_names_file_table_and_field(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    text = domain.read_text()
    domain.write_text(
        text.replace("covered = false\npattern = '\\bparking", "covered = false\npattern = 'x*|\\bparking", 1)
    )
    with pytest.raises(PackError, match=r"domain\.toml, table topics, entry 1, field pattern: .*empty text"):
        load_pack(pack_copy)


def test_an_unknown_slot_in_a_rule_names_file_table_and_field(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    domain.write_text(domain.read_text().replace('slot = "contact_channel"', 'slot = "pager"', 1))
    with pytest.raises(
        PackError, match=r"domain\.toml, table understanding\.slot_rules, entry \d+, field slot: 'pager'"
    ):
        load_pack(pack_copy)


def test_a_topic_for_an_unknown_program_names_file_table_and_field(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    domain.write_text(
        domain.read_text().replace('program_rows = { forklift = ["H10"] }', 'program_rows = { crane = ["H10"] }')
    )
    with pytest.raises(
        PackError, match=r"domain\.toml, table topics, entry \d+, field program_rows: 'crane' is no program"
    ):
        load_pack(pack_copy)


def test_bad_regular_expression_names_the_entry(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    domain.write_text(domain.read_text().replace("pattern = 'forklift'", "pattern = 'fork(lift'"))
    with pytest.raises(PackError, match=r"domain\.toml, table understanding\.slot_rules, entry 1, field pattern"):
        load_pack(pack_copy)


def test_unknown_slot_value_in_a_rule_fails(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    domain.write_text(domain.read_text().replace('value = "forklift"', 'value = "crane"'))
    with pytest.raises(PackError, match=r"domain\.toml.*crane"):
        load_pack(pack_copy)


def test_scripted_turn_with_unknown_action_names_the_line(tmp_path: Path) -> None:
    turns = tmp_path / "turns.csv"
    turns.write_text("conversation_id,turn_id,user_utterance,expected_action\nC1,1,Hello there,approve\n")
    with pytest.raises(PackError, match=r"turns\.csv, row at line 2: field expected_action") as raised:
        read_scripted_turns(turns)
    assert "Hello there" not in str(raised.value)


def test_scripted_expectations_are_the_frames_slots(tmp_path: Path, pack: DomainPack) -> None:
    turns = tmp_path / "turns.csv"
    turns.write_text("conversation_id,turn_id,user_utterance,expected_contact_channel\nC1,1,Hello,email\nC1,2,Hi,\n")
    first, second = read_scripted_turns(turns, pack.frame)
    assert (first.expected_slots, second.expected_slots) == ({"contact_channel": "email"}, {})
    turns.write_text("conversation_id,turn_id,user_utterance,expected_colour\nC1,1,Hello,red\n")
    with pytest.raises(PackError, match=r"no slot of the frame: \['colour'\]"):
        read_scripted_turns(turns, pack.frame)
    turns.write_text("conversation_id,turn_id,user_utterance,expected_contact_channel\nC1,1,Hello,pigeon\n")
    with pytest.raises(PackError, match=r"line 2: expected_contact_channel"):
        read_scripted_turns(turns, pack.frame)
    turns.write_text("conversation_id,turn_id,user_utterance,notes\nC1,1,Hello,x\n")
    with pytest.raises(PackError, match=r"unexpected \['notes'\]"):
        read_scripted_turns(turns)


def test_scripted_turns_may_say_whether_the_fallback_answers(tmp_path: Path, pack: DomainPack) -> None:
    turns = tmp_path / "turns.csv"
    turns.write_text(
        "conversation_id,turn_id,user_utterance,expected_contact_channel,expected_fallback\n"
        "C1,1,Hello,email,true\nC1,2,Hi,,false\nC1,3,Hey,, \n"
    )
    read = read_scripted_turns(turns, pack.frame)
    assert [turn.expected_fallback for turn in read] == [True, False, None]
    assert read[0].expected_slots == {"contact_channel": "email"}
    turns.write_text("conversation_id,turn_id,user_utterance,expected_fallback\nC1,1,Hello,sometimes\n")
    with pytest.raises(PackError, match=r"line 2: field expected_fallback"):
        read_scripted_turns(turns, pack.frame)


def test_missing_pack_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PackError, match=r"domain\.toml: cannot be read"):
        load_pack(tmp_path)


def test_a_rule_yielding_to_an_unknown_benign_exception_names_file_table_and_field(pack_copy: Path) -> None:
    domain = pack_copy / "domain.toml"
    text = domain.read_text(encoding="utf-8")
    domain.write_text(text.replace('"ignore_my_own_words", ', '"ignore_my_own_wordz", ', 1), encoding="utf-8")
    with pytest.raises(PackError, match=r"domain\.toml.*understanding\.injection_rules, entry \d+, field unless"):
        load_pack(pack_copy)
