"""The understanding's fast paths give the same answers as the plain ones (bench/p2_compute.py times them).

- `normalize` takes a short path for ASCII text: it must equal the general path on every ASCII text.
- Understanding patterns written in lower case are compiled without IGNORECASE, because normalized
  text is case-folded: that is exact only if normalized text holds no character that IGNORECASE
  equates with a lower-case ASCII letter other than the letter itself. Every code point is checked.
- The riverton pack's understanding patterns all take the fast path, and match normalized text
  exactly as their IGNORECASE forms do, on the case file and on generated text full of look-alikes.
- `normalize_reply`, the case-keeping form the reply screens read, takes a short path for ASCII text
  that equals its general path, and case-folded by `normalize` it is `normalize` of the reply for
  every code point but the capital look-alikes it reads by their looks.
"""

from __future__ import annotations

import csv
import re
import string
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dialogue.normalize import (
    _CAPITAL_LOOKALIKES,
    _normalize_reply_unicode,
    _normalize_unicode,
    normalize,
    normalize_reply,
)
from dialogue.pack import DomainPack
from dialogue.pack.patterns import compile_understanding

ROOT = Path(__file__).resolve().parents[2]
CASES_FILE = ROOT / "data" / "riverton" / "understanding_cases.csv"
SCRIPTED_FILE = ROOT / "data" / "riverton" / "scripted_turns.csv"
ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")

ASCII = "".join(map(chr, range(128)))


def test_ascii_short_path_matches_the_general_one_on_every_pair_of_characters() -> None:
    for first in ASCII:
        assert normalize(first) == _normalize_unicode(first), repr(first)
        for second in ASCII:
            text = f" {first}{second}x"
            assert normalize(text) == _normalize_unicode(text), repr(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_ascii_short_path_matches_the_general_one(text: str) -> None:
    assert normalize(text) == _normalize_unicode(text)


def _every_character() -> str:
    return "".join(chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF)


def test_normalized_text_has_no_case_insensitive_look_alike_of_an_ascii_letter() -> None:
    """No code point normalizes to a character that IGNORECASE equates with an ASCII letter, except
    the lower-case letters themselves. (NFC composition, normalize's last step, cannot create one:
    the look-alikes are A-Z, the dotless and dotted i, the long s and the Kelvin sign, and none is
    the canonical composition of other characters.)"""
    everything = _every_character()
    look_alikes = {match.group() for match in re.finditer(r"[\x00-\x7f]", everything, re.IGNORECASE)}
    look_alikes -= set(string.ascii_lowercase) | (set(ASCII) - set(string.ascii_letters))
    assert look_alikes >= set(string.ascii_uppercase) | {"\u0131", "\u0130", "\u017f", "\u212a"}
    found = {char for char in everything if not char.isascii() and set(normalize(char)) & look_alikes}
    assert found == set()
    assert not set(normalize(everything[:0x3000])) & look_alikes


_WORDS_FOR_REPLIES = st.sampled_from(
    [
        "You\u2019re enrolled",
        "We\u2019ll text you soon.",
        "child\u2019s name",
        "en\u200brolled",
        "\u0430ppr\u043eved",
        "\u0421ERTIFICATE",
        "\uff37\uff45\uff4c\uff44\uff49\uff4e\uff47",
        "\u2014",
        "\u00a0",
        "\n\n",
        "\u0345",
        "Stra\u00dfe",
        "\u0131",
        "\u0130",
        "\u017f",
        "\u212a",
    ]
)


def test_the_reply_forms_ascii_short_path_matches_the_general_one_on_every_pair_of_characters() -> None:
    for first in ASCII:
        for second in ASCII:
            for text in (f" {first}{second}x", f"a{first}{second}", f"{first} {second}"):
                assert normalize_reply(text) == _normalize_reply_unicode(text), repr(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=200))
def test_the_reply_forms_ascii_short_path_matches_the_general_one(text: str) -> None:
    assert normalize_reply(text) == _normalize_reply_unicode(text)


def test_the_reply_form_folded_is_normalize_but_for_capital_look_alikes() -> None:
    """Every assigned code point (each alone, so that none composes with its neighbour; unassigned
    and private-use ones are left as they are by both): the reply form, case-folded by `normalize`,
    is `normalize` of the character, unless the character is (or decomposes to) a capital
    look-alike, which reads as its Latin capital. The form is stable, and holds no character that
    IGNORECASE equates with an ASCII letter but the ASCII letters."""
    everything = [char for char in _every_character() if unicodedata.category(char) not in ("Cn", "Co")]
    capitals = {char for char in everything if set(unicodedata.normalize("NFKD", char)) & set(_CAPITAL_LOOKALIKES)}
    plain = " ".join(char for char in everything if char not in capitals)
    form = normalize_reply(plain)
    assert normalize(form) == normalize(plain)
    assert normalize_reply(form) == form
    assert {match.group() for match in re.finditer(r"[a-z]", form, re.IGNORECASE)} <= set(string.ascii_letters)
    assert {char: normalize_reply(char) for char in _CAPITAL_LOOKALIKES} == _CAPITAL_LOOKALIKES
    assert all(normalize_reply(char).isascii() for char in capitals), "accented capitals read as Latin ones"
    assert (
        normalize_reply("\u0421\u0435rtif\u0456c\u0430t\u0435 \u0422r\u0430\u0456n\u0456ng") == "Certificate Training"
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_WORDS_FOR_REPLIES, st.text(max_size=4)), max_size=14).map(" ".join))
def test_the_reply_form_folded_is_normalize_on_generated_text(text: str) -> None:
    if not set(unicodedata.normalize("NFKD", text)) & set(_CAPITAL_LOOKALIKES):
        assert normalize(normalize_reply(text)) == normalize(text)
    assert normalize_reply(normalize_reply(text)) == normalize_reply(text)


@pytest.fixture(scope="module")
def understanding_patterns(pack: DomainPack) -> list[tuple[str, re.Pattern[str]]]:
    compiled = pack.compiled
    return [
        *((f"injection {rule.name}", pattern) for rule, pattern in compiled.injection),
        *((f"staff-only {rule.name}", pattern) for rule, pattern in compiled.staff_only),
        *((f"intent {rule.name}", pattern) for rule, pattern in compiled.intents if pattern is not None),
        *((f"slot {rule.slot}={rule.value}", pattern) for rule, pattern in compiled.slot_rules),
        ("negation cue", compiled.negation_cue),
        ("negation after-cue", compiled.negation_after_cue),
        ("scope break", compiled.scope_break),
        ("correction marker", compiled.correction_marker),
    ]


def test_the_packs_understanding_patterns_take_the_fast_path(
    pack: DomainPack, understanding_patterns: list[tuple[str, re.Pattern[str]]]
) -> None:
    assert [name for name, pattern in understanding_patterns if pattern.flags & re.IGNORECASE] == []
    # The screens on generated replies read the reply normalized with its case kept: they keep IGNORECASE.
    compiled = pack.compiled
    reply_screens = (compiled.personal_detail, compiled.promise, compiled.placeholder)
    for pattern in (*reply_screens, *compiled.program_aliases.values()):
        assert pattern.flags & re.IGNORECASE


@pytest.mark.parametrize(
    "pattern",
    [r"\bData Support\b", r"\x41pproved", r"\u0041", r"\N{LATIN SMALL LETTER A}", r"(a)\1", r"\Bfoo", "caf\u00e9"],
)
def test_other_patterns_keep_ignorecase(pattern: str) -> None:
    assert compile_understanding(pattern).flags & re.IGNORECASE


def test_a_pattern_with_an_emoji_takes_the_fast_path_and_a_cased_letter_does_not() -> None:
    assert not compile_understanding("\U0001f4e7|\\bmail\\b").flags & re.IGNORECASE
    assert compile_understanding("\U0001f4e7|\u017fome").flags & re.IGNORECASE  # the long s folds to "s"


def _texts() -> list[str]:
    texts = []
    for path, column in ((CASES_FILE, "text"), (SCRIPTED_FILE, "user_utterance")):
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                texts.append(ESCAPE.sub(lambda match: chr(int(match.group(1), 16)), row[column]))
    return texts


def _same_matches(patterns: list[tuple[str, re.Pattern[str]]], text: str) -> None:
    normalized = normalize(text)
    for name, pattern in patterns:
        ignorecase = re.compile(pattern.pattern, re.IGNORECASE)
        fast = [match.span() for match in pattern.finditer(normalized)]
        slow = [match.span() for match in ignorecase.finditer(normalized)]
        assert fast == slow, (name, text)


def test_fast_patterns_match_as_ignorecase_ones_on_the_case_file(
    understanding_patterns: list[tuple[str, re.Pattern[str]]],
) -> None:
    for text in _texts():
        _same_matches(understanding_patterns, text)
        _same_matches(understanding_patterns, text.upper())
        _same_matches(understanding_patterns, text.replace("i", "\u0131").replace("I", "\u0130"))


_WORDS = st.sampled_from(
    [
        "ignore",
        "IGNORE",
        "\u0131gnore",
        "\u0130GNORE",
        "previous",
        "instructions",
        "you are now",
        "act as",
        "system prompt",
        "mark me as approved",
        "skip the check",
        "not",
        "don't",
        "childcare",
        "email",
        "phone",
        "forklift",
        "data support",
        "actually",
        "\u017fkip",
        "\u212aeep",
        "Stra\u00dfe",
        ",",
        ".",
        " - ",
        "<|im_start|>",
        "[INST]",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_WORDS, st.text(max_size=4)), max_size=14).map(" ".join))
def test_fast_patterns_match_as_ignorecase_ones_on_generated_text(text: str) -> None:
    from dialogue.pack import get_pack

    compiled = get_pack(ROOT / "data" / "riverton").compiled
    patterns = [
        *((rule.name, pattern) for rule, pattern in (*compiled.injection, *compiled.staff_only)),
        *((rule.value, pattern) for rule, pattern in compiled.slot_rules),
        ("cue", compiled.negation_cue),
        ("after-cue", compiled.negation_after_cue),
        ("break", compiled.scope_break),
        ("marker", compiled.correction_marker),
    ]
    _same_matches(patterns, text)
