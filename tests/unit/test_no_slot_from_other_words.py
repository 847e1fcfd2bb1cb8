"""No slot takes a value from words that did not say it (DESIGN.md invariant 8; issue 39, item 4).

Two properties, on every desk under `data/`:

- Every injection, jailbreak and out-of-scope text in any desk's `eval/` folder (tuning and held-out
  parts, which are desk-independent public text) sets no slot on a fresh conversation, and an injection
  or jailbreak sets none whatever the desk asked last.
- Every text in the desks' own sets (scripted turns, understanding, topic and conversation cases, eval
  sets) whose rules read a value only as negated ("please do not ring my mobile", "no, I don't need the
  hoist") never sets its slot to that value, whatever the desk asked last: no later step (the examples,
  a value's own words) may set what a rule read as negated.
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

import pytest

from dialogue import understanding
from dialogue.actions import Action
from dialogue.normalize import normalize
from dialogue.pack import DomainPack, get_pack
from dialogue.understanding import Mention, understand

DATA = Path(__file__).resolve().parents[2] / "data"
DESKS = sorted(path.parent for path in DATA.glob("*/domain.toml"))
ATTACKS = ("injection", "injection_nonenglish", "jailbreak", "harmful_request")
OFF_THE_DESK = ("out_of_scope",)


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@cache
def _eval_texts(groups: tuple[str, ...]) -> tuple[str, ...]:
    """Every text of those groups in any desk's eval folder, once each."""
    texts: dict[str, None] = {}
    for path in sorted(DATA.glob("*/eval/*.csv")):
        for row in _rows(path):
            if row.get("group") in groups and not row.get("conversation_id"):  # a conversation's turns mean more
                texts[row["text"]] = None
    return tuple(texts)


def find_mentions(text: str, pack: DomainPack) -> list[Mention]:
    """Every slot-rule match in the normalized `text`, in text order, negation applied: what the rules read,
    the oracle of what a turn negates (the core's own reading, `understanding._mentions`)."""
    normalized = normalize(text)
    window = pack.spec.understanding.negation.window_words
    return understanding._mentions(normalized, pack, understanding._Scope(normalized, pack.compiled, window))


def _questions(pack: DomainPack) -> list[str | None]:
    """Whatever the desk may have asked last: nothing, a request for each slot, the confirmation."""
    requests = [str(slot.request_action) for slot in pack.frame.requested_slots if slot.request_action]
    return [None, *requests, str(Action.CONFIRM)]


@pytest.mark.parametrize("desk", DESKS, ids=[desk.name for desk in DESKS])
def test_no_injection_or_jailbreak_sets_a_slot_whatever_was_asked(desk: Path) -> None:
    pack = get_pack(desk)
    texts = _eval_texts(ATTACKS)
    assert len(texts) > 550
    set_from = [
        (asked, text[:60]) for text in texts for asked in _questions(pack) if understand(text, pack, asked).slot_updates
    ]
    assert set_from == []


@pytest.mark.parametrize("desk", DESKS, ids=[desk.name for desk in DESKS])
def test_no_out_of_scope_query_sets_a_slot(desk: Path) -> None:
    pack = get_pack(desk)
    texts = _eval_texts(OFF_THE_DESK)
    assert len(texts) > 500
    assert [text for text in texts if understand(text, pack).slot_updates] == []


def _desk_texts(desk: Path) -> list[str]:
    texts: dict[str, None] = {}
    for path in sorted([*desk.glob("*.csv"), *desk.glob("eval/*.csv")]):
        for row in _rows(path):
            text = row.get("text") or row.get("user_utterance")
            if text:
                texts[text] = None
    return list(texts)


@pytest.mark.parametrize("desk", DESKS, ids=[desk.name for desk in DESKS])
def test_a_value_read_as_negated_is_never_set(desk: Path) -> None:
    pack = get_pack(desk)
    checked = 0
    for text in _desk_texts(desk):
        mentions = find_mentions(text, pack)
        said = {(mention.slot, mention.value) for mention in mentions if not mention.negated}
        negated = {
            (mention.slot, rule_value)
            for mention in mentions
            if mention.negated
            for rule_value in _rule_values(pack, mention.slot, text, mention.start)
        }
        for slot, value in negated - said:
            checked += 1
            for asked in _questions(pack):
                got = understand(text, pack, asked).slot_updates.get(slot)
                assert got != value, f"{desk.name}: {text!r} (asked {asked}) set {slot}={value}, which it negated"
    assert checked >= (20 if (desk / "understanding_cases.csv").exists() else 1)


def _rule_values(pack: DomainPack, slot: str, text: str, start: int) -> set[str]:
    """The value the slot rule that read the mention at `start` gives when not negated (none for a rule whose
    negated reading is that same value: "no kids" is no child care, negated or not)."""
    from dialogue.normalize import normalize

    normalized = normalize(text)
    return {
        rule.value
        for rule, pattern in pack.compiled.slot_rules
        if rule.slot == slot
        and rule.negated_value != rule.value
        and any(match.start() == start for match in pattern.finditer(normalized))
    }
