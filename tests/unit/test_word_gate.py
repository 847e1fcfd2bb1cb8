"""Word gates (dialogue/pack/word_gate.py) never skip a scan that would have matched.

A gate is a pattern written again in RE2's syntax so that it matches wherever the pattern does; the
screens run every gate of a pack in one `re2.Set` pass over the reply, and skip a pattern whose gate
did not match, so a gate that is wrong would let a bad draft through. Checked here: how patterns are
written (lookarounds left out, verbose text, repeats, flags, what gets no gate), the ASCII rule for
patterns run on text with its case kept, the stand-ins for characters beyond ASCII, a failed RE2 pass,
generated patterns on generated text, every gated pattern of every pack on generated text built from
its own words (as written, and as the screens read it: normalized, disguised words included), and the
screens' verdicts with gates against the same screens with every gate open, on the draft corpus as
written and under every mutation of tests/unit/test_reply_mutations.py.
"""

from __future__ import annotations

import csv
import re
import warnings
from pathlib import Path

import pytest
import re2  # type: ignore[import-untyped]
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from devstack.pack_check import gate_vocabulary, gated_patterns, hidden_match, sample_gate_texts
from dialogue.actions import Action, ScreenProfile
from dialogue.normalize import normalize_reply
from dialogue.pack import get_pack
from dialogue.pack.word_gate import CASE_TWINS, GateIndex, pattern_gate
from dialogue.screens import Folded, names_text, screen_reply
from tests.unit.test_reply_mutations import MUTATIONS

ROOT = Path(__file__).resolve().parents[2]
PACK_DIRS = sorted(path.parent for path in (ROOT / "data").glob("*/domain.toml"))


def opens(pattern: re.Pattern[str], text: str, *, folded_text: bool = True) -> bool:
    """Whether the pattern's gate, alone in an index, opens on this text (read case-folded)."""
    gates = GateIndex()
    gated = gates.add(pattern, folded_text=folded_text)
    return bool(gates.opened(text.casefold(), ascii_text=text.isascii()) & gated.bit)


def test_a_gate_opens_where_the_pattern_may_match_and_stays_shut_elsewhere() -> None:
    pattern = re.compile(r"\b(?:you(?:'re|\s+are)\s+(?:now\s+)?enrolled|all\s+set|condolences)\b")
    assert pattern_gate(pattern) is not None
    assert opens(pattern, "great, you're now enrolled")
    assert opens(pattern, "You Are Enrolled.")  # read case-folded
    assert opens(pattern, "my condolences")
    assert not opens(pattern, "you are")
    assert not opens(pattern, "would you like the course? are you sure?")
    assert not opens(pattern, "you're re-enrolled")
    assert not opens(pattern, "you're enrolledx")


def test_a_lookaround_is_left_out_so_the_gate_opens_wider() -> None:
    pattern = re.compile(r"\bseat(?!\s+map)(?<!car seat)\b")
    gate = pattern_gate(pattern)
    assert gate is not None and "map" not in gate.source
    assert opens(pattern, "your seat is held") and opens(pattern, "the seat map")  # the scan decides
    assert not opens(pattern, "seats")


@pytest.mark.parametrize(
    ("pattern", "flags", "opened", "shut"),
    [
        (r"(?x) \b fee  # a comment\n s? \b", 0, ["fees due", "a fee"], ["fe es", "coffee"]),
        (r"a{,2}b\b", 0, ["b", "aab"], ["bc"]),
        (r"\bx{2}\b|\bq{1,}z", 0, ["xx", "qqz"], ["x", "xxx", "z"]),
        (r"\bwe(?i:LL)\b", 0, ["well", "WELL"], ["we"]),
        (r"(?-i:\b[A-Z][a-z]+ Course)\b", re.IGNORECASE, ["the Welding Course"], ["course", "a course"]),
        (r"\bpay\s*\$\d+", 0, ["pay $45", "pay$4"], ["pay $", "pay 45"]),
        (r"\Bing\b|^start|end$", re.MULTILINE, ["sing", "start it", "the end\nnext"], ["ing", "a start", "ends"]),
        (r"(?s)a.b|c\.d", 0, ["a\nb", "c.d"], ["cxd"]),
        (r"\x41\101\0[\x61-\x62]", 0, ["AA\x00b"], ["AA\x00c"]),
        (r"(?#note)\bco(?>op)\b|(?P<n>x)y", 0, ["coop", "xy"], ["co op"]),
        (r"[]x][^]a]", 0, ["]b", "xx", "]A"], ["]]", "a]"]),  # "]a" opens: "]A" matches
    ],
)
def test_how_a_pattern_reads(pattern: str, flags: int, opened: list[str], shut: list[str]) -> None:
    compiled = re.compile(pattern, flags)
    assert pattern_gate(compiled) is not None
    for text in opened:
        assert compiled.search(text) or compiled.search(text.casefold())
        assert opens(compiled, text), text
    for text in shut:
        assert not opens(compiled, text), text


@pytest.mark.parametrize(
    "pattern",
    [r"(a)\1", r"(?P<x>a)(?P=x)", r"(a)?(?(1)b|c)", "caf\u00e9", r"caf\u00e9", r"\N{BULLET}", r"\x80", r"a{1001}"],
)
def test_patterns_it_cannot_write_get_no_gate_and_always_scan(pattern: str) -> None:
    compiled = re.compile(pattern)
    assert pattern_gate(compiled) is None
    assert opens(compiled, "nothing here")


def test_a_gate_on_text_with_its_case_kept_stays_open_on_text_that_is_not_ascii() -> None:
    gates = GateIndex()
    fit = gates.add(re.compile(r"\bfit\b", re.IGNORECASE), folded_text=False)
    assert fit.ascii_only
    assert fit.search("are you FIT?", gates.opened("are you fit?", ascii_text=True)) is not None
    assert gates.opened("are you ready?", ascii_text=True) & fit.bit == 0
    # IGNORECASE equates the dotless i with i, and case folding keeps it: no a-z word "fit" here.
    text = "f\u0131t"
    assert re.search(r"\bfit\b", text, re.IGNORECASE)
    assert fit.search(text, gates.opened(text.casefold(), ascii_text=False)) is not None


def test_characters_beyond_ascii_stand_in_as_one_the_pattern_treats_alike() -> None:
    fee = re.compile(r"\bfee\b")
    assert opens(fee, "the fee is \u00a35") and opens(fee, "caf\u00e9 fee")
    assert not opens(fee, "the \u00e9fee is \u00a35")  # "\u00e9" is a word character: no boundary
    assert not opens(fee, "coffee \u00a35")
    # A class that tells a character from its stand-in keeps the gate open where one stands in.
    not_underscore = re.compile(r"x[^_]")
    gate = pattern_gate(not_underscore)
    assert gate is not None and not gate.word_stand_in and gate.other_stand_in
    assert opens(not_underscore, "x\u00e9") and not opens(not_underscore, "x_ \u00a3")
    # Whitespace, a decimal digit or a case twin beyond ASCII open every gate.
    for text in ("a\u00a0b", "\u0663", "\u0131"):
        assert opens(re.compile(r"\bzzz\b"), text), text
    gates = GateIndex()
    zzz = gates.add(re.compile(r"\bzzz\b"), folded_text=True)
    assert gates.opened("\u212a", ascii_text=False) & zzz.bit  # case folding makes it "k"; IGNORECASE would too


def test_the_case_twins_are_the_characters_ignorecase_equates_with_ascii() -> None:
    ascii_class = re.compile(r"[\x00-\x7f]", re.IGNORECASE)
    twins = {chr(code) for code in range(128, 0x110000) if ascii_class.fullmatch(chr(code))}
    assert twins == CASE_TWINS


def test_a_failed_re2_pass_opens_every_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    gates = GateIndex()
    gated = [gates.add(re.compile(word), folded_text=True) for word in (r"\bone\b", r"\btwo\b")]
    assert gates.opened("one", ascii_text=True) == gated[0].bit
    monkeypatch.setattr(re2.Set, "Match", lambda self, text: None)
    assert gates.opened("one", ascii_text=True) == gated[0].bit | gated[1].bit


# Generated patterns: small pieces of every kind the writer reads, joined and nested at random.
_PIECES = [
    *"aAbBzZ_-' .,?!0",
    r"\.",
    r"\?",
    r"\-",
    r"\'",
    r"\ ",
    r"\\",
    r"\n",
    r"\t",
    r"\x41",
    r"\x7f",
    r"\101",
    r"\0",
    r"\b",
    r"\B",
    r"\w",
    r"\W",
    r"\s",
    r"\S",
    r"\d",
    r"\D",
    ".",
    "^",
    "$",
    r"\A",
    r"\Z",
    "{",
    "}",
    "]",
    "[a-c]",
    "[^a]",
    "[^_]",
    "[^\\W]",
    "[\\s_]",
    "[^\\s]",
    "[A-Z]",
    "[^A-Z]",
    "[\\x7f]",
    "[^\\x7f]",
    "[]a]",
    "[^]b]",
    "[a-]",
    "[\\b]",
    "[-_']",
    "[^\\d\\s]",
    "[\\0-\\x20]",
]
_REPEATS = ["*", "+", "?", "{2}", "{,2}", "{1,}", "{1,2}", "{,}", "*?", "+?", "??", "{1,2}?", "*+", "?+"]
_GROUPS = [
    "({})",
    "(?:{})",
    "(?={})",
    "(?!{})",
    "(?<=a)({})",
    "(?<!b)({})",
    "(?>{})",
    "(?i:{})",
    "(?-i:{})",
    "(?P<g>{})",
    "(?s:{})",
    "(?m:{})",
    "(?a:{})",
    "(?x:{} )",
    "(?#c){}",
]


def _patterns() -> st.SearchStrategy[str]:
    piece = st.tuples(st.sampled_from(_PIECES), st.sampled_from(["", "", "", *_REPEATS])).map("".join)

    def combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(children, min_size=1, max_size=4).map("".join),
            st.lists(children, min_size=2, max_size=3).map("|".join),
            st.tuples(st.sampled_from(_GROUPS), children, st.sampled_from(["", "", *_REPEATS])).map(
                lambda parts: parts[0].format(parts[1]) + parts[2]
            ),
        )

    return st.recursive(piece, combine, max_leaves=8)


_TEXT_CHARACTERS = "aAbBzZ_-' .,?!0\n\t\x0b\x1c\x7f\\{}][" + "\u00e9\u00a3\u0131\u212a\u017f\u00a0\u0663\u4e00\u2014"


def _compiled(source: str, flags: int) -> re.Pattern[str] | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return re.compile(source, flags)
    except (re.error, OverflowError, RecursionError):
        return None


@settings(max_examples=1500, deadline=None)
@given(
    source=_patterns(),
    flags=st.sampled_from([0, re.I, re.M | re.S, re.X, re.A, re.I | re.X]),
    texts=st.lists(st.text(alphabet=_TEXT_CHARACTERS, max_size=12), min_size=1, max_size=6),
)
def test_a_generated_gate_never_shuts_where_its_pattern_matches(source: str, flags: int, texts: list[str]) -> None:
    """Any pattern the writer gates: on text read case-folded (as the desk's word screens read it), and
    on ASCII text with its case kept (as the lesson's screens and the unknown-program screen do)."""
    pattern = _compiled(source, flags)
    assume(pattern is not None)
    assert pattern is not None
    gates = GateIndex()
    folded, cased = gates.add(pattern, folded_text=True), gates.add(pattern, folded_text=False)
    for text in texts:
        for variant in (text, text.upper(), text.title()):
            lowered = variant.casefold()
            opened = gates.opened(lowered, ascii_text=variant.isascii())
            if pattern.search(lowered) is not None:
                assert opened & folded.bit, (source, lowered)
            if pattern.search(variant) is not None:
                assert opened & cased.bit, (source, variant)


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
            assert folded.open_gates is not None and folded.open_gates & gated.bit, (name, reply)


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
