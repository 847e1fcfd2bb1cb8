"""Word gates: the words a pattern's matches must begin (or end) with, read from the pattern.

Python's re tries a pattern that begins with `\\b` at every word of a reply, branch by branch. A
reply holding none of the words a match could begin with cannot match, so the screen passes without
the scan. `GateIndex.opened` asks that of every gated pattern of a pack at once, from the reply's
words and pairs of neighbouring words (its runs of the letters a-z, case-folded), as a bit mask.

A gate is read from the pattern's parse tree (`re._parser`, the module `re.compile` uses) and is
exact by construction: it never shuts where the pattern matches (tests/unit/test_word_gate.py checks
it on generated text). It holds the pairs of words a match can begin with, or the first word alone
where the second cannot be read, so "you are enrolled" opens the status-claim gate and "would you
like" does not. A pattern whose start cannot be read (a class such as `[A-Z]` or `\\w` where a word
begins) is read from its end when it ends at a `\\b`; one that cannot be read either way is always
scanned. Letters A-Z count as a-z; a pattern with IGNORECASE, or one run on the reply with its case
kept, has a gate for ASCII replies alone (IGNORECASE equates the dotless i with i, and case folding
keeps it), and is always scanned on others. The screens open the gates from the reply normalized
(`dialogue.normalize.normalize_reply`) and case-folded, and scan the normalized reply, with its case
or folded: a reply whose curly apostrophes or look-alike letters normalization makes plain is ASCII
there, and gated like any other.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

try:  # The parser re.compile uses; private, so a Python without it only loses the gate.
    sre: Any = importlib.import_module("re._constants")
    _parser: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - every CPython from 3.11 has both
    sre = _parser = None

MAX_WORDS = 2_000
_MAX_WORD_LENGTH = 40
_MAX_DEPTH = 400
_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")
_WORDS = re.compile(r"[a-z]+")
# Classes that hold no letter a-z: a word ends where they match.
_NON_LETTER_CATEGORIES = frozenset(
    getattr(sre, name)
    for name in (
        "CATEGORY_SPACE",
        "CATEGORY_UNI_SPACE",
        "CATEGORY_DIGIT",
        "CATEGORY_UNI_DIGIT",
        "CATEGORY_LINEBREAK",
        "CATEGORY_UNI_LINEBREAK",
    )
    if sre is not None
)


@dataclass(frozen=True)
class WordGate:
    """How a match can begin: `pairs`, two whole words (with only non-letters between them); `words`,
    one whole word; `prefixes`, the start of a word (a match that may end inside it)."""

    pairs: frozenset[tuple[str, str]]
    words: frozenset[str]
    prefixes: tuple[str, ...] = ()


@dataclass(frozen=True)
class GatedPattern:
    """A pattern with its gate (None: always scanned) and its bit in its `GateIndex`.

    `ascii_only`: the gate holds for ASCII text alone (the pattern runs on text with its case kept, or
    with IGNORECASE); on other text it stays open."""

    pattern: re.Pattern[str]
    gate: WordGate | None
    bit: int
    ascii_only: bool = False

    def finditer(self, text: str, opened: int | None = None) -> Iterator[re.Match[str]]:
        """The pattern's matches in `text`; none at once when `opened` (`GateIndex.opened` of the text)
        leaves its gate shut."""
        return iter(()) if opened is not None and not opened & self.bit else self.pattern.finditer(text)

    def search(self, text: str, opened: int | None = None) -> re.Match[str] | None:
        return None if opened is not None and not opened & self.bit else self.pattern.search(text)


class GateIndex:
    """The gates of a pack's patterns, asked all at once: which may match a text, as a bit mask.

    A text's words and neighbouring pairs are looked up in one table of every gate's words, so the
    cost hardly grows with the number of patterns."""

    def __init__(self) -> None:
        self._count = 0
        self._always = 0  # patterns without a gate
        self._ascii_only = 0  # gates that hold only for ASCII text
        self._table: dict[str | tuple[str, ...], int] = {}
        self._keys: frozenset[str | tuple[str, ...]] = frozenset()
        self._prefixed: list[tuple[int, tuple[str, ...]]] = []

    def add(self, pattern: re.Pattern[str], *, folded_text: bool) -> GatedPattern:
        """Gate `pattern`, which runs on text case-folded (`folded_text`) or with its case kept."""
        bit = 1 << self._count
        self._count += 1
        gate = word_gate(pattern)
        ascii_only = not folded_text or bool(pattern.flags & re.IGNORECASE)
        if gate is None:
            self._always |= bit
        else:
            if ascii_only:
                self._ascii_only |= bit
            keys: list[str | tuple[str, ...]] = [*gate.words, *gate.pairs]
            for key in keys:
                self._table[key] = self._table.get(key, 0) | bit
            if gate.prefixes:
                self._prefixed.append((bit, gate.prefixes))
            self._keys = frozenset(self._table)
        return GatedPattern(pattern, gate, bit, ascii_only=ascii_only)

    def opened(self, folded: str, *, ascii_text: bool) -> int:
        """The bits of the patterns that may match: `folded` is the text case-folded, `ascii_text`
        whether the text with its case kept (what the `ascii_only` patterns scan) is ASCII."""
        words = _WORDS.findall(folded)
        mask = self._always if ascii_text else self._always | self._ascii_only
        table = self._table
        for key in self._keys.intersection(words):
            mask |= table[key]
        for key in self._keys.intersection(pairwise(words)):
            mask |= table[key]
        for bit, prefixes in self._prefixed:
            if any(word.startswith(prefixes) for word in words):
                mask |= bit
        return mask


class _Unreadable(Exception):
    """The pattern holds something the gate does not model: it gets no gate."""


Found = set[tuple[tuple[str, ...], bool]]
Ops = tuple[tuple[Any, Any], ...]  # parsed ops: (opcode, argument)


def word_gate(pattern: re.Pattern[str]) -> WordGate | None:
    """The gate of a pattern whose matches begin, or else end, at a `\\b`, or None.

    A gate is read for the text case-folded. Letters A-Z in the pattern count as a-z: a match of the
    pattern (with or without IGNORECASE) in ASCII text is then a match in the text case-folded. A
    pattern with IGNORECASE may match other letters than a-z in other text (the dotless i), so its
    gate holds for ASCII text alone (`GateIndex` keeps it open on other text)."""
    if _parser is None or not isinstance(pattern.pattern, str):
        return None
    items = tuple(_parser.parse(pattern.pattern, pattern.flags).data)
    while len(items) == 1 and items[0][0] is sre.SUBPATTERN:  # (?-i:...) around the whole pattern
        items = tuple(items[0][1][3].data)
    for backward in (False, True):
        ordered = _reversed(items) if backward else items
        if not ordered or ordered[0] != (sre.AT, sre.AT_BOUNDARY):
            continue
        found: Found = set()
        try:
            _Walk(found).walk(ordered[1:], (), "", 0)
        except _Unreadable:
            continue
        if backward and not all(whole for _words, whole in found):
            continue  # a match that may begin inside a word: the gate would need its ending
        if backward:  # read from the end: each word and each pair back the right way round
            found = {(tuple(word[::-1] for word in reversed(words)), whole) for words, whole in found}
        return WordGate(
            pairs=frozenset((words[0], words[1]) for words, whole in found if len(words) == 2),
            words=frozenset(words[0] for words, whole in found if len(words) == 1 and whole),
            prefixes=tuple(sorted(words[0] for words, whole in found if not whole)),
        )
    return None


@dataclass(frozen=True)
class _Seq:
    """A sub-pattern read back to front."""

    data: Ops


def _reversed(items: Ops) -> Ops:
    """The ops of a parsed pattern back to front, sub-patterns included."""
    out: list[tuple[Any, Any]] = []
    for op, av in reversed(items):
        if op is sre.BRANCH:
            out.append((op, (av[0], [_Seq(_reversed(tuple(alt.data))) for alt in av[1]])))
        elif op is sre.SUBPATTERN:
            out.append((op, (*av[:3], _Seq(_reversed(tuple(av[3].data))))))
        elif op in _REPEATS:
            out.append((op, (av[0], av[1], _Seq(_reversed(tuple(av[2].data))))))
        elif op in (sre.ASSERT, sre.ASSERT_NOT, sre.LITERAL, sre.IN) or (op is sre.AT and av is sre.AT_BOUNDARY):
            out.append((op, av))  # the walk steps over assertions
        else:  # anything else stops the walk where it meets it
            out.append((_UNREADABLE, None))
    return tuple(out)


class _Walk:
    """Every way the parsed ops can go on, recording each way a match can begin: one or two words."""

    def __init__(self, found: Found) -> None:
        self.found = found
        self.steps = 0

    def end_word(self, before: tuple[str, ...], word: str, rest: Ops, depth: int) -> None:
        """A word of the match ends: the first goes on to look for a second; the second is recorded."""
        if before:
            self.found.add(((*before, word), True))
        else:
            second: Found = set()
            inner = _Walk(second)
            inner.steps = self.steps
            try:
                inner.walk(rest, (word,), "", depth)
            except _Unreadable:  # what follows the first word cannot be read: the first word alone
                second = {((word,), True)}
            self.steps = inner.steps
            self.found |= second
        if len(self.found) > MAX_WORDS:
            raise _Unreadable

    def walk(self, items: Ops, before: tuple[str, ...], word: str, depth: int) -> None:
        """Follow `items` on from the words `before` and the letters `word` matched so far."""
        self.steps += 1
        if depth > _MAX_DEPTH or len(word) > _MAX_WORD_LENGTH or self.steps > _MAX_STEPS:
            raise _Unreadable
        if not items:
            if before:  # the pattern ends between the words or inside the second: the first alone
                self.found.add((before, True))
            elif word:
                self.found.add(((word,), False))  # the match may end inside a longer word
            else:
                raise _Unreadable
            return
        (op, av), rest = items[0], items[1:]
        depth += 1
        if op is sre.LITERAL or op is sre.IN:
            letters, others = _members(op, av)
            for char in letters:
                self.walk(rest, before, word + char, depth)
            if others and word:
                self.end_word(before, word, rest, depth)
            elif others:  # before a word, or between the first and the second: a letter begins one
                self.walk(rest, before, word, depth)
        elif op is sre.BRANCH:
            for alternative in av[1]:
                self.walk(tuple(alternative.data) + rest, before, word, depth)
        elif op is sre.SUBPATTERN:
            self.walk(tuple(av[3].data) + rest, before, word, depth)
        elif op in _REPEATS:
            low, high, inner = av
            if low == 0:
                self.walk(rest, before, word, depth)
            if high != 0 and _separator(inner):  # once or many times, the same words
                self.walk(tuple(inner.data) + rest, before, word, depth)
            elif high != 0:
                again = (op, (max(low - 1, 0), high if high is sre.MAXREPEAT else high - 1, inner))
                self.walk((*inner.data, again, *rest), before, word, depth)
        elif op is sre.AT and av is sre.AT_BOUNDARY:
            if word:  # a boundary after letters: the word ends here
                self.end_word(before, word, rest, depth)
            else:
                self.walk(rest, before, word, depth)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):  # zero-width, they only narrow the matches
            self.walk(rest, before, word, depth)
        else:
            raise _Unreadable


_UNREADABLE = object()
_MAX_STEPS = 200_000
_MAX_CLASS_LETTERS = 6  # a class such as [a-z] leaves the word unknown
_REPEATS = (
    frozenset(getattr(sre, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(sre, name))
    if sre is not None
    else frozenset()
)


def _separator(pattern: Any) -> bool:
    """Whether a sub-pattern matches only characters other than letters."""
    for op, av in pattern.data:
        if op is not sre.LITERAL and op is not sre.IN:
            return False
        try:
            letters, _others = _members(op, av)
        except _Unreadable:
            return False
        if letters:
            return False
    return True


def _letter(code: int) -> str | None:
    """The letter a-z a character counts as (A-Z as a-z), or None."""
    char = chr(code).lower() if 65 <= code <= 90 else chr(code)
    return char if char in _LETTERS else None


def _members(op: Any, av: Any) -> tuple[tuple[str, ...], bool]:
    """The letters a-z a literal or class matches (A-Z counted as a-z), and whether it matches
    anything else."""
    if op is sre.LITERAL:
        letter = _letter(av)
        return ((letter,), False) if letter else ((), True)
    letters: set[str] = set()
    others = False
    for kind, value in av:
        if kind is sre.LITERAL:
            letter = _letter(value)
            if letter:
                letters.add(letter)
            else:
                others = True
        elif kind is sre.RANGE:
            low, high = value
            in_range = {letter for code in range(max(low, 65), min(high, 122) + 1) if (letter := _letter(code))}
            letters |= in_range
            others = others or any(_letter(code) is None for code in range(low, min(high, low + 200) + 1))
        elif kind is sre.CATEGORY and value in _NON_LETTER_CATEGORIES:
            others = True
        else:  # NEGATE, \w, \S and the like
            raise _Unreadable
    if len(letters) > _MAX_CLASS_LETTERS:
        raise _Unreadable
    return tuple(sorted(letters)), others
