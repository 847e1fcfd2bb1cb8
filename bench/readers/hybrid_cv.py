"""The nearest example, backed by the linear scorer where the nearest one is not sure: 2-fold CV on the
tuning parts only (the held-out parts are never read).

    .venv/bin/python bench/readers/hybrid_cv.py riverton      # about 8 minutes on 2 cores

Folds as data/eval_build/choose_thresholds.py makes them: the tuning rows (`eval/*_tune.csv`,
`topic_cases.csv`) split in two by a hash of the text, examples drawn from one half (draw_examples.py),
the other half scored through the real understanding and policy; conversations are scored whole with the
first half's examples. The linear scorer (dialogue.linear) is fitted per fold on that fold's examples
(devstack.fit_examples, numpy).

Each setting reads a turn as the desk does today, except that where the nearest example is not sure
(`min_score`, `min_margin`), the linear scorer's top label is taken when its probability is at least `p`
(`p_other` for `other`) and its lead at least `margin`, and its kind is one of `kinds`. `tau` divides each
label's probability by its example count to the power tau before renormalizing (a prior correction: the
`other` label has most of the examples); `questions_only` takes the linear `other` only for a question.
It prints, per setting, the mean of the groups' shares right (the objective choose_thresholds.py
maximizes), all rows right, and the groups that move. bench/readers/LINEAR.md reports the outcome.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "layers" / "dialogue"), str(ROOT), str(ROOT / "data" / "eval_build")]

import choose_thresholds as ct  # noqa: E402

import devstack.evaluate as evaluate_module  # noqa: E402
from devstack.evaluate import evaluate, read_cases  # noqa: E402
from devstack.fit_examples import fit  # noqa: E402
from dialogue import understanding as U  # noqa: E402
from dialogue.linear import LinearIndex  # noqa: E402
from dialogue.normalize import normalize  # noqa: E402
from dialogue.pack import load_pack  # noqa: E402
from dialogue.similarity import Match  # noqa: E402

SHOWN = ("uncovered", "out_of_scope", "person_request", "person_lookalike", "centre_hours", "programs_offered")
TOPIC_INTENT = ("topic", "intent")
WITH_OTHER = ("topic", "intent", "other")
# (p, p_other, margin, kinds, tau, questions_only); None is the desk as it is.
SETTINGS = [
    None,
    *[(p, 1.0, m, TOPIC_INTENT, 0.0, False) for p in (0.3, 0.5, 0.7) for m in (0.0, 0.1)],
    *[(p, p, 0.1, WITH_OTHER, 0.0, False) for p in (0.3, 0.5, 0.7)],
    *[(0.4, po, 0.1, WITH_OTHER, 0.0, True) for po in (0.5, 0.7, 0.9)],
    *[(p, po, 0.1, WITH_OTHER, tau, True) for tau in (0.5, 1.0) for p, po in ((0.4, 0.6), (0.5, 0.7), (0.6, 0.9))],
]


def linear_match(linear: LinearIndex, text: str, tau: float) -> Match | None:
    probabilities = linear.probabilities(text)
    if probabilities is None:
        return None
    adjusted = [p / count**tau for p, count in zip(probabilities, linear.weights.counts, strict=True)]
    total = sum(adjusted)
    ranked = sorted(range(len(adjusted)), key=lambda i: -adjusted[i])
    top = adjusted[ranked[0]] / total
    second = adjusted[ranked[1]] / total if len(ranked) > 1 else 0.0
    return Match(linear.labels[ranked[0]], top, None, top - second, -1)


def main(desk: str) -> None:
    root = ct.draw_examples.DATA / desk
    lesson = load_pack(root, profile="lesson")
    files = [*sorted((root / "eval").glob("*_tune.csv")), root / "topic_cases.csv"]
    cases = [case for path in files for case in read_cases(path, lesson)]
    talks = {case.conversation for case in cases if not case.conversation.startswith("line ")}
    linear: dict[int, LinearIndex] = {}
    setting: list = [None]
    original = U.understand

    def understand(text, pack, asked=None):  # the desk's understanding, with the linear scorer as backup
        chosen = setting[0]
        if chosen is None:
            return original(text, pack, asked)
        p, p_other, margin, kinds, tau, questions_only = chosen
        examples = pack.examples
        normalized = normalize(text)
        patterns = pack.compiled
        injection = U._screens(normalized, patterns.injection, patterns.benign)
        staff_only = U._screens(normalized, patterns.staff_only, patterns.benign)
        found = pack.example_index.match(normalized)
        if U._sure(found, examples) is None:
            backup = linear_match(linear[id(pack)], normalized, tau)
            question = patterns.question.search(normalized) is not None
            allowed = kinds if question or not questions_only else TOPIC_INTENT
            if (
                backup is not None
                and backup.label.partition(":")[0] in allowed
                and backup.score >= (p_other if backup.label == "other" else p)
                and backup.margin >= margin
            ):
                score = max(examples.min_score, found.score if found is not None else 0.0)
                found = Match(backup.label, score, None, max(examples.min_margin, backup.margin), -1)
        return U._read_at_desk(normalized, pack, found, examples, asked, injection, staff_only)

    evaluate_module.understand = understand
    with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
        packs = [ct.pack_for(desk, half, {}, Path(folder)) for half, folder in enumerate((first, second))]
        for pack in packs:
            assert pack.examples is not None
            linear[id(pack)] = LinearIndex.build(pack.examples.labelled(), fit(pack.examples, "fold"))
        for chosen in SETTINGS:
            setting[0] = chosen
            right: dict[str, int] = {}
            rows: dict[str, int] = {}
            for half, pack in enumerate(packs):
                scored = [
                    case
                    for case in cases
                    if (case.conversation in talks and half == 0)
                    or (case.conversation not in talks and ct.fold(case.text) != half)
                ]
                for outcome in evaluate(scored, pack):
                    group = outcome.case.group
                    rows[group] = rows.get(group, 0) + 1
                    right[group] = right.get(group, 0) + outcome.right
            mean = sum(right[group] / rows[group] for group in rows) / len(rows)
            shown = " ".join(f"{group}={right.get(group, 0)}/{rows.get(group, 0)}" for group in SHOWN if group in rows)
            label = "desk as it is" if chosen is None else str(chosen)
            print(f"{label}: mean {mean:.4f}, all {sum(right.values())}/{sum(rows.values())}; {shown}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "riverton")
