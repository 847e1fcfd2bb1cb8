"""The linear scorer (`scorer = "linear"`, dialogue.linear) against the nearest example, inside the desk.

    .venv/bin/python bench/readers/linear_eval.py cv riverton          # 2-fold CV of min_score, tune parts only
    .venv/bin/python bench/readers/linear_eval.py score riverton tune MIN_SCORE
    .venv/bin/python bench/readers/linear_eval.py score riverton heldout MIN_SCORE   # once, at the end
    .venv-lambda/bin/python bench/readers/linear_eval.py timing riverton           # the Lambda runtime

`cv` is data/eval_build/choose_thresholds.py's approach (copied, not imported from its working copy's
grid): the tuning rows (`eval/*_tune.csv`, `topic_cases.csv`) are split in two by a hash of the text,
examples are drawn from one half (draw_examples.py), the linear scorer is fitted on them
(devstack.fit_examples) and the other half is scored with the real understanding and policy; a
setting's figure is the mean of its per-group shares right, and one that refuses more than 1% of the
benign rows is ruled out. Only min_score moves (0.3, 0.4, 0.5); the other thresholds stay as the
desk's examples.toml has them. The nearest scorer is scored on the same folds with the file's
thresholds, for reference.

`score` copies the desk to a temporary folder twice, as it is (nearest) and with `scorer = "linear"`
(fitted there, with the file's thresholds, and again with min_score = MIN_SCORE), and runs
`python -m devstack eval --pack COPY FILE --json` on each file, printing a Markdown table.

`timing`: cold start (a fresh process: import, load the pack, build the index, one match) and per-turn
time (median of 1000 turns of 150 characters), nearest and linear; run it with the Lambda venv.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "layers" / "dialogue"), str(ROOT), str(ROOT / "data" / "eval_build")]

BENIGN = ("benign", "benign_nonenglish")
MIN_SCORES = (0.3, 0.4, 0.5)


def fold(text: str) -> int:
    return int(hashlib.sha256(" ".join(text.split()).encode()).hexdigest(), 16) % 2


def _with_scorer(text: str, scorer: str, min_score: float | None = None) -> str:
    """examples.toml's text with `scorer` set (after the thresholds) and, if given, another min_score."""
    lines = [line for line in text.splitlines() if not line.startswith("scorer =")]
    if min_score is not None:
        lines = [f"min_score = {min_score}" if line.startswith("min_score =") else line for line in lines]
    at = next(index for index, line in enumerate(lines) if line.startswith("min_margin ="))
    lines.insert(at + 1, f'scorer = "{scorer}"')
    return "\n".join(lines) + "\n"


def copy_desk(desk: str, into: Path, scorer: str, min_score: float | None = None, examples: str | None = None) -> Path:
    """A copy of data/<desk> in `into` with `scorer` (fitted, for linear)."""
    from devstack.fit_examples import fit_pack

    shutil.copytree(ROOT / "data" / desk, into, dirs_exist_ok=True)
    source = examples if examples is not None else (into / "examples.toml").read_text(encoding="utf-8")
    (into / "examples.toml").write_text(_with_scorer(source, scorer, min_score), encoding="utf-8")
    if scorer == "linear":
        fit_pack(into)
    return into


def _thresholds(desk: str) -> dict[str, float]:
    import tomllib

    data = tomllib.loads((ROOT / "data" / desk / "examples.toml").read_text(encoding="utf-8"))
    return {key: value for key, value in data.items() if isinstance(value, float | int) and not isinstance(value, bool)}


def cv(desk: str) -> None:
    import draw_examples

    from devstack.evaluate import evaluate, read_cases
    from dialogue.pack import load_pack

    root = ROOT / "data" / desk
    lesson = load_pack(root, profile="lesson")
    files = [*sorted((root / "eval").glob("*_tune.csv")), root / "topic_cases.csv"]
    cases = [case for path in files for case in read_cases(path, lesson)]
    talks = {case.conversation for case in cases if not case.conversation.startswith("line ")}
    thresholds = _thresholds(desk)
    print(f"{desk}: thresholds in examples.toml {thresholds}")
    settings = [("nearest", None), *(("linear", value) for value in (None, *MIN_SCORES))]
    right: dict[tuple[str, float | None], dict[str, int]] = {setting: {} for setting in settings}
    rows: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for half in (0, 1):
            read = draw_examples._rows
            draw_examples._rows = lambda path, read=read, half=half: [
                row for row in read(path) if fold(row["text"]) == half
            ]
            try:
                drawn = draw_examples.draw(desk)
            finally:
                draw_examples._rows = read
            drawn.update({key: value for key, value in thresholds.items() if key in drawn})
            text = draw_examples.render(desk, drawn)
            chosen = [case for case in cases if case.conversation in talks or fold(case.text) != half]
            for group in (case.group for case in chosen):
                rows[group] = rows.get(group, 0) + 1
            for scorer, min_score in settings:
                folder = Path(scratch) / f"{half}-{scorer}-{min_score}"
                pack = load_pack(copy_desk(desk, folder, scorer, min_score, text), profile="desk")
                for outcome in evaluate(chosen, pack):
                    counts = right[(scorer, min_score)]
                    counts[outcome.case.group] = counts.get(outcome.case.group, 0) + outcome.right
    groups = sorted(rows)
    print("| setting | mean | benign ok | " + " | ".join(groups) + " |")
    print("|---|---|---|" + "---|" * len(groups))
    for scorer, min_score in settings:
        shares = {group: right[(scorer, min_score)].get(group, 0) / rows[group] for group in groups}
        mean = sum(shares.values()) / len(shares)
        benign = min(shares.get(group, 1.0) for group in BENIGN)
        name = f"{scorer} min_score={min_score if min_score is not None else thresholds['min_score']}"
        cells = " | ".join(f"{shares[group]:.2f}" for group in groups)
        print(f"| {name} | {mean:.4f} | {'yes' if benign >= 0.99 else 'no'} | {cells} |")


def _eval(pack: Path, files: list[Path]) -> dict[str, tuple[int, int]]:
    done = subprocess.run(
        [sys.executable, "-m", "devstack", "eval", "--pack", str(pack), "--json", *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr)
    decoder = json.JSONDecoder()
    out, text, at = {}, done.stdout, 0
    while at < len(text):
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            break
        report, at = decoder.raw_decode(text, at)
        out[Path(report["file"]).name] = (report["right"], report["rows"])
    return out


def score(desk: str, part: str, min_score: float) -> None:
    root = ROOT / "data" / desk
    if part == "tune":
        files = [*sorted((root / "eval").glob("*_tune.csv")), root / "topic_cases.csv"]
    else:
        files = [*sorted((root / "eval").glob("*_heldout.csv")), *sorted(root.glob("topic_cases_heldout*.csv"))]
    sha = hashlib.sha256((root / "examples.toml").read_bytes()).hexdigest()[:12]
    print(f"{desk} {part}: examples.toml sha256 {sha}…, thresholds {_thresholds(desk)}")
    with tempfile.TemporaryDirectory() as scratch:
        nearest = copy_desk(desk, Path(scratch) / "nearest", "nearest")
        linear = copy_desk(desk, Path(scratch) / "linear", "linear")
        tuned = copy_desk(desk, Path(scratch) / "tuned", "linear", min_score)
        results = [_eval(pack, files) for pack in (nearest, linear, tuned)]
    head = f"| {desk} file | rows | nearest | linear (file's thresholds) | linear (min_score {min_score}) |"
    print(head)
    print("|---|---|---|---|---|")
    totals = [[0, 0] for _ in results]
    for path in files:
        cells = []
        for position, result in enumerate(results):
            right, count = result[path.name]
            totals[position][0] += right
            totals[position][1] += count
            cells.append(f"{right / count:.3f} ({right})")
        print(f"| {path.name} | {count} | " + " | ".join(cells) + " |")
    print(f"| all rows | {totals[0][1]} | " + " | ".join(f"{r / n:.3f} ({r})" for r, n in totals) + " |")


_COLD = """
import sys, time
start = time.perf_counter()
sys.path.insert(0, {layer!r})
from dialogue.pack import load_pack
pack = load_pack({pack!r}, profile="desk")
pack.example_index.match("when are you open on saturdays")
print(time.perf_counter() - start)
"""


def timing(desk: str) -> None:
    import csv
    import random

    from bench._common import median_call_us
    from dialogue.pack import load_pack

    root = ROOT / "data" / desk
    texts = []
    for path in sorted((root / "eval").glob("*_tune.csv")):
        with path.open(encoding="utf-8", newline="") as handle:
            texts += [row.get("text") or row.get("user_utterance") or "" for row in csv.DictReader(handle)]
    chooser = random.Random(7)
    turns = []
    while len(turns) < 1000:
        turn = ""
        while len(turn) < 150:
            turn += " " + chooser.choice(texts)
        turns.append(turn[:150])
    print(f"{desk}: Python {sys.version.split()[0]}, median of 5 fresh processes / of 1000 turns of 150 characters")
    with tempfile.TemporaryDirectory() as scratch:
        for scorer in ("nearest", "linear"):
            if scorer == "linear":
                folder = Path(scratch) / scorer
                shutil.copytree(root, folder)
                # fitted by the dev venv (numpy); this process may be the Lambda venv's, without it
                text = _with_scorer((folder / "examples.toml").read_text(encoding="utf-8"), "linear")
                (folder / "examples.toml").write_text(text, encoding="utf-8")
                subprocess.run([str(ROOT / ".venv/bin/python"), "-m", "devstack", "fit-examples", str(folder)],
                               cwd=ROOT, check=True, capture_output=True)  # fmt: skip
            else:
                folder = root
            layer = str(ROOT / "layers" / "dialogue")
            cold = []
            for _ in range(5):
                done = subprocess.run(
                    [sys.executable, "-c", _COLD.format(layer=layer, pack=str(folder))],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                cold.append(float(done.stdout))
            index = load_pack(folder, profile="desk").example_index
            assert index is not None
            per_turn = median_call_us(index.match, turns)
            size = (folder / "examples.weights.json").stat().st_size if scorer == "linear" else 0
            print(f"| {desk} | {scorer} | {statistics.median(cold):.2f} s | {per_turn:.0f} µs | {size / 1024:.0f} kB |")


if __name__ == "__main__":
    mode, desk, *rest = sys.argv[1:]
    if mode == "cv":
        cv(desk)
    elif mode == "score":
        score(desk, rest[0], float(rest[1]))
    elif mode == "timing":
        timing(desk)
    else:
        raise SystemExit(__doc__)
