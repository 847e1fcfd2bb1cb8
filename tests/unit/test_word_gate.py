"""Word gates (dialogue/pack/word_gate.py) never skip a scan that would have matched.

A gate is read from a pattern's parse tree: the words (or pairs of neighbouring words) any match must
begin with, or else end with. The screens skip a pattern whose gate the reply's words leave shut, so
a gate that is wrong would let a bad draft through. Checked here: the reading of small patterns, the
ASCII rule for IGNORECASE patterns, every gated pattern of every pack on generated text built from
its own words (as written, and as the screens read it: normalized, disguised words included), and the
screens' verdicts with gates against the same screens with every gate open, on the draft corpus as
written and under every mutation of tests/unit/test_reply_mutations.py.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devstack.pack_check import gate_vocabulary, gated_patterns, hidden_match, sample_gate_texts
from dialogue.actions import Action, ScreenProfile
from dialogue.normalize import normalize_reply
from dialogue.pack import get_pack
from dialogue.pack.word_gate import GateIndex, word_gate
from dialogue.screens import Folded, names_text, screen_reply
from tests.unit.test_reply_mutations import MUTATIONS

ROOT = Path(__file__).resolve().parents[2]
PACK_DIRS = sorted(path.parent for path in (ROOT / "data").glob("*/domain.toml"))


def opens(pattern: re.Pattern[str], folded: str) -> bool:
    """Whether the pattern's gate, alone in an index, opens on this case-folded text."""
    gates = GateIndex()
    gated = gates.add(pattern, folded_text=True)
    return bool(gates.opened(folded, ascii_text=folded.isascii()) & gated.bit)


def test_a_gate_holds_the_pairs_of_words_a_match_begins_with() -> None:
    pattern = re.compile(r"\b(?:you(?:'re|\s+are)\s+(?:now\s+)?enrolled|all\s+set|condolences)\b")
    gate = word_gate(pattern)
    assert gate is not None
    assert gate.pairs == {("you", "re"), ("you", "are"), ("all", "set")}
    assert gate.words == {"condolences"}
    assert opens(pattern, "great, you're now enrolled")
    assert opens(pattern, "you are")  # the gate opens; the scan decides
    assert not opens(pattern, "would you like the course? are you sure?")


def test_a_second_word_it_cannot_read_leaves_the_first_alone() -> None:
    gate = word_gate(re.compile(r"\bseat\s+(?:\w+\s+){0,3}?reserved\b"))
    assert gate is not None and gate.words == {"seat"} and not gate.pairs


def test_a_match_that_may_end_inside_a_word_gates_on_its_prefix() -> None:
    pattern = re.compile(r"\benrol")
    gate = word_gate(pattern)
    assert gate is not None and gate.prefixes == ("enrol",)
    assert opens(pattern, "you are enrolling") and not opens(pattern, "you are in")


def test_a_pattern_read_from_its_end_when_its_start_is_unknown() -> None:
    gate = word_gate(re.compile(r"(?-i:\b(?:[A-Z][a-z]+\s+){1,3}(?:Certificate|course)\b)", re.IGNORECASE))
    assert gate is not None and gate.words == {"certificate", "course"}


@pytest.mark.parametrize(
    "pattern",
    [r"you are", r"\b[a-z]+\b", r"\b\w+ing\b", r"\b(?:a|\w+)", r"\b[^x]+\b", r"\Bfoo\B", r"(a)\1"],
)
def test_patterns_it_cannot_read_get_no_gate(pattern: str) -> None:
    assert word_gate(re.compile(pattern)) is None


def test_an_ignorecase_gate_stays_open_on_text_that_is_not_ascii() -> None:
    gates = GateIndex()
    fit = gates.add(re.compile(r"\bfit\b", re.IGNORECASE), folded_text=False)
    assert fit.ascii_only
    assert fit.search("are you FIT?", gates.opened("are you fit?", ascii_text=True)) is not None
    assert gates.opened("are you ready?", ascii_text=True) & fit.bit == 0
    # IGNORECASE equates the dotless i with i, and case folding keeps it: no a-z word "fit" here.
    text = "f\u0131t"
    assert re.search(r"\bfit\b", text, re.IGNORECASE)
    assert fit.search(text, gates.opened(text.casefold(), ascii_text=False)) is not None


_gated = gated_patterns
_vocabulary = gate_vocabulary


@pytest.mark.parametrize("pack_dir", PACK_DIRS, ids=lambda path: path.name)
def test_every_gated_pattern_of_every_pack_has_a_gate_or_says_why_not(pack_dir: Path) -> None:
    gated = _gated(get_pack(pack_dir))
    # Every riverton pattern is gated (bench/p6_screens.py relies on it); a pack may bring one that is not.
    if pack_dir.name == "riverton":
        assert [name for name, pattern in gated if pattern.gate is None] == []


@pytest.mark.parametrize("pack_dir", PACK_DIRS, ids=lambda path: path.name)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_shut_gate_never_hides_a_match(pack_dir: Path, data: st.DataObject) -> None:
    pack = get_pack(pack_dir)
    vocabulary = _vocabulary(pack)
    word = st.sampled_from(vocabulary).map(lambda w: data.draw(st.sampled_from([w, w.lower(), w.title(), w.upper()])))
    separator = st.sampled_from([" ", " ", " ", ", ", ". ", "? ", "'", "-", "  ", "\n", " (", ") "])
    parts = data.draw(st.lists(st.tuples(word, separator), min_size=1, max_size=14))
    text = "".join(w + s for w, s in parts)
    opened = pack.compiled.gates.opened(text.casefold(), ascii_text=text.isascii())
    for name, gated in _gated(pack):
        scanned = gated.pattern.search(text if gated.ascii_only else text.casefold())
        if scanned is not None:
            assert opened & gated.bit, (name, text)


_CYRILLIC = str.maketrans(
    "aeopcAEOPCTHK", "\u0430\u0435\u043e\u0440\u0441\u0410\u0415\u041e\u0420\u0421\u0422\u041d\u041a"
)
# Disguises of a word that the screens' reading undoes: a typographic apostrophe, an invisible
# character, look-alike letters, full-width forms.
_DISGUISES = (
    lambda w: w.replace("'", "\u2019"),
    lambda w: w[:1] + "\u200b" + w[1:],
    lambda w: w[:-1] + "\u00ad" + w[-1:],
    lambda w: w.translate(_CYRILLIC),
    lambda w: w.translate(str.maketrans("oiOI", "\u03bf\u03b9\u039f\u0399")),
    lambda w: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in w),
)


@pytest.mark.parametrize("pack_dir", PACK_DIRS, ids=lambda path: path.name)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_shut_gate_never_hides_a_match_in_what_the_screens_read(pack_dir: Path, data: st.DataObject) -> None:
    """The screens open the gates from the reply normalized and case-folded, and scan the normalized
    reply (case kept, in title case for the unknown-program screen when it is in capitals, or folded)."""
    pack = get_pack(pack_dir)
    vocabulary = _vocabulary(pack)
    cased = st.sampled_from(vocabulary).map(lambda w: data.draw(st.sampled_from([w, w.lower(), w.title(), w.upper()])))
    word = cased.map(lambda w: data.draw(st.sampled_from([lambda x: x, *_DISGUISES]))(w))
    separators = [" ", " ", ", ", ". ", "? ", "'", "\u2019", "-", "\u2010", "  ", "\n", "\u00a0", " \u200b"]
    separator = st.sampled_from(separators)
    parts = data.draw(st.lists(st.tuples(word, separator), min_size=1, max_size=14))
    reply = "".join(w + s for w, s in parts)
    if data.draw(st.booleans()):
        reply = reply.upper()
    text = normalize_reply(reply)
    folded = Folded.of(text, pack)
    for name, gated in _gated(pack):
        read = names_text(text) if name == "program_name" else text if gated.ascii_only else folded.text
        if gated.pattern.search(read) is not None:
            assert folded.opened is not None and folded.opened & gated.bit, (name, reply)


def _drafts() -> list[dict[str, str]]:
    with (ROOT / "data" / "riverton" / "drafts.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_the_screens_give_the_same_verdicts_with_every_gate_open(monkeypatch: pytest.MonkeyPatch) -> None:
    pack = get_pack(ROOT / "data" / "riverton")

    def verdicts() -> list[tuple[str, ...]]:
        found = []
        for row in _drafts():
            state = {
                "program": row["program"],
                "childcare_needed": row["childcare_needed"],
                "contact_channel": row["contact_channel"],
            }
            action = Action(row["action"])
            rows = pack.passage_ids_for(action, row["program"], row["topic"] or None)
            for text in (row["text"], *(mutation(row["text"]) for mutation in MUTATIONS.values())):
                for profile in ScreenProfile:
                    found.append(tuple(screen_reply(text, action, state, pack, rows, profile).fired))
        return found

    gated = verdicts()
    monkeypatch.setattr(GateIndex, "opened", lambda self, folded, *, ascii_text: -1)  # every bit set
    assert verdicts() == gated
    assert any(gated) and not all(gated)


@pytest.mark.parametrize("pack_dir", PACK_DIRS, ids=lambda path: path.name)
def test_check_packs_gate_check_passes_here_and_catches_a_gate_that_stays_shut(
    pack_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check-pack's gate check (devstack/pack_check.py) on seeded text: no hidden match with the real
    gates, and one found at once when every gate stays shut."""
    pack = get_pack(pack_dir)
    texts = list(sample_gate_texts(pack, 200, seed=7))
    assert [text for text in texts if hidden_match(pack, text)] == []
    monkeypatch.setattr(GateIndex, "opened", lambda self, text, *, ascii_text: 0)
    assert any(hidden_match(pack, text) for text in texts)
