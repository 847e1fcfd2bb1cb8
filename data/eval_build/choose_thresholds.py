"""Choose a desk's examples.toml thresholds by two-fold cross-validation on its tuning data alone.

    .venv/bin/python data/eval_build/choose_thresholds.py riverton

The tuning rows (`eval/*_tune.csv`) and the desk's `topic_cases.csv` are split in two by a hash of the
text. Examples are drawn (as `draw_examples.py` draws them) from one half into a copy of the pack, the
other half is scored through the desk profile with the real understanding and policy, and the halves
swap. Every setting of the grid is scored by the mean of its per-group shares right; settings that
refuse more than 1% of the benign rows are ruled out. The held-out parts are never read. It prints
every setting, best last.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from itertools import product
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "layers" / "dialogue"), str(ROOT), str(Path(__file__).parent)]

import draw_examples  # noqa: E402

from devstack.evaluate import evaluate, read_cases  # noqa: E402
from dialogue.pack import DomainPack, load_pack  # noqa: E402

GRID = {
    "min_score": (0.3, 0.4, 0.5, 0.6, 0.7),
    "min_margin": (0.03, 0.08, 0.15),
    "screen_min_score": (0.7, 1.0),
    "inform_min_score": (0.0, 0.2),
    "far_score": (0.0, 0.15, 0.25, 0.35),
}
BENIGN = ("benign", "benign_nonenglish")


def fold(text: str) -> int:
    return int(hashlib.sha256(" ".join(text.split()).encode()).hexdigest(), 16) % 2


def pack_for(desk: str, half: int, thresholds: dict[str, float], into: Path) -> DomainPack:
    """A copy of the desk whose examples come from one half of its tuning data."""
    read = draw_examples._rows
    draw_examples._rows = lambda path: [row for row in read(path) if fold(row["text"]) == half]
    try:
        drawn = draw_examples.draw(desk)
    finally:
        draw_examples._rows = read
    drawn.update(thresholds)
    for name in ("domain.toml", "handbook.csv"):
        shutil.copy(draw_examples.DATA / desk / name, into / name)
    (into / "examples.toml").write_text(draw_examples.render(desk, drawn), encoding="utf-8")
    return load_pack(into, profile="desk")


def with_thresholds(pack: DomainPack, thresholds: dict[str, float]) -> DomainPack:
    """The fold's pack with other thresholds, keeping its built index (the thresholds do not change it)."""
    assert pack.examples is not None
    index = pack.example_index
    copy = pack.model_copy(update={"examples": pack.examples.model_copy(update=thresholds)})
    copy.__dict__["example_index"] = index
    return copy


def main(desk: str) -> None:
    root = draw_examples.DATA / desk
    lesson = load_pack(root, profile="lesson")
    files = [*sorted((root / "eval").glob("*_tune.csv")), root / "topic_cases.csv"]
    cases = [case for path in files for case in read_cases(path, lesson)]
    # Conversations are never drawn from, so every fold scores them whole; single turns are scored in the
    # fold whose examples were drawn from the other half.
    talks = {case.conversation for case in cases if not case.conversation.startswith("line ")}
    results = []
    with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
        folds = [pack_for(desk, half, {}, Path(folder)) for half, folder in enumerate((first, second))]
        for values in product(*GRID.values()):
            thresholds = dict(zip(GRID, values, strict=True))
            right: dict[str, int] = {}
            rows: dict[str, int] = {}
            for half in (0, 1):
                pack = with_thresholds(folds[half], thresholds)
                chosen = [case for case in cases if case.conversation in talks or fold(case.text) != half]
                for outcome in evaluate(chosen, pack):
                    group = outcome.case.group
                    rows[group] = rows.get(group, 0) + 1
                    right[group] = right.get(group, 0) + outcome.right
            shares = {group: right[group] / rows[group] for group in rows}
            benign = min(shares.get(group, 1.0) for group in BENIGN)
            mean = sum(shares.values()) / len(shares)
            results.append((benign >= 0.99, mean, thresholds))
    results.sort(key=lambda result: (result[0], result[1]))
    for allowed, mean, thresholds in results:
        print(f"{mean:.4f} {'ok' if allowed else 'refuses benign'} {thresholds}")


if __name__ == "__main__":
    main(sys.argv[1])
