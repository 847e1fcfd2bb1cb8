"""Labels a turn by its similarity to a desk's example utterances, so an author writes examples, not regexes.

`ExampleIndex.build({label: [example, ...]})` builds, in memory and deterministically, a TF-IDF index
of the examples; `match(text)` returns the label whose closest example is most similar to the turn,
with its score and its margin to the next label; understanding takes that label only when it is both
similar enough and clear enough ("below the margin: abstain or clarify, never guess"). Standard library
only: it runs in the Lambda layer, where there is no numpy, and nothing is downloaded. Nothing is read from
disk either, unless a process asks `ExampleIndex.kept` to keep the built index in a folder (devstack's
commands do, so each local run after the first reads it back instead of building it: see `kept`).

Features, all of the normalized text (`dialogue.normalize.normalize`, so case, full-width letters,
zero-width characters and look-alike letters are already folded away):

- word unigrams and word bigrams (bigrams carry a little word order, unigrams none);
- character n-grams of 3 to 5 characters of each word padded with boundary markers, fastText style
  ("hours" gives "<ho", "hou", ..., "urs>", "<hou", ..., "<hour", ..., "ours>"), so a misspelt word
  ("openning") still shares most of its n-grams with the right one ("opening").

Weights: sublinear tf times a smoothed idf over the examples (ln((1 + n) / (1 + df)) + 1, as
scikit-learn's), times the feature's kind weight (`WORD_WEIGHT`, `BIGRAM_WEIGHT`, `CHAR_WEIGHT`), and
every vector is L2-normalized, so a dot product is a cosine in 0..1. The sublinear tf (1 + ln c) is
taken per word and per bigram: a word said c times counts 1 + ln c times, with all its features
(unigram and n-grams); n-grams that two different words share add up. That makes a text's vector the
sum of its words' vectors, which is what lets the index precompute, per word of the examples, one
merged list of the examples it touches (see below). A feature no example has still counts in the
turn's norm (with the largest idf): words the desk has never seen make a turn less like every example,
which is what keeps an unrelated question's score low.

A short list of English function words (`STOP_WORDS`: articles, pronouns, auxiliaries, prepositions,
conjunctions, greetings) is down-weighted, not dropped: their unigrams weigh `STOP_WEIGHT` in every
vector's norm, and they get no character n-grams (a typo in "the" tells nothing, and n-grams such as
"<th" would touch most examples at every turn). Their unigrams have no index list either: worth a few
thousandths of a cosine, they would be the longest lists of all. So an example's own text scores a
little under 1 (0.98 for "what are your opening hours"), and a turn of function words alone matches
nothing. A bigram of two function words ("do i", "is the") is not a feature at all; one with a content
word ("the fee", "how long") is.
Question words ("what", "when", "who", "how") and negations ("not", "no") are not on the list: they
tell a question's kind and a request's sense.

Speed: a turn touches only its own features. The index keeps, per feature, the examples that have it
with their weights (an inverted index), and, per word of the examples, those lists merged into one
(example, summed weight) list, so a known word costs one pass over the examples that share any of its
features rather than one pass per n-gram. Words the examples never had (misspellings, new words) go
through the per-feature lists. Entries worth less than `PRUNE` cosine even if their word were the
whole turn are left out of the lists (mostly examples sharing one or two common n-grams such as
"ing>"): scores move by under 0.01, and the lists shrink by a fifth. bench/p2_examples.py times it.

A label's score is the cosine of its best example (nearest neighbour per label). The mean of a label's
two best examples was measured too, on the fixture of tests/unit/test_similarity.py: the same 10 of 10
unseen paraphrases, and leave-one-out accuracy within one or two examples of 80 either way; the best
example's cosine is kept, as the simpler one that `Match.example` can point at.

The turn's text is user text: this module never logs it, never puts it in an exception and keeps nothing
of it after a call returns (no cache holds a turn's words).
"""

from __future__ import annotations

import bisect
import hashlib
import marshal
import math
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from itertools import chain, pairwise
from operator import mul
from pathlib import Path

from dialogue.normalize import normalize

__all__ = ["BIGRAM_WEIGHT", "CHAR_WEIGHT", "STOP_WEIGHT", "STOP_WORDS", "WORD", "WORD_WEIGHT", "ExampleIndex", "Match"]

# Words: runs of letters and digits, with inner apostrophes kept ("don't", "i'd").
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")

# Kinds of feature, as a multiplier on their TF-IDF weight before normalization. Character n-grams
# are many per word (12 for a five-letter word), so they weigh less each; together they still carry
# most of a word's weight, which is what makes a misspelling match.
WORD_WEIGHT = 1.0
BIGRAM_WEIGHT = 0.7
CHAR_WEIGHT = 0.35
CHAR_SIZES = (3, 4, 5)

# English function words, down-weighted by STOP_WEIGHT (not dropped) and given no character n-grams.
# Kept short on purpose: only words that say nothing about what a turn asks for. Question words,
# negations, quantities ("much", "many", "long") and verbs with meaning are deliberately absent.
STOP_WEIGHT = 0.3
_STOP_LIST = """
    a an the this that these those
    i i'm i'd i've i'll me my mine we our us you your it it's its they them their he she his her
    am is are was were be been being do does did have has had will would shall should can could may
    might must
    of to in on at for with from by about as into than then so and or but if
    there here just also please hi hello hey thanks thank ok okay
    """
STOP_WORDS = frozenset(_STOP_LIST.split())

# Index entries worth less than this much cosine are left out (see `ExampleIndex.build`).
PRUNE = 0.01
# How many built indexes `ExampleIndex.kept` keeps in its folder (a desk's is a few MB): the newest.
KEPT_INDEXES = 12

# Features of each kind have their own form, so they never collide: a unigram starts with a space
# (" hours"), a bigram has one inside ("opening hours"), a character n-gram has none ("<ho", "our").
_Postings = tuple[tuple[int, float], ...]  # (example index, weight)


@cache
def _source_digest() -> str:
    """What a kept index is made from besides its examples: this package's source (the features, the
    normalization), read once per process that keeps one."""
    sources = sorted(Path(__file__).parent.rglob("*.py"))
    return hashlib.sha256(b"".join(path.read_bytes() for path in sources)).hexdigest()


@dataclass(frozen=True)
class Match:
    """The best label for a turn, how sure, and against what."""

    label: str  # the best label
    score: float  # cosine similarity of the best example of that label, 0..1
    runner_up: str | None  # the best other label with any overlap, if any
    margin: float  # score minus the best score of any other label (score if none)
    example: int  # index of the best example, in build order (for debugging; never text)


def _kind(feature: str) -> float:
    """A feature's kind weight, from its form (see the note above `Match`)."""
    if feature[0] == " ":
        return WORD_WEIGHT * STOP_WEIGHT if feature[1:] in STOP_WORDS else WORD_WEIGHT
    return BIGRAM_WEIGHT if " " in feature else CHAR_WEIGHT


def _word_features(word: str) -> tuple[str, ...]:
    """A word's unigram and, unless it is a function word, its character n-grams, each as often as
    the word has it ("banana" has "ana" twice)."""
    if word in STOP_WORDS:
        return (" " + word,)
    padded = f"<{word}>"
    length = len(padded)
    grams = [padded[start : start + size] for size in CHAR_SIZES for start in range(length - size + 1)]
    return (" " + word, *grams)


def _sublinear(count: int) -> float:
    return 1.0 + math.log(count) if count > 1 else 1.0


def _words_and_bigrams(normalized: str) -> tuple[dict[str, float], dict[str, float]]:
    """Each distinct word and each bigram (but those of two function words) with its sublinear tf."""
    words = WORD.findall(normalized)
    word_counts: dict[str, int] = {}
    for word in words:
        word_counts[word] = word_counts.get(word, 0) + 1
    bigram_counts: dict[str, int] = {}
    stop = STOP_WORDS
    for first, second in pairwise(words):
        if first not in stop or second not in stop:
            bigram = f"{first} {second}"
            bigram_counts[bigram] = bigram_counts.get(bigram, 0) + 1
    return (
        {word: _sublinear(count) for word, count in word_counts.items()},
        {bigram: _sublinear(count) for bigram, count in bigram_counts.items()},
    )


class ExampleIndex:
    """A TF-IDF index of a desk's example utterances, by label. Build it once per pack load."""

    __slots__ = ("_features", "_labels", "_ranges", "_size", "_starts", "_unseen_idf", "_weights", "_words")

    def __init__(
        self,
        labels: tuple[str, ...],
        ranges: tuple[tuple[int, int], ...],
        weights: dict[str, float],
        features: dict[str, tuple[float, _Postings]],
        words: dict[str, tuple[tuple[str, ...], _Postings]],
        unseen_idf: float,
    ) -> None:
        self._labels = labels
        self._ranges = ranges  # per label, its examples' indices: [start, end)
        self._starts = [start for start, _ in ranges]
        # Per unigram and n-gram of the examples' words: its kind weight times its idf.
        self._weights = weights
        # Per n-gram and bigram: its kind weight times its idf, and the examples that have it with their
        # weight (the inverted index), for a turn's new words and its bigrams.
        self._features = features
        # Per word of the examples: its features, and the examples sharing any of them with the summed
        # weight (one merged list; empty for a function word).
        self._words = words
        self._unseen_idf = unseen_idf
        self._size = ranges[-1][1]

    @property
    def labels(self) -> tuple[str, ...]:
        return self._labels

    def __len__(self) -> int:
        """How many examples the index holds."""
        return self._size

    @staticmethod
    def _read(
        examples: Mapping[str, Sequence[str]],
    ) -> list[tuple[str, list[tuple[dict[str, float], dict[str, float]]]]]:
        """Each label and its examples' words and bigrams, checked as `build` documents."""
        if not examples:
            raise ValueError("no labels: give at least one label with examples")
        read = []
        for label, texts in examples.items():
            if not isinstance(label, str) or not label.strip():
                raise ValueError(f"label {label!r} is not a non-empty string")
            if isinstance(texts, str):
                raise ValueError(f"label {label!r}: examples must be a sequence of strings, not one string")
            if not texts:
                raise ValueError(f"label {label!r} has no examples")
            parts = []
            for position, text in enumerate(texts):
                if not isinstance(text, str):
                    raise ValueError(f"label {label!r}, example {position}: not a string")
                words, bigrams = _words_and_bigrams(normalize(text))
                if not words:
                    raise ValueError(f"label {label!r}, example {position}: has no words")
                if all(word in STOP_WORDS for word in words):
                    raise ValueError(f"label {label!r}, example {position}: has only function words")
                parts.append((words, bigrams))
            read.append((label, parts))
        return read

    @classmethod
    def check(cls, examples: Mapping[str, Sequence[str]]) -> None:
        """Raise what `build` would raise for these examples, without building the index (a few ms
        where building takes hundreds: a pack checks its examples at load and builds on first use)."""
        cls._read(examples)

    @classmethod
    def build(cls, examples: Mapping[str, Sequence[str]], *, prune: float = PRUNE) -> ExampleIndex:
        """An index of `examples`, label to its example utterances, in their order (ties between labels
        go to the earlier one).

        Raises ValueError, naming the label (never an example's text), for a label with no examples, an
        example with no words, or one made only of function words, which nothing could ever match.
        `prune` leaves out of the lists the entries worth less than that much cosine when the word (or
        n-gram, or bigram) is the turn's only one: a turn's score is the same within a few thousandths.
        """
        labels: list[str] = []
        ranges: list[tuple[int, int]] = []
        vocabulary: dict[str, tuple[str, ...]] = {}
        documents: list[dict[str, float]] = []  # per example, feature -> tf times kind weight
        for label, read in cls._read(examples):
            start = len(documents)
            for words, bigrams in read:
                document: dict[str, float] = {}
                for word, tf in words.items():
                    features = vocabulary.get(word)
                    if features is None:
                        features = vocabulary[word] = _word_features(word)
                    for feature in features:
                        document[feature] = document.get(feature, 0.0) + tf * _kind(feature)
                for bigram, tf in bigrams.items():
                    document[bigram] = tf * BIGRAM_WEIGHT
                documents.append(document)
            labels.append(label)
            ranges.append((start, len(documents)))

        size = len(documents)
        frequency: dict[str, int] = {}
        for document in documents:
            for feature in document:
                frequency[feature] = frequency.get(feature, 0) + 1
        idf = {feature: math.log((1 + size) / (1 + df)) + 1.0 for feature, df in frequency.items()}
        unseen_idf = math.log(1 + size) + 1.0

        postings: dict[str, list[tuple[int, float]]] = {}
        for index, document in enumerate(documents):
            vector = {feature: value * idf[feature] for feature, value in document.items()}
            norm = math.sqrt(sum(weight * weight for weight in vector.values()))
            for feature, weight in vector.items():
                postings.setdefault(feature, []).append((index, weight / norm))

        weights = {
            feature: _kind(feature) * idf[feature]
            for feature in postings
            if feature.count(" ") != 1 or feature[0] == " "
        }
        # Per-feature lists, for what a turn reaches feature by feature: the n-grams of words no example
        # has, and bigrams. Unigrams are reached only through their word's merged list.
        features_index: dict[str, tuple[float, _Postings]] = {}
        for feature, entries in postings.items():
            if feature[0] == " ":
                continue
            weight = _kind(feature) * idf[feature]
            # Alone in a turn, a bigram weighs at most 1; an n-gram of a new word at most its weight over
            # that word's own unigram's, which no example has.
            bound = 1.0 if " " in feature else weight / (WORD_WEIGHT * unseen_idf)
            kept = tuple(entry for entry in entries if entry[1] * bound >= prune)
            if kept:
                features_index[feature] = (weight, kept)

        merged_words: dict[str, tuple[tuple[str, ...], _Postings]] = {}
        for word, features in vocabulary.items():
            if word in STOP_WORDS:  # counted in a turn's norm, worth too little to any score to list
                merged_words[word] = (features, ())
                continue
            merged: dict[int, float] = {}
            squares = 0.0
            for feature in features:
                weight = weights[feature]
                squares += weight * weight
                for index, value in postings[feature]:
                    merged[index] = merged.get(index, 0.0) + weight * value
            floor = prune * math.sqrt(squares)  # an entry's cosine, were the turn this word alone, is value / norm
            kept = tuple((index, value) for index, value in sorted(merged.items()) if value >= floor)
            merged_words[word] = (features, kept)
        return cls(tuple(labels), tuple(ranges), weights, features_index, merged_words, unseen_idf)

    @classmethod
    def kept(cls, examples: Mapping[str, Sequence[str]], folder: Path, *, prune: float = PRUNE) -> ExampleIndex:
        """The index `build` gives, read back from `folder` when a process before this one built it, else
        built and kept there (a second, a process: devstack's commands start this much sooner).

        The file is named by what the index is made from: the examples, `prune`, the source of this
        package (a change to the features or the normalization is another file) and marshal's format.
        It holds only the index's own tables (strings, numbers, tuples, dicts), read with `marshal`,
        which builds data, never code. A file that cannot be read is built over; a folder that cannot be
        written keeps nothing. Examples that `build` refuses raise as `build` does, and nothing is kept.
        """
        labelled = [(label, tuple(texts)) for label, texts in examples.items()]
        made_from = (marshal.version, _source_digest(), prune, labelled)
        path = folder / f"example-index-{hashlib.sha256(marshal.dumps(made_from)).hexdigest()[:40]}.marshal"
        try:
            return cls(*marshal.loads(path.read_bytes()))
        except (OSError, EOFError, ValueError, TypeError, IndexError):
            pass
        index = cls.build(examples, prune=prune)
        state = (index._labels, index._ranges, index._weights, index._features, index._words, index._unseen_idf)
        written = path.with_name(f"{path.name}.{os.getpid()}.part")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            written.write_bytes(marshal.dumps(state))
            os.replace(written, path)  # whole or not at all, whatever runs beside it
            # Each change to the examples or the code makes a new file: the oldest go (a file another
            # process is reading stays readable to it).
            made = sorted(folder.glob("example-index-*.marshal"), key=lambda kept: kept.stat().st_mtime)
            for old in made[:-KEPT_INDEXES]:
                old.unlink(missing_ok=True)
        except OSError:
            with suppress(OSError):
                written.unlink(missing_ok=True)
        return index

    def _scores(self, text: str) -> tuple[list[float], float] | None:
        """The turn's dot product with every example, unscaled, and the scale (1 / the turn's norm) that
        makes them cosines; None when the turn shares no listed feature with any example."""
        words, bigrams = _words_and_bigrams(normalize(text))
        if not words:
            return None
        known_words = self._words
        features = self._features
        unseen = self._unseen_idf
        once: list[tuple[str, ...]] = []  # the features of known words said once, for the norm
        extra: dict[str, float] = {}  # the other words' features, with their weight, for the norm
        plain: list[_Postings] = []  # lists to add as they are (a known word said once)
        weighted: list[tuple[float, _Postings]] = []  # lists to add times a weight
        squares = 0.0
        for word, tf in words.items():
            known = known_words.get(word)
            if known is not None:
                word_features, merged = known
                if tf == 1.0:
                    once.append(word_features)
                    if merged:
                        plain.append(merged)
                else:
                    for feature in word_features:
                        extra[feature] = extra.get(feature, 0.0) + tf * self._weights[feature]
                    if merged:
                        weighted.append((tf, merged))
                continue
            for feature in _word_features(word):
                entry = features.get(feature)
                if entry is None:
                    weight = tf * _kind(feature) * unseen
                else:
                    weight = tf * entry[0]
                    weighted.append((weight, entry[1]))
                extra[feature] = extra.get(feature, 0.0) + weight
        for bigram, tf in bigrams.items():
            entry = features.get(bigram)
            if entry is None:
                weight = tf * BIGRAM_WEIGHT * unseen
            else:
                weight = tf * entry[0]
                weighted.append((weight, entry[1]))
            squares += weight * weight
        if not plain and not weighted:
            return None

        # The norm: features of words said once are counted in C; the rest corrects their squares.
        counts = Counter(chain.from_iterable(once))
        known_weights = self._weights
        vector = list(map(mul, map(known_weights.__getitem__, counts), counts.values()))
        squares += sum(map(mul, vector, vector))
        for feature, weight in extra.items():
            base = counts[feature] * known_weights[feature] if feature in counts else 0.0
            squares += weight * (weight + 2.0 * base)

        scores = [0.0] * self._size
        for entries in plain:
            for index, value in entries:
                scores[index] += value
        for weight, entries in weighted:
            for index, value in entries:
                scores[index] += weight * value
        return scores, 1.0 / math.sqrt(squares)

    def match(self, text: str) -> Match | None:
        """The best label, its score and its margin over the next label; None when the turn has no
        feature in common with any example (empty or whitespace text included)."""
        found = self._scores(text)
        if found is None:
            return None
        scores, scale = found
        top = max(scores)
        if top <= 0.0:
            return None
        example = scores.index(top)  # the first of equals: ties go to the earlier label
        position = bisect.bisect_right(self._starts, example) - 1
        start, end = self._ranges[position]
        score = min(top * scale, 1.0)  # rounding may put an identical text a hair above 1
        before = max(scores[:start], default=0.0)
        after = max(scores[end:], default=0.0)
        if before <= 0.0 and after <= 0.0:
            return Match(self._labels[position], score, None, score, example)
        other = scores.index(before, 0, start) if before >= after else scores.index(after, end)
        runner_up = self._labels[bisect.bisect_right(self._starts, other) - 1]
        return Match(self._labels[position], score, runner_up, score - min(max(before, after) * scale, 1.0), example)
