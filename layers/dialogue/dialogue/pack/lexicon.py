"""The words that name a slot's values, drawn from the pack itself, and a bounded edit distance.

A resident answering "which one?" writes a word of the value's own name ("the blue one"), or misspells
it by a letter. `value_words(spec)` gives, per slot, each word that names one value and no other of
the same slot: from the value's id ("blue_badge"), its label (`value_labels`) and, for the program
slot, the program's display name ("Blue Badge Renewal"). A word two values share ("renewal" in two
display names) names neither, and words of three letters or fewer, function words and the plain values
(yes, no, unknown) are left out: a yes or a no is read by the pack's answer patterns. So a desk gains
these words with no rule written, and a second desk gets its own from its own names.

`within(word, known, limit)` is the optimal-string-alignment distance (insertions, deletions,
substitutions and swaps of two neighbours) bounded by `limit`: "bleu" is one swap from "blue",
"renwal" one deletion from "renewal". It stops as soon as the bound is passed, so a long word costs
little. `DeletionIndex` finds the few words a token may be within edits of, so `within` runs on those alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from dialogue.pack.schema import UNKNOWN, DomainSpec

_WORD = re.compile(r"[^\W\d_]+")
PLAIN_VALUES = frozenset({UNKNOWN, "yes", "no"})
MIN_LETTERS = 4
# Words that never name a value on their own, whatever a desk calls its values.
_FUNCTION_WORDS = frozenset(
    {
        *("a", "an", "the", "this", "that", "these", "those", "of", "to", "in", "on", "at", "for", "with"),
        *("from", "by", "and", "or", "but", "if", "as", "into", "your", "our", "my", "their", "its", "one"),
        *("ones", "some", "any", "all", "not"),
    }
)


def value_words(spec: DomainSpec) -> Mapping[str, Mapping[str, str]]:
    """Per slot, each word naming exactly one of its values, with that value. A word of the desk's own
    name names the desk, not a value ("waste" at a bulky waste desk), so it is left out too."""
    programs = {program.id: program.display_name for program in spec.programs}
    desk_words = set(_WORD.findall(spec.domain.name.casefold()))
    found: dict[str, dict[str, str]] = {}
    for slot in spec.frame.slots:
        named: dict[str, set[str]] = {}
        for value in slot.values:
            if value in PLAIN_VALUES:
                continue
            names = [value.replace("_", " "), slot.value_labels.get(value, "")]
            if slot.name == spec.domain.program_slot:
                names.append(programs.get(value, ""))
            for word in _WORD.findall(" ".join(names).casefold()):
                if len(word) >= MIN_LETTERS and word not in _FUNCTION_WORDS and word not in desk_words:
                    named.setdefault(word, set()).add(value)
        words = {word: values.pop() for word, values in named.items() if len(values) == 1}
        if words:
            found[slot.name] = words
    return found


def allowed_edits(word: str) -> int:
    """How many edits a misspelling of `word` may hold: none under 5 letters, one under 9, else two."""
    return 0 if len(word) < 5 else 1 if len(word) < 9 else 2


def misspells(token: str, word: str, limit: int) -> bool:
    """Whether `token` (five letters or more) is `word` misspelt within `limit` edits, its first letter kept:
    a typo rarely hits the first letter, and the test skips most words at once. A word typed without its
    vowels ("frklft") is misspelt too, however many it drops."""
    return len(token) >= 5 and token[0] == word[0] and (within(token, word, limit) or _without_vowels(token, word))


_VOWELS = re.compile(r"[aeiou]")


def without_vowels_key(word: str) -> str:
    """`word` with its vowels left out: a token typed so ("frklft") is looked up by it."""
    return _VOWELS.sub("", word)


def deletions(word: str, edits: int) -> set[str]:
    """`word` and every string it leaves with up to `edits` letters deleted (SymSpell's index: two words within
    `edits` edits of each other share one of these)."""
    found = {word}
    frontier = {word}
    for _ in range(edits):
        frontier = {variant[:at] + variant[at + 1 :] for variant in frontier for at in range(len(variant))}
        found |= frontier
    return found


class DeletionIndex:
    """Words by every string they leave with up to `edits(word)` letters deleted (SymSpell's index). A token within
    k edits of an indexed word (k at most that word's edits) shares one of its own deletions of up to k letters with
    it: `near(token, k)` is every such word, and a few more, to be checked with `within` or `misspells`."""

    def __init__(self, words: Iterable[str], edits: Callable[[str], int]) -> None:
        self._by_deletion: dict[str, list[str]] = {}
        for word in sorted(words):
            for variant in deletions(word, edits(word)):
                self._by_deletion.setdefault(variant, []).append(word)

    def near(self, token: str, edits: int) -> set[str]:
        """The indexed words that share a deletion of up to `edits` letters with `token`."""
        return {word for variant in deletions(token, edits) for word in self._by_deletion.get(variant, ())}


def _without_vowels(token: str, word: str) -> bool:
    """Whether `token` is `word` with every vowel left out (texting shorthand: "frklft", "spprt")."""
    return _VOWELS.search(token) is None and without_vowels_key(word) == token != word


def within(word: str, known: str, limit: int) -> bool:
    """Whether `word` is at most `limit` edits (optimal string alignment) from `known`."""
    if abs(len(word) - len(known)) > limit:
        return False
    if word == known:
        return True
    if limit == 0:
        return False
    previous2: list[int] | None = None
    previous = list(range(len(known) + 1))
    for i, char in enumerate(word, 1):
        current = [i] + [0] * len(known)
        for j, other in enumerate(known, 1):
            cost = 0 if char == other else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if previous2 is not None and i > 1 and j > 1 and char == known[j - 2] and word[i - 2] == other:
                value = min(value, previous2[j - 2] + 1)
            current[j] = value
        if min(current) > limit:
            return False
        previous2, previous = previous, current
    return previous[-1] <= limit
