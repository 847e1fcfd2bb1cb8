"""A turn's misspelt words read as the desk's own words, before the desk profile reads the turn.

Residents type on phones: "pohne", "wheelchiar", "forkilft", "tlak to a prson". The pack's rules and
examples are written in the desk's words, so a misspelling nobody listed is read as nothing, or as a
word of something else. `Speller.correct` writes such a word as the desk word it misspells, under these
conditions, all of them needed:

- the word has four letters or more and letters only;
- it is no English word, no English word with a plain ending the list lacks ("texting"), and no word
  the desk uses (`DomainPack.desk_words`, the desk's examples and shorthand included, so a misspelling
  a rule or an example already reads is left as it is). A contraction typed without its apostrophe
  ("dont", "youre") is an English word here: it is never made "done" or "your";
- a desk word that is an English word lies within the edits `lexicon.allowed_edits` allows (one, two
  from nine letters on: insertions, deletions, substitutions and swaps of two neighbours), with its
  first letter kept, as a typo rarely hits the first letter. A four-letter word is read only through
  two swapped letters ("tlak", "txet"): with a letter changed it is too often another word ("mech" is
  not "much"), and with one dropped ("emal") it counts only as an answer, as the lexicon reads it;
- the word is no name: one typed with a capital after the turn's first word (`names`: "Dr Lecter");
- most of the turn's longer words are English, the desk's or misspelt desk words: a turn in another
  language is left as typed ("nicht" is no misspelt "night").

A word of eight letters or more typed without its spaces, that is no word and misspells none, is read as
the English words it runs together ("emailmeplease", "iwanttojointhedatasupportcourse"), where they are the
likeliest split by their frequencies, none but "a" and "i" shorter than two letters, three letters long on
average, and one of them a desk word of four letters or more: a foreign word or a name rarely splits so. A word within
two edits of a desk word is a misspelling of it, never split ("forkflit" is no "fork flit").

The nearest word wins, then the commoner in English. So "pohne" reads "phone", "wheelchiar"
"wheelchair", "forkilft" "forklift", and "boil", "civil" or "flight" stay what they are. A desk gets this
from its own words with no rule written.

The English words are pyspellchecker's English word-frequency list (MIT licence), read from the
installed package, never downloaded, and checked against a pinned SHA-256 (`ENGLISH_SHA256`) before
use. The list is read once per process (about 0.2 s; SnapStart's prime reads it into the snapshot).

The screens never read the corrected text: they read the turn as typed (normalized), so a correction
can neither hide an attack nor invent one. Like `dialogue.normalize`, `correct` is a pure function of
the text that never logs, stores or raises with it.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources

from dialogue.pack.lexicon import DeletionIndex, allowed_edits, within

ENGLISH_SHA256 = "2474a48af86fd81dccea9edd0bba6cd36dd2ecedc0ae217cefcb233bba28613c"
"""SHA-256 of `spellchecker/resources/en.json.gz` in pyspellchecker 0.8.3."""
MIN_LETTERS = 4
SPLIT_MIN_LETTERS = 8
LONGEST_WORD = 24
MAX_EDITS = 2  # the most `lexicon.allowed_edits` allows
TARGET_MIN_LETTERS = 3
_ENDINGS = ("s", "es", "d", "ed", "ing", "er", "ers", "ly")
_NAME = re.compile(r"\b[^\W\d_][^\W\d_]+")
_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")


@dataclass(frozen=True)
class English:
    """English words with their frequencies; a contraction is a word typed without its apostrophe too
    (`unapostrophed`: "dont", "youre")."""

    frequency: Mapping[str, int]
    unapostrophed: frozenset[str]

    def __contains__(self, word: object) -> bool:
        return word in self.frequency or word in self.unapostrophed

    @cached_property
    def total(self) -> int:
        """Every word's count summed: a word's share of English is its count over this."""
        return sum(self.frequency.values())


@lru_cache(maxsize=1)
def english() -> English:
    """pyspellchecker's English word list, hash-checked: a different list would read turns differently."""
    import gzip
    import json

    data = (resources.files("spellchecker") / "resources" / "en.json.gz").read_bytes()
    if hashlib.sha256(data).hexdigest() != ENGLISH_SHA256:
        raise RuntimeError("pyspellchecker's English word list is not the pinned one; install the pinned version.")
    frequency: dict[str, int] = json.loads(gzip.decompress(data))
    unapostrophed = frozenset(word.replace("'", "") for word in frequency if "'" in word)
    return English(frequency, unapostrophed)


class Speller:
    """Corrects a turn's misspellings of one desk's words (see the module's docstring)."""

    def __init__(self, desk_words: Iterable[str], english_words: English) -> None:
        self._known = frozenset(desk_words)
        self._english = english_words
        # Every target by each string it leaves with up to two letters deleted (SymSpell's index): a word within
        # two edits of a target shares one of them, so a turn's word is compared with a handful of targets, not all.
        targets = (
            word for word in self._known if len(word) >= TARGET_MIN_LETTERS and word.isalpha() and word in english_words
        )
        self._targets = DeletionIndex(targets, lambda _: MAX_EDITS)

    def correct(self, text: str, keep: frozenset[str] = frozenset()) -> str:
        """`text` (normalized) with each misspelt desk word written as that word, but those in `keep` (`names`);
        as it was where most of its longer words are neither English, the desk's, nor a misspelling of the
        desk's (another language)."""
        tokens = [
            token
            for token in _TOKEN.findall(text)
            if len(token) >= MIN_LETTERS and token.isalpha() and token not in keep
        ]
        unknown = [token for token in tokens if not self._is_a_word(token)]
        fixes = {token: fixed for token in unknown if (fixed := self._nearest(token) or self._split(token)) is not None}
        if not fixes:
            return text
        foreign = len(unknown) - sum(1 for token in unknown if token in fixes)
        if foreign > len(tokens) - foreign:
            return text
        return _TOKEN.sub(lambda found: fixes.get(found.group(), found.group()), text)

    def _is_a_word(self, token: str) -> bool:
        """Whether `token` is an English or desk word, or one with a plain ending the list lacks ("texting")."""
        if token in self._known or token in self._english:
            return True
        return any(
            token.endswith(ending) and (stem in self._english or stem in self._known or f"{stem}e" in self._english)
            for ending in _ENDINGS
            if len(stem := token[: -len(ending)]) >= 3
        )

    def desk_word(self, token: str) -> str | None:
        """The desk word `token` misspells, or None."""
        if len(token) < MIN_LETTERS or not token.isalpha() or self._is_a_word(token):
            return None
        return self._nearest(token)

    def _nearest(self, token: str) -> str | None:
        """The nearest desk word within the edits `token` may hold (no English or desk word itself), or None."""
        limit = max(1, allowed_edits(token))
        candidates = self._targets.near(token, limit)
        best: tuple[int, int, str] | None = None
        for word in sorted(candidates):
            if word[0] != token[0] or abs(len(word) - len(token)) > limit:
                continue
            if len(token) == MIN_LETTERS and not _swapped(token, word):
                continue
            for edits in range(1, limit + 1):
                if within(token, word, edits):
                    candidate = (edits, -self._english.frequency.get(word, 0), word)
                    best = candidate if best is None or candidate < best else best
                    break
        return best[2] if best else None

    def _split(self, token: str) -> str | None:
        """The English words `token` runs together, spaced ("emailmeplease" -> "email me please"), or None: the
        split whose words are likeliest by frequency (a word's cost its rarity), kept only where no word but "a"
        and "i" is a single letter, the words average three letters or more, and one is a desk word of four or
        more letters."""
        if len(token) < SPLIT_MIN_LETTERS:
            return None
        if any(within(token, word, MAX_EDITS) for word in self._targets.near(token, MAX_EDITS)):
            return None  # a desk word typed with two slips ("forkflit"), which the desk's lexicon may read, not a run
        frequency, total = self._english.frequency, self._english.total
        # best[end]: the cheapest split of token[:end], as (cost, start of its last word).
        best: list[tuple[float, int] | None] = [(0.0, 0)] + [None] * len(token)
        for end in range(1, len(token) + 1):
            for start in range(max(0, end - LONGEST_WORD), end):
                before, word = best[start], token[start:end]
                if before is None or (count := frequency.get(word, 0)) == 0:
                    continue
                if len(word) == 1 and word not in ("a", "i"):
                    continue
                cost = before[0] + math.log(total / count)
                if best[end] is None or cost < best[end][0]:  # type: ignore[index]
                    best[end] = (cost, start)
        if best[-1] is None:
            return None
        words: list[str] = []
        end = len(token)
        while end > 0:
            start = best[end][1]  # type: ignore[index]
            words.insert(0, token[start:end])
            end = start
        if len(words) < 2 or len(token) < 3 * len(words):
            return None
        if not any(len(word) >= MIN_LETTERS and word in self._known for word in words):
            return None
        return " ".join(words)


def names(typed: str) -> frozenset[str]:
    """The words of the turn as typed that begin with a capital after its first word ("play Dr. Lecter"), case
    folded: a name, not a misspelling. A word in capitals throughout ("FORKFLIT") is no name."""
    return frozenset(word.casefold() for word in _NAME.findall(typed)[1:] if word[0].isupper() and word[1:].islower())


def _swapped(token: str, word: str) -> bool:
    """Whether `word` holds the letters of `token` (within an edit: two neighbours swapped)."""
    return len(word) == len(token) and sorted(word) == sorted(token)
