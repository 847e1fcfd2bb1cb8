"""P2 examples: labelling a turn by similarity to example utterances (dialogue.similarity), in µs.

An index of 60 labels x 15 synthetic examples (900 examples, generated from templates and a seeded
random draw, so every run builds the same set) stands for a desk whose author wrote examples instead
of regular expressions. Reported:

- build: ms to build the index from the examples (once per pack load);
- per turn: µs for `ExampleIndex.match` on texts of about 30, 120, 300 and 1,000 characters (median
  and p95 over many distinct texts, each the fastest of a few calls), and how much of it is
  `normalize` and feature extraction rather than the index's postings;
- the index's size: features, postings, and how many postings a turn of each length touches.

Not part of run_all.py: it prints figures and asserts nothing.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Callable

from bench._common import emit, markdown_table, summary
from dialogue.normalize import normalize
from dialogue.similarity import ExampleIndex, _word_features, _words_and_bigrams

BENCH = "P2-examples"
QUESTION = "Similarity to example utterances per turn (pure Python TF-IDF index)"
GOAL_US = 300.0
GOAL_TEXT = f"≤ {GOAL_US:.0f} µs per turn of ≤ 300 characters against ~900 examples"
LABELS = 60
EXAMPLES_PER_LABEL = 15
LENGTHS = (30, 120, 300, 1000)
TEXTS_PER_LENGTH = 200
CALLS_PER_TEXT = 15
SEED = 20240611

# Topic nouns: each label gets three of its own, so labels differ in content words and share the rest.
_NOUN_TEXT = """
parking fees refund deposit schedule timetable classroom teacher instructor certificate licence exam
result grade transcript uniform locker library laptop software login password account portal invoice
receipt payment instalment scholarship grant bursary loan discount waitlist enrolment application
deadline interview assessment placement internship mentor tutor workshop seminar lecture homework
assignment project report attendance absence sickness holiday weekend evening morning afternoon bus
train bicycle wheelchair ramp elevator hearing interpreter translator visa passport residency
citizenship address postcode email phone mailbox letter form signature photo identity document
childcare nursery kindergarten lunch canteen coffee kitchen microwave fridge shower toilet cleaning
safety helmet boots gloves forklift warehouse crane ladder scaffold welding electrician plumbing
carpentry painting cooking baking barista hospitality reception cashier retail customer complaint
feedback survey manager supervisor counsellor advisor coach nurse doctor pharmacy dentist insurance
pension tax benefit allowance wages salary contract overtime shift roster vacancy career resume
reference portfolio diploma degree course module credit unit level syllabus textbook calculator
printer scanner stapler notebook pencil keyboard monitor headset microphone camera projector
"""
NOUNS = _NOUN_TEXT.split()
_DETAIL_TEXT = """
tomorrow today next week monday friday morning online in person cheap free late early quickly again
still already first second new old extra full part time long short open closed cancelled
"""
DETAILS = _DETAIL_TEXT.split()
TEMPLATES = (
    "what about the {a}",
    "i have a question about my {a}",
    "can you tell me about the {a} and the {b}",
    "how do i get a {a} {d}",
    "is the {a} {d}",
    "where can i find the {b}",
    "i need help with {a} {d} please",
    "when is the {a} for the {c}",
    "who do i talk to about the {b} {d}",
    "do you have any {c} info",
    "my {a} is not working {d}",
    "how much does the {b} cost",
    "what are the rules for {c}",
    "i want to change my {a} to {d}",
    "tell me more about {b} and {c}",
    "could someone explain the {c} {d}",
    "is there a {a} near the {b}",
)


def synthetic_examples(rng: random.Random) -> dict[str, list[str]]:
    nouns = NOUNS[:]
    rng.shuffle(nouns)
    examples: dict[str, list[str]] = {}
    for label in range(LABELS):
        a, b, c = (nouns[(3 * label + offset) % len(nouns)] for offset in range(3))
        texts = []
        for template in rng.sample(TEMPLATES, EXAMPLES_PER_LABEL):
            texts.append(template.format(a=a, b=b, c=c, d=rng.choice(DETAILS)))
        examples[f"label_{label:02d}"] = texts
    return examples


def with_typo(word: str, rng: random.Random) -> str:
    if len(word) < 5:
        return word
    position = rng.randrange(1, len(word) - 1)
    return word[:position] + word[position + 1] + word[position] + word[position + 2 :]


def turn_text(length: int, rng: random.Random) -> str:
    """A turn of about `length` characters: clauses in the examples' style, some words misspelt, a
    capital here and there, and words no example has."""
    clauses: list[str] = []
    size = 0
    while size < length:
        template = rng.choice(TEMPLATES)
        clause = template.format(a=rng.choice(NOUNS), b=rng.choice(NOUNS), c=rng.choice(NOUNS), d=rng.choice(DETAILS))
        words = [with_typo(word, rng) if rng.random() < 0.15 else word for word in clause.split()]
        if rng.random() < 0.3:
            words.append(rng.choice(("honestly", "because of work", "thank you so much", "if possible")))
        clause = " ".join(words)
        clauses.append(clause[0].upper() + clause[1:])
        size += len(clause) + 2
    text = ". ".join(clauses)
    return text[:length].rsplit(" ", 1)[0] + "?"


def timed_per_text(function: Callable[[str], object], texts: list[str]) -> list[float]:
    """µs per call for each text: the fastest of CALLS_PER_TEXT calls, after one warm call (as timeit
    advises: other work on a shared machine only ever adds time)."""
    results = []
    gc.collect()
    gc.disable()
    try:
        for text in texts:
            function(text)
            fastest = float("inf")
            for _ in range(CALLS_PER_TEXT):
                started = time.perf_counter()
                function(text)
                fastest = min(fastest, time.perf_counter() - started)
            results.append(fastest * 1e6)
    finally:
        gc.enable()
    return results


def entries_touched(index: ExampleIndex, words_and_bigrams: tuple[dict[str, float], dict[str, float]]) -> int:
    """How many index entries a turn adds up: its known words' merged lists, its new words' n-gram lists
    and its bigrams' lists."""
    words, bigrams = words_and_bigrams
    touched = 0
    for word in words:
        known = index._words.get(word)
        if known is not None:
            touched += len(known[1])
        else:
            touched += sum(len(index._features[key][1]) for key in _word_features(word) if key in index._features)
    return touched + sum(len(index._features[key][1]) for key in bigrams if key in index._features)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:

    rng = random.Random(SEED)
    examples = synthetic_examples(rng)
    total = sum(len(texts) for texts in examples.values())

    builds = []
    index = ExampleIndex.build(examples)
    for _ in range(5):
        gc.collect()
        started = time.perf_counter()
        index = ExampleIndex.build(examples)
        builds.append((time.perf_counter() - started) * 1e3)
    build_ms = statistics.median(builds)
    features = index._features
    postings = sum(len(entry[1]) for entry in features.values()) + sum(len(entry[1]) for entry in index._words.values())
    emit(BENCH, "build", labels=len(examples), examples=total, ms=build_ms, features=len(features), postings=postings)

    rows = []
    values: dict[str, dict[str, float]] = {"build": {"ms": build_ms, "examples": total, "postings": postings}}
    for length in LENGTHS:
        texts = [turn_text(length, rng) for _ in range(TEXTS_PER_LENGTH)]
        match_us = timed_per_text(index.match, texts)
        front_us = timed_per_text(lambda text: _words_and_bigrams(normalize(text)), texts)
        touched = [entries_touched(index, _words_and_bigrams(normalize(text))) for text in texts]
        mean_chars = statistics.mean(len(text) for text in texts)
        median_us, p95_us = statistics.median(match_us), percentile(match_us, 0.95)
        values[f"{length} chars"] = {
            "mean_chars": mean_chars,
            "median_us": median_us,
            "p95_us": p95_us,
            "features_us": statistics.median(front_us),
            "postings_touched": statistics.median(touched),
        }
        emit(BENCH, "turns", chars=length, **values[f"{length} chars"])
        rows.append(
            [
                f"~{length}",
                f"{mean_chars:.0f}",
                f"{median_us:.0f}",
                f"{p95_us:.0f}",
                f"{statistics.median(front_us):.0f}",
                f"{statistics.median(touched):.0f}",
            ]
        )

    short_enough = [values[f"{length} chars"]["p95_us"] for length in LENGTHS if length <= 300]
    met = max(short_enough) <= GOAL_US
    table = markdown_table(
        [
            "turn length",
            "mean characters",
            "match µs (median)",
            "match µs (p95)",
            "of which normalize + words µs",
            "index entries added up (median)",
        ],
        rows,
    )
    notes = (
        f"Index: {len(examples)} labels, {total} examples, {len(features):,} listed n-grams and bigrams, "
        f"{len(index._words):,} words, {postings:,} list entries; "
        f"build {build_ms:.0f} ms (median of {len(builds)}). Each length: {TEXTS_PER_LENGTH} distinct texts, "
        f"each timed as the fastest of {CALLS_PER_TEXT} calls; median and p95 over the texts."
    )
    figure = (
        f"{values['120 chars']['median_us']:.0f} µs per 120-character turn, "
        f"{values['300 chars']['median_us']:.0f} µs per 300-character turn (p95 {values['300 chars']['p95_us']:.0f}), "
        f"build {build_ms:.0f} ms"
    )
    summary(BENCH, QUESTION, GOAL_TEXT, figure=figure, met=met, table=table, notes=notes, values=values)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
