"""Word gates: one RE2 pass over a reply says which of a pack's screen patterns may match it.

Python's re tries a pattern that begins with `\\b` at every word of a reply, branch by branch, and most
replies match none of a pack's screen patterns. Each gated pattern has a gate: the pattern written
again in RE2's syntax so that it matches wherever the pattern does. `GateIndex.opened` runs every gate
of a pack at once over the reply case-folded (google-re2's `re2.Set`: one automaton, one pass, linear
in the reply's length) and gives the patterns whose gates matched as a bit mask; the screens scan only
those with Python's re, which gives them their matches.

A gate never shuts where its pattern matches (tests/unit/test_word_gate.py checks it on generated
text for every pack, and on generated patterns); it may open where the pattern does not match, which
costs only the scan. It is written from the pattern's text by the syntax the `re` module documents,
without its private parser, and asks the public `re` what each character and class matches:

- each character, class and escape (`\\w`, `\\s`, `.`, `[^a-z]`, under the flags in force there) becomes
  the RE2 class of the ASCII characters Python's re says it matches (each is compiled alone and tried
  on every ASCII character), in lower case, since the gates read the reply case-folded;
- lookarounds become nothing (they only narrow where a pattern matches), atomic groups and possessive
  repeats plain ones, `$` RE2's multi-line `$`, `\\Z` `\\z`, `{,n}` `{0,n}`; verbose whitespace and
  comments go;
- a pattern with what the gate does not model (a backreference, a conditional group, a character
  beyond ASCII, a repeat RE2 refuses) gets no gate and is always scanned.

On ASCII text (`\\b`, `\\w` and `\\d` mean the same in both engines there) the gate matches the reply
case-folded wherever the pattern matches the reply with its case kept, case-folded, or in title case
(`dialogue.screens.names_text`). A pattern that runs on the reply with its case kept (`ascii_only`) has
a gate for ASCII replies alone, and is always scanned on others. On other text, which the patterns
that run on the reply case-folded read as it is, each character beyond ASCII stands in as one that
Python's re treats alike: a word character (not a decimal digit) as "_", a character that is neither
a word character nor whitespace as DEL (U+007F); a pattern whose classes tell such a character from
its stand-in (`[^_]`), or that runs with re.ASCII, stays open on text that holds one, and a text with
whitespace or a decimal digit beyond ASCII, or a letter that IGNORECASE equates with an ASCII one
(U+0130, U+0131, U+017F, U+212A), opens every gate. The screens read replies normalized
(`dialogue.normalize.normalize_reply`), where typographic quotes and look-alike letters are plain, so
nearly every reply is ASCII there.

The `re2.Set` also holds a pattern that matches every text: a pass that finds nothing has failed (RE2
gives no other sign, as when its automaton runs out of memory), and opens every gate.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import re2  # type: ignore[import-untyped]  # google-re2: no stubs, no py.typed

# What a gate text holds in place of a character beyond ASCII (see the module's note).
_WORD_STAND_IN = "_"
_OTHER_STAND_IN = "\x7f"
# Characters beyond ASCII that IGNORECASE equates with an ASCII letter (tests/unit/test_word_gate.py
# finds them among every code point).
CASE_TWINS = frozenset("\u0130\u0131\u017f\u212a")
# Samples of the characters each stand-in stands for, tried on every class: a class of ASCII
# characters and categories matches every character of a kind alike.
_WORD_SAMPLES = ("\u00e9", "\u0436", "\u00aa", "\u00bd", "\u4e00")
_OTHER_SAMPLES = ("\u00a3", "\u20ac", "\u2014", "\u0301", "\U0001f600")
_ASCII_CHARACTERS = tuple(chr(code) for code in range(128))
_VERBOSE_WHITESPACE = frozenset(" \t\n\r\v\f")
_DIGITS = frozenset("0123456789")
_OCTAL = frozenset("01234567")
_HEX = frozenset("0123456789abcdefABCDEF")
# Flags as plain ints (arithmetic on re.RegexFlag is an enum operation, many times slower).
_ASCII_FLAG, _MULTILINE, _VERBOSE = int(re.ASCII), int(re.MULTILINE), int(re.VERBOSE)
_FLAGS = {
    "a": _ASCII_FLAG,
    "i": int(re.IGNORECASE),
    "L": int(re.LOCALE),
    "m": _MULTILINE,
    "s": int(re.DOTALL),
    "u": int(re.UNICODE),
    "x": _VERBOSE,
}
_TYPE_FLAGS = int(re.ASCII | re.LOCALE | re.UNICODE)
_CHARACTER_FLAGS = int(re.IGNORECASE | re.DOTALL | re.ASCII | re.UNICODE)  # what a character or class reads
_ESCAPED = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
_ASSERTIONS = {"A": r"\A", "b": r"\b", "B": r"\B", "Z": r"\z"}
# RE2's settings for the gates: no log of a pattern it refuses (that pattern goes ungated).
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


@dataclass(frozen=True)
class GatedPattern:
    """A pattern with its gate (its RE2 form; None: always scanned) and its bit in its `GateIndex`.

    `ascii_only`: the gate holds for ASCII text alone (the pattern runs on text with its case kept); on
    other text it stays open."""

    pattern: re.Pattern[str]
    gate: str | None
    bit: int
    ascii_only: bool = False

    def finditer(self, text: str, opened: int | None = None) -> Iterator[re.Match[str]]:
        """The pattern's matches in `text`; none at once when `opened` (`GateIndex.opened` of the text)
        leaves its gate shut."""
        return iter(()) if opened is not None and not opened & self.bit else self.pattern.finditer(text)

    def search(self, text: str, opened: int | None = None) -> re.Match[str] | None:
        return None if opened is not None and not opened & self.bit else self.pattern.search(text)


@dataclass(frozen=True)
class Gate:
    """A pattern's gate: its RE2 form, and whether a character beyond ASCII may stand in as "_" (a word
    character) and as DEL (any other but whitespace) in the text it reads."""

    source: str
    word_stand_in: bool
    other_stand_in: bool


class GateIndex:
    """The gates of a pack's patterns, asked all at once: which may match a text, as a bit mask.

    One `re2.Set` of every gate reads the text once, so the cost hardly grows with the number of
    patterns. Built by `build`, or else at the first `opened` after an `add`."""

    def __init__(self) -> None:
        self._count = 0
        self._all = 0
        self._always = 0  # patterns without a gate
        self._ascii_only = 0  # gates that hold only for ASCII text
        self._no_word_stand_in = 0  # gates that stay open on text with a word character beyond ASCII
        self._no_other_stand_in = 0  # ... with any other character beyond ASCII
        self._gates: list[tuple[int, str]] = []
        self._set: re2.Set | None = None
        self._built = False
        self._bits: tuple[int, ...] = ()

    def add(self, pattern: re.Pattern[str], *, folded_text: bool) -> GatedPattern:
        """Gate `pattern`, which runs on text case-folded (`folded_text`) or with its case kept."""
        bit = 1 << self._count
        self._count += 1
        self._all |= bit
        gate = pattern_gate(pattern)
        ascii_only = not folded_text
        if gate is None:
            self._always |= bit
        else:
            if ascii_only:
                self._ascii_only |= bit
            if not gate.word_stand_in:
                self._no_word_stand_in |= bit
            if not gate.other_stand_in:
                self._no_other_stand_in |= bit
            self._gates.append((bit, gate.source))
            self._built = False
        return GatedPattern(pattern, None if gate is None else gate.source, bit, ascii_only=ascii_only)

    def build(self) -> None:
        """Compile the `re2.Set` of every gate added so far."""
        self._built, self._set = True, None
        gates = re2.Set.SearchSet(_RE2_OPTIONS)
        try:
            gates.Add("")  # matches every text: a pass without it has failed
            for _bit, source in self._gates:
                gates.Add(source)
            gates.Compile()
        except re2.error:  # too large for RE2's memory budget: every gate stays open
            return
        self._bits = (0, *(bit for bit, _source in self._gates))
        self._set = gates

    def opened(self, folded: str, *, ascii_text: bool) -> int:
        """The bits of the patterns that may match: `folded` is the text case-folded, `ascii_text`
        whether the text with its case kept (what the `ascii_only` patterns scan) is ASCII."""
        if not self._built:
            self.build()
        gates = self._set
        if gates is None:
            return self._all
        mask = self._always if ascii_text else self._always | self._ascii_only
        if not folded.isascii():
            folded, kinds = _stand_ins(folded)
            if kinds is None:
                return self._all
            if kinds & 1:
                mask |= self._no_word_stand_in
            if kinds & 2:
                mask |= self._no_other_stand_in
        found = gates.Match(folded)
        if not found:  # the pattern that matches every text did not: the pass failed
            return self._all
        bits = self._bits
        for index in found:
            mask |= bits[index]
        return mask


def _stand_ins(text: str) -> tuple[str, int | None]:
    """`text` with each character beyond ASCII replaced by its stand-in, and which kinds stood in (1:
    a word character, 2: another); None where a character has no stand-in."""
    table: dict[int, str] = {}
    kinds = 0
    for char in set(text):
        if char.isascii():
            continue
        if char in CASE_TWINS or char.isspace() or char.isdecimal():
            return text, None
        if char.isalnum():
            table[ord(char)] = _WORD_STAND_IN
            kinds |= 1
        else:
            table[ord(char)] = _OTHER_STAND_IN
            kinds |= 2
    return text.translate(table), kinds


def pattern_gate(pattern: re.Pattern[str]) -> Gate | None:
    """The gate of `pattern` (see the module's note), or None where it cannot have one."""
    if not isinstance(pattern.pattern, str) or not pattern.pattern.isascii():
        return None
    writer = _GateWriter(pattern.pattern, pattern.flags)
    try:
        source = writer.write()
        re2.compile(source, options=_RE2_OPTIONS)
    except (_Unsupported, re2.error, RecursionError):
        return None
    return Gate(source, writer.word_stand_in, writer.other_stand_in)


class _Unsupported(Exception):
    """The pattern holds what a gate does not model: it gets no gate."""


@lru_cache(maxsize=4096)
def _characters(atom: str, flags: int) -> tuple[frozenset[str], bool, bool]:
    """What one character, class or escape matches, under `flags`, as Python's re says: the ASCII
    characters (in lower case), and whether it matches a word character beyond ASCII, and another."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a class such as "[[a]" warns once, where the pack compiles
        try:
            compiled = re.compile(atom, flags & _CHARACTER_FLAGS)
        except re.error:  # not one character or class as re reads it: the pattern goes ungated
            raise _Unsupported from None
    ascii_matched = frozenset(char.lower() for char in _ASCII_CHARACTERS if compiled.fullmatch(char))
    kinds = []
    for samples in (_WORD_SAMPLES, _OTHER_SAMPLES):
        found = {compiled.fullmatch(sample) is not None for sample in samples}
        if len(found) != 1:  # the samples of one kind disagree: not a class of ASCII and categories
            raise _Unsupported
        kinds.append(found.pop())
    return ascii_matched, kinds[0], kinds[1]


@lru_cache(maxsize=256)
def _literal(char: str) -> str:
    """One ASCII character: as the text is case-folded, a letter in either case reads in lower case
    (with IGNORECASE as without, it then matches where the pattern does)."""
    return _re2_class(frozenset(char.lower()))


def _re2_character(char: str) -> str:
    return char if char.isalnum() else f"\\x{{{ord(char):x}}}"


def _re2_class(chars: frozenset[str]) -> str:
    """An RE2 expression matching one of `chars` (ASCII)."""
    if len(chars) == 1:
        return _re2_character(next(iter(chars)))
    if not chars:
        return r"[^\x00-\x{10ffff}]"  # matches nothing
    codes = sorted(map(ord, chars))
    runs: list[list[int]] = []
    for code in codes:
        if runs and code == runs[-1][1] + 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    parts = (_re2_character(chr(low)) + ("" if high == low else "-" + _re2_character(chr(high))) for low, high in runs)
    return "[" + "".join(parts) + "]"


def _repeat(char: str, bounds: tuple[str, str] | None) -> str:
    """A repeat in RE2's syntax: `*`, `+`, `?`, or `{m,n}` from the bounds of a `{...}`."""
    if bounds is None:
        return char
    low, high = bounds
    return f"{{{int(low or 0)},{high and int(high)}}}"


class _GateWriter:
    """Reads a pattern by the syntax of Python's re and writes its gate: one pass over its text."""

    def __init__(self, source: str, flags: int) -> None:
        self.source = source
        self.at = 0
        self.word_stand_in = self.other_stand_in = not flags & _ASCII_FLAG
        self.flags = int(flags)

    def write(self) -> str:
        out = self.alternatives(self.flags)
        if self.at != len(self.source):  # a ")" without its "("
            raise _Unsupported
        return out

    def peek(self, offset: int = 0) -> str:
        index = self.at + offset
        return self.source[index] if index < len(self.source) else ""

    def take(self, chars: str) -> str:
        """The next character when it is one of `chars` (consumed), or ""."""
        char = self.peek()
        if char and char in chars:
            self.at += 1
            return char
        return ""

    def token(self) -> str:
        """The next token as re reads one: an escape with the character after it, or one character."""
        size = 2 if self.peek() == "\\" else 1
        token = self.source[self.at : self.at + size]
        if not token:
            raise _Unsupported
        self.at += len(token)
        return token

    def alternatives(self, flags: int) -> str:
        branches = [self.sequence(flags)]
        while self.take("|"):
            branches.append(self.sequence(flags))
        return "|".join(branches)

    def sequence(self, flags: int) -> str:
        items: list[str] = []
        while (char := self.peek()) and char not in "|)":
            self.at += 1
            verbose = flags & _VERBOSE
            if verbose and char in _VERBOSE_WHITESPACE:
                continue
            if verbose and char == "#":
                while self.peek() and self.token() != "\n":
                    pass
                continue
            bounds = self.braces() if char == "{" else None
            if char in "*+?" or bounds is not None:
                if not items:
                    raise _Unsupported
                items[-1] = f"(?:{items[-1]}){_repeat(char, bounds)}"
                self.take("?+")  # lazy or possessive: the same texts can match
            elif char == "\\":
                items.append(self.escape(flags))
            elif char == "[":
                items.append(self.characters(self.character_class(), flags))
            elif char == "(":
                group = self.group(flags)
                if group is not None:
                    items.append(group)
            elif char == ".":
                items.append(self.characters(".", flags))
            elif char == "^":
                items.append(r"(?m:^)" if flags & _MULTILINE else r"\A")
            elif char == "$":
                items.append(r"(?m:$)")  # before a final newline too, and before any with MULTILINE
            else:
                items.append(_literal(char))
        return "".join(items)

    def braces(self) -> tuple[str, str] | None:
        """After "{": the bounds of a repeat `{m}`, `{m,}`, `{,n}`, `{m,n}` (consumed), or None where
        the brace is a literal one."""
        end = self.at
        low = high = ""
        while end < len(self.source) and self.source[end] in _DIGITS:
            low += self.source[end]
            end += 1
        comma = end < len(self.source) and self.source[end] == ","
        if comma:
            end += 1
            while end < len(self.source) and self.source[end] in _DIGITS:
                high += self.source[end]
                end += 1
        if end >= len(self.source) or self.source[end] != "}" or (not low and not comma):
            return None
        self.at = end + 1
        return low, high if comma else low

    def escape(self, flags: int) -> str:
        """After a backslash, outside a class."""
        char = self.peek()
        if not char:
            raise _Unsupported
        self.at += 1
        if char in _ASSERTIONS:
            return _ASSERTIONS[char]
        if char in "dDsSwW":
            return self.characters("\\" + char, flags)
        return _literal(self.escaped_character(char, in_class=False))

    def escaped_character(self, char: str, *, in_class: bool) -> str:
        """The character an escape names, after its backslash and `char`; a backreference, or one
        beyond ASCII, has no gate."""
        if char in _ESCAPED:
            return _ESCAPED[char]
        if char == "x":
            code = self.digits(_HEX, 2)
            return self.ascii(int(code, 16))
        if char in "uUN":
            raise _Unsupported  # names a character by number or name: beyond ASCII, or needlessly so
        if char in _OCTAL and (in_class or char == "0"):
            return self.ascii(int(char + self.digits(_OCTAL, 2, exact=False), 8))
        if char in _DIGITS:  # three octal digits, or else a backreference
            if char in _OCTAL and self.peek() in _OCTAL and self.peek(1) in _OCTAL:
                return self.ascii(int(char + self.digits(_OCTAL, 2), 8))
            raise _Unsupported
        if char.isascii() and char.isalpha():
            raise _Unsupported  # an escape re does not know (re.compile refuses it)
        return char

    def digits(self, allowed: frozenset[str], count: int, *, exact: bool = True) -> str:
        found = ""
        while len(found) < count and self.peek() in allowed and self.peek():
            found += self.peek()
            self.at += 1
        if exact and len(found) != count:
            raise _Unsupported
        return found

    @staticmethod
    def ascii(code: int) -> str:
        if code >= 128:
            raise _Unsupported
        return chr(code)

    def character_class(self) -> str:
        """After "[": the class's text, from "[" to its "]" (consumed), as re delimits it; a class
        that names a character beyond ASCII has no gate."""
        start = self.at - 1
        self.take("^")
        first = True
        while True:
            token = self.token()
            if token == "]" and not first:
                return self.source[start : self.at]
            first = False
            if token[0] == "\\":
                self.escaped_class_character(token[1])

    def escaped_class_character(self, char: str) -> None:
        """Checks an escape inside a class (after its backslash and `char`): categories and ASCII."""
        if char not in "dDsSwWb":
            self.escaped_character(char, in_class=True)

    def characters(self, atom: str, flags: int) -> str:
        """The RE2 class of what `atom` (a character, class or escape) matches in lower-case text, and
        whether the stand-ins stay faithful to it."""
        matched, word, other = _characters(atom, flags)
        if word and _WORD_STAND_IN not in matched:
            self.word_stand_in = False
        if other and _OTHER_STAND_IN not in matched:
            self.other_stand_in = False
        return _re2_class(matched)

    def group(self, flags: int) -> str | None:
        """After "(": the group as RE2 writes it, or None for a comment or the pattern's own flags."""
        inner_flags = flags
        if self.take("?"):
            kind = self.token()
            if kind == "#":
                while self.token() != ")":
                    pass
                return None
            if kind == "P":
                if not self.take("<"):
                    raise _Unsupported  # (?P=name): a backreference
                while self.token() != ">":
                    pass
            elif kind in ("=", "!") or (kind == "<" and self.take("=!")):
                self.alternatives(flags)  # a lookaround: read, then left out
                self.close()
                return "(?:)"
            elif kind in _FLAGS or kind == "-":
                scoped = self.scoped_flags(kind, flags)
                if scoped is None:
                    return None  # the pattern's own flags, which `pattern.flags` holds
                inner_flags = scoped
            elif kind not in (":", ">"):  # non-capturing and atomic groups are read as plain ones
                raise _Unsupported  # a conditional group
        out = f"(?:{self.alternatives(inner_flags)})"
        self.close()
        return out

    def close(self) -> None:
        if not self.take(")"):
            raise _Unsupported

    def scoped_flags(self, char: str, flags: int) -> int | None:
        """After "(?" and `char`, a flag or "-": the flags inside the group, or None for flags that hold
        for the whole pattern."""
        on = off = 0
        while char in _FLAGS:
            on |= _FLAGS[char]
            char = self.token()
        if char == ")":
            return None
        if char == "-":
            char = self.token()
            while char in _FLAGS:
                off |= _FLAGS[char]
                char = self.token()
        if char != ":":
            raise _Unsupported
        if on & _ASCII_FLAG:
            self.word_stand_in = self.other_stand_in = False
        if on & _TYPE_FLAGS:
            flags &= ~_TYPE_FLAGS
        return (flags | on) & ~off
