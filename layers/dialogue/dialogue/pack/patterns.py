"""A pack's regular expressions: how each kind is checked at load and compiled (dialogue.pack.compiled
compiles them all once).

Understanding patterns are matched against `dialogue.normalize.normalize(text)` (NFKC-folded,
case-folded, invisible characters gone); the reply screens, program aliases and required patterns run
on a generated reply normalized with its letter case kept (`dialogue.normalize.normalize_reply`), and
the desk's word screens on that case-folded (`normalize` of it): see `dialogue.screens`.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, StringConstraints

NonEmptyText = Annotated[str, StringConstraints(min_length=1, strip_whitespace=True)]


def compile_pattern(pattern: str, flags: re.RegexFlag = re.IGNORECASE) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as error:
        raise ValueError(f"invalid regular expression: {error}") from None


# Escapes that name a character by its number (\x41, \u0041, \N{...}, octal) or refer back to a group.
_NUMBERED_ESCAPE = re.compile(r"\\(?:[xuUN0-9])")


def compile_understanding(pattern: str) -> re.Pattern[str]:
    """An understanding pattern, for matching against `normalize(text)`, which is case-folded.

    Written in lower case, with no escape that names a character by number and no character outside
    ASCII that has a case (an emoji has none), a pattern matches normalized text the same with or without
    IGNORECASE: the text's only letters that IGNORECASE equates with a lower-case ASCII letter are that
    letter itself (see `dialogue.normalize`). It is compiled without it, which lets Python's re skip ahead
    on literal characters (about twice as fast). Any other pattern keeps IGNORECASE.
    """
    caseless = all(char.isascii() or char.lower() == char == char.upper() for char in pattern)
    if caseless and not any(char.isupper() for char in pattern) and not _NUMBERED_ESCAPE.search(pattern):
        return compile_pattern(pattern, re.NOFLAG)
    return compile_pattern(pattern)


# Texts on which an understanding pattern must not match zero characters: one that can would fire on
# every turn (or mark every position a negation cue), which is never what its author meant.
_EMPTY_MATCH_PROBES = ("", "x", "x y, z. ")


def _valid_pattern(pattern: str) -> str:
    compile_pattern(pattern)
    return pattern


def _valid_understanding_pattern(pattern: str) -> str:
    # Compiled as it will run, so `CompiledPatterns` later finds it in re's cache.
    compiled = compile_understanding(pattern)
    for probe in _EMPTY_MATCH_PROBES:
        if any(match.end() == match.start() for match in compiled.finditer(probe)):
            raise ValueError("pattern can match empty text, so it would fire on every turn")
    return pattern


PatternText = Annotated[NonEmptyText, AfterValidator(_valid_pattern)]
"""A regular expression that compiles (reply screens, aliases, required patterns)."""

UnderstandingPatternText = Annotated[NonEmptyText, AfterValidator(_valid_understanding_pattern)]
"""An understanding pattern: compiles, and can never match empty text."""
