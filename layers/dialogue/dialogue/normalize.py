"""One canonical form of a user's text, so that screens and slot rules see through disguises.

`normalize` is what every understanding pattern runs on. It is a pure function of the text: it
never logs, stores or raises with the text, and what it returns stays in the caller's memory.

Steps, in order:

1. Unicode compatibility decomposition (the NFKD half of NFKC): full-width letters, ligatures
   (U+FB00 "ff"), superscripts, non-breaking and ideographic spaces become their plain forms.
2. Case folding (`str.casefold`, stronger than `lower`: "ß" becomes "ss").
3. Removal of what a reader cannot see: format characters (category Cf: zero-width space, joiners,
   word joiner, soft hyphen, bidi controls, tag characters), control characters other than
   whitespace (Cc), lone surrogates (Cs), a few invisible letters that are not Cf (the Hangul
   fillers, the combining grapheme joiner, variation selectors) and combining marks (Mn, Me), so
   "ign\\u200bore" and "i\\u0308gnore" both read "ignore".
4. Typographic apostrophes, quotes and hyphens become "'", '"' and "-", so a pattern written with
   "don't" also matches "don\\u2019t"; en and em dashes become " - ", a clause break. The dotless
   "\\u0131", which case folding keeps but case-insensitive matching equates with "i", becomes "i".
   Cyrillic and Greek letters that look like a Latin one (Unicode's confusables: Cyrillic "\\u043e"
   for "o", Greek "\\u03b9" for "i", ...) become that Latin letter, so "ign\\u043ere previous
   instructions" is screened like "ignore previous instructions". Their capitals and accented forms
   reach these by steps 1-3.
5. Canonical composition (the NFC half of NFKC), then whitespace collapsed to single spaces and
   trimmed.

The result is in NFKC form and case-folded, and `normalize(normalize(text)) == normalize(text)`.
Its only letters that a case-insensitive match equates with a lower-case ASCII letter are that letter
itself (tests/unit/test_fast_paths.py checks every code point), so a pattern written in
lower case matches it the same with or without IGNORECASE (see `dialogue.pack`).

ASCII text, most turns, takes a short path with the same result: of the steps above only case
folding, dropping controls and the backquote apply to it.

`normalize_reply` is the same form with letter case kept, for the screens on a generated reply
(`dialogue.screens`): a screen that looks for capitals (a program's name) needs them, and the others
read `normalize(normalize_reply(reply))`. It takes steps 1 and 3-5 but not step 2: a capital whose
small letter is a look-alike becomes the Latin capital ("\\u0421" reads "C", "\\u0399" "I"), and so
does a Cyrillic or Greek capital that looks like a Latin one though its small letter does not
("\\u0422" reads "T", "\\u041d" "H", "\\u039d" "N"; `_CAPITAL_LOOKALIKES`). So
`normalize(normalize_reply(text)) == normalize(text)` for every text without those capitals (or
letters that decompose to them, such as "\\u040c"), and with them the screens read the Latin letter
a resident sees (tests/unit/test_fast_paths.py checks every code point). ASCII replies take a short
path: most hold nothing to change (no control, backquote, doubled or outer space) and are returned
as they are.
"""

from __future__ import annotations

import unicodedata

# Removed outright: invisible characters whose category is not Cf.
_INVISIBLE = frozenset(
    [
        0x034F,  # combining grapheme joiner
        0x115F,  # Hangul choseong filler
        0x1160,  # Hangul jungseong filler
        0x17B4,  # Khmer vowel inherent aq
        0x17B5,  # Khmer vowel inherent aa
        0x3164,  # Hangul filler
        0xFFA0,  # half-width Hangul filler
        *range(0x180B, 0x1810),  # Mongolian free variation selectors and vowel separator
        *range(0xFE00, 0xFE10),  # variation selectors
        *range(0xE0100, 0xE01F0),  # variation selectors supplement
    ]
)
_DROPPED_CATEGORIES = frozenset({"Cf", "Cc", "Cs", "Mn", "Me"})
# Lower-case Cyrillic and Greek letters whose prototype in Unicode's confusables.txt is a Latin letter.
_LATIN_LOOKALIKES = {
    "\u0430": "a",  # CYRILLIC SMALL LETTER A
    "\u0435": "e",  # CYRILLIC SMALL LETTER IE
    "\u0456": "i",  # CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
    "\u0458": "j",  # CYRILLIC SMALL LETTER JE
    "\u043e": "o",  # CYRILLIC SMALL LETTER O
    "\u0440": "p",  # CYRILLIC SMALL LETTER ER
    "\u0441": "c",  # CYRILLIC SMALL LETTER ES
    "\u0443": "y",  # CYRILLIC SMALL LETTER U
    "\u0445": "x",  # CYRILLIC SMALL LETTER HA
    "\u0455": "s",  # CYRILLIC SMALL LETTER DZE
    "\u0475": "v",  # CYRILLIC SMALL LETTER IZHITSA
    "\u04bb": "h",  # CYRILLIC SMALL LETTER SHHA
    "\u04cf": "l",  # CYRILLIC SMALL LETTER PALOCHKA
    "\u0501": "d",  # CYRILLIC SMALL LETTER KOMI DE
    "\u051b": "q",  # CYRILLIC SMALL LETTER QA
    "\u051d": "w",  # CYRILLIC SMALL LETTER WE
    "\u03b1": "a",  # GREEK SMALL LETTER ALPHA
    "\u03b9": "i",  # GREEK SMALL LETTER IOTA
    "\u03ba": "k",  # GREEK SMALL LETTER KAPPA
    "\u03bd": "v",  # GREEK SMALL LETTER NU
    "\u03bf": "o",  # GREEK SMALL LETTER OMICRON
    "\u03c1": "p",  # GREEK SMALL LETTER RHO
    "\u03c5": "u",  # GREEK SMALL LETTER UPSILON
    "\u03f2": "c",  # GREEK LUNATE SIGMA SYMBOL
    "\u03f3": "j",  # GREEK LETTER YOT
}
_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u02bc\u00b4\u0060", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2212\ufe58", "-"),
        # En and em dashes separate clauses, even when written without spaces.
        **dict.fromkeys("\u2013\u2014\u2015", " - "),
        # Case folding keeps the dotless i, which IGNORECASE matching takes for "i".
        "\u0131": "i",
        **_LATIN_LOOKALIKES,
    }
)
# For ASCII text: controls other than whitespace dropped, the backquote made an apostrophe.
_ASCII = str.maketrans(
    {
        **{chr(code): None for code in (*range(0x20), 0x7F) if not chr(code).isspace()},
        "`": "'",
    }
)


# Cyrillic and Greek capitals that look like a Latin capital (Unicode's confusables), where the
# capital's small letter looks like no Latin one ("\u0442" is not a "t") or like another ("\u03bd" is
# a "v", its capital "\u039d" an "N").
_CAPITAL_LOOKALIKES = {
    "\u0412": "B",  # CYRILLIC CAPITAL LETTER VE
    "\u041a": "K",  # CYRILLIC CAPITAL LETTER KA
    "\u041c": "M",  # CYRILLIC CAPITAL LETTER EM
    "\u041d": "H",  # CYRILLIC CAPITAL LETTER EN
    "\u0422": "T",  # CYRILLIC CAPITAL LETTER TE
    "\u04ae": "Y",  # CYRILLIC CAPITAL LETTER STRAIGHT U
    "\u04c0": "I",  # CYRILLIC LETTER PALOCHKA
    "\u0392": "B",  # GREEK CAPITAL LETTER BETA
    "\u0395": "E",  # GREEK CAPITAL LETTER EPSILON
    "\u0396": "Z",  # GREEK CAPITAL LETTER ZETA
    "\u0397": "H",  # GREEK CAPITAL LETTER ETA
    "\u039c": "M",  # GREEK CAPITAL LETTER MU
    "\u039d": "N",  # GREEK CAPITAL LETTER NU
    "\u03a4": "T",  # GREEK CAPITAL LETTER TAU
    "\u03a5": "Y",  # GREEK CAPITAL LETTER UPSILON
    "\u03a7": "X",  # GREEK CAPITAL LETTER CHI
}


def _visible(character: str) -> bool:
    return ord(character) not in _INVISIBLE and unicodedata.category(character) not in _DROPPED_CATEGORIES


def normalize(text: str) -> str:
    """The canonical form of `text` that every understanding pattern is matched against."""
    if text.isascii():
        return " ".join(text.lower().translate(_ASCII).split())
    return _normalize_unicode(text)


def _normalize_unicode(text: str) -> str:
    """`normalize` for any text, step by step as the module describes."""
    folded = unicodedata.normalize("NFKD", text).casefold()
    # Whitespace controls (tab, newline, ...) become spaces before the other controls are dropped.
    kept = "".join(" " if char.isspace() else char for char in folded if char.isspace() or _visible(char))
    composed = unicodedata.normalize("NFC", kept.translate(_PUNCTUATION))
    return " ".join(composed.split())


class _ReplyCharacters(dict[int, str | None]):
    """`normalize_reply`'s table for `str.translate`, from a character of NFKD-decomposed text to what
    it becomes: filled as characters are met (ASCII at once), to a bounded size."""

    LIMIT = 8192

    def __missing__(self, code: int) -> str | None:
        value = _reply_character(chr(code))
        if len(self) < self.LIMIT:
            self[code] = value
        return value


def _reply_character(char: str) -> str | None:
    """What one character of NFKD-decomposed text becomes in `normalize_reply`'s form: a space, nothing
    (an invisible one), a plain quote or dash, a Latin letter for a look-alike in the same case, or
    itself."""
    if char.isspace():
        return " "
    if not _visible(char):
        folded = char.casefold()  # a mark that case folding makes a letter reads as normalize reads it
        if folded == char or not all(map(_visible, folded)):
            return None
        return "".join(_reply_character(part) or "" for part in folded)
    if char in _CAPITAL_LOOKALIKES:
        return _CAPITAL_LOOKALIKES[char]
    plain = char.translate(_PUNCTUATION)
    if plain != char or char.isascii():
        return plain
    folded = char.casefold()
    if len(folded) == 1 and folded in _LATIN_LOOKALIKES:  # a capital whose small letter is a look-alike
        return _LATIN_LOOKALIKES[folded].upper()
    return char


_REPLY_CHARACTERS = _ReplyCharacters()
for _code in range(128):
    _REPLY_CHARACTERS[_code] = _reply_character(chr(_code))


def normalize_reply(text: str) -> str:
    """`normalize` with letter case kept: the form every screen on a generated reply reads (see the
    module's note). The reply shown stays as written."""
    if text.isascii():
        # Most replies hold nothing to change: no control or whitespace but the space (ASCII's printable
        # characters), no backquote, no doubled space, no space at either end.
        if text.isprintable() and "`" not in text and "  " not in text and text[:1] != " " and text[-1:] != " ":
            return text
        return " ".join(text.translate(_ASCII).split())
    return _normalize_reply_unicode(text)


def _normalize_reply_unicode(text: str) -> str:
    """`normalize_reply` for any text: decomposed, each character as `_reply_character` says, composed,
    whitespace collapsed."""
    kept = unicodedata.normalize("NFKD", text).translate(_REPLY_CHARACTERS)
    return " ".join(unicodedata.normalize("NFC", kept).split())
