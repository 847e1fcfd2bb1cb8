"""Run every benchmark (P1-P8) in a fresh process and write bench/RESULTS.md: `make bench`.

Each benchmark's output is passed through as it runs; its `"kind": "summary"` JSON line carries the
figure, the goal, whether it is met, its table and its notes. bench/gpu_realizer.py is not run here
(it needs a GPU and the pinned weights). Exits 1 if a benchmark failed to run; a missed goal is a
figure to explain, not a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

from bench._common import ROOT, load_average, machine_info
from bench.gpu_realizer import MODEL_ID, REVISION

BENCHMARKS = (
    ("P1", "bench.p1_turn_overhead", "Turn overhead"),
    ("P2", "bench.p2_compute", "Compute per turn"),
    ("P3", "bench.p3_cold_start", "Cold start"),
    ("P4", "bench.p4_prompt_growth", "Prompt growth"),
    ("P5", "bench.p5_storage", "Storage per item"),
    ("P6", "bench.p6_screens", "Screens"),
    ("P7", "bench.p7_batching", "Realizer batching"),
    ("P8", "bench.p8_flat_reads", "Flat reads"),
)
RESULTS = ROOT / "bench" / "RESULTS.md"

# What was changed in the code because a figure missed and a profile showed why.
FIXES = """\
- **P1, turn overhead** (`layers/dialogue/dialogue/pack.py`): with DOMAIN_PACK_DIR unset (devstack,
  tests), every request resolved the repository's pack folder again (`Path.resolve()`, a syscall per
  path part), about 80 µs of the handler's ~500 µs of own work per turn; it is now resolved once. In
  Lambda DOMAIN_PACK_DIR is set and P1 sets it the same way.
- **P2, understanding** (`layers/dialogue/dialogue/normalize.py`, `pack.py`, `understanding.py`): the
  profile showed the 26 understanding patterns' scans (IGNORECASE) and `normalize`'s character-by-character
  pass as nearly all of the time. Now: understanding patterns written in lower case are compiled without
  IGNORECASE, since they only ever see case-folded text (exact: `normalize` also maps the dotless i (U+0131),
  the one character that case folding keeps and IGNORECASE equates with an ASCII letter, to "i";
  tests/unit/test_fast_paths.py checks every code point and compares both forms on the case file and on
  generated look-alike text); ASCII text takes a short path through `normalize` with the same result;
  the negation scopes are found only when a turn mentions a slot value. Before these changes, on this
  machine: 89 µs per seed turn and 350 µs per longer turn.
- **P2, the two slowest screens** (`data/riverton/domain.toml`): the pattern table showed role_change and
  prompt_talk, a dozen top-level branches each with its own `\\b`, at 30 µs per longer turn each, ten
  times the other patterns: Python's re tried every branch at every position. Their branches that start
  at a word (and the negation after-cue's) now share one `\\b`: the same matches (checked on 300,000
  word-salad texts and 120,000 generated matches of each pattern), 10-12 µs each. Longer turns went
  from about 180 to 130 µs.
- **P3, cold start** (`layers/dialogue/dialogue/observability.py`): the Tracer patched every library
  the X-Ray SDK supports that was installed (httpx, requests, sqlite3, ...), importing each at cold
  start; the functions only call AWS through boto3, so it now patches botocore alone. Before: 2.16x
  Lambda-like (2.46x in the development environment, where the X-Ray SDK's own start dominates).
- **P5, storage** (`layers/dialogue/dialogue/store.py`): an earlier run kept the TURN item under 400 B
  with epoch-second times and the screens that fired as a bit field. The goal is now one write unit
  (1 KB) per item, and the record is kept readable instead: every time in ISO 8601, the screens that
  fired as a set of their names. A TURN item is 394 B at turn 1 and at most 534 B.
- **P6, the desk profile** (`layers/dialogue/dialogue/pack/word_gate.py`, `screens.py`): the desk's
  eight screens first ran at 10,900 replies/s, each of its patterns 4-10 µs per reply (Python's re tries
  a pattern that begins with `\\b` at every word). Each pattern now has a word gate, read from its parse
  tree: the words, or pairs of neighbouring words, a match can begin (or end) with; one lookup of the
  reply's words and pairs opens the gates, and a shut gate skips the scan (exact:
  tests/unit/test_word_gate.py checks generated text for every pack and the screens' verdicts with every
  gate open). Also: the selected rows' text, numerals and fallback are cached per job's rows and state,
  the report is a tuple, and the program-name pattern looks for a capital before its exclusion list.
  Before: 10,878 replies/s with the desk profile; the lesson profile went from 22,184 to 34,745.
  Later (issue 26), the gates no longer read the parse tree of CPython's private `re._parser`: each
  gate is its pattern written again in RE2's syntax from the pattern's text (lookarounds left out, each
  class as the ASCII characters Python's re says it matches), and one `re2.Set` (google-re2) pass over
  the reply runs them all; a gate opens only where its pattern can match, not wherever a first word
  appears. Run in pairs, the code before and after: 34,641 and 40,809, 26,521 and 38,988, 33,893 and
  40,295 replies/s with the desk profile.
- **P8, flat reads** (`layers/dialogue/dialogue/desk.py`, `desk_store.py`, `conversation.py`, `store.py`):
  the figures read both whole queues (1,004 items with 1,000 stored) and every `/messages` poll the whole
  conversation (1,001). The figures now come from counters in a STATS partition (TOTAL, and one item per
  UTC day of decisions) that each decision and close adds to in its own transaction, and from COUNT
  queries on the open-queue index; their median and p90 are bounds of fixed buckets. A poll reads the
  STATE item and the staff message counter, and, when something is new, the end of the conversation
  backwards (tests/integration/test_message_reads.py checks the numbering against the whole-conversation
  computation on generated conversations).

Later changes that moved figures (the outbox, the code's new layout):

- **P1**: a generated turn no longer sends the RealizeJob itself (the table's stream carries it to the
  dispatch function), so both kinds of turn are now one read and one transaction, handler and bare.
- **P7**: the transformers engine now generates a batch at once (left-padded); the benchmark reports it
  beside the one-job-at-a-time baseline the goal names.
- **P2, P3, P6** read slower than in the run before (36 µs per seed turn, 1.74x, 34,262 replies/s): the
  machine was in a slow spell. P2 and P6, run in pairs minutes apart, the code before this session and
  this code, gave the same figures (P2: 58 and 58, 61 and 61, 75 and 71 µs per seed turn; P6: 15,771 and
  21,286, 21,076 and 22,322 replies/s); P3 was not run in pairs.
"""


def run(module: str) -> tuple[int, dict[str, Any] | None, float]:
    """Run one benchmark, echoing its output; its exit code, summary record and seconds."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", module],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    record = None
    assert process.stdout is not None
    for line in process.stdout:
        sys.stdout.write(line)
        if line.startswith("{"):
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError:
                continue
            if parsed.get("kind") == "summary":
                record = parsed
    code = process.wait()
    return code, record, time.perf_counter() - started


def main() -> int:
    started = time.perf_counter()
    when = datetime.now(UTC)
    info = machine_info()
    outcomes: list[dict[str, Any]] = []
    for bench, module, title in BENCHMARKS:
        print(f"\n===== {bench} {title} ({module}) =====", flush=True)
        before = load_average()
        code, record, seconds = run(module)
        outcomes.append(
            {
                "bench": bench,
                "title": title,
                "module": module,
                "code": code,
                "record": record,
                "seconds": seconds,
                "load_before": before,
                "load_after": load_average(),
            }
        )
    total = time.perf_counter() - started
    RESULTS.write_text(report(outcomes, info, when, total), encoding="utf-8")
    print(f"\nWrote {RESULTS.relative_to(ROOT)} in {total / 60:.1f} minutes.")
    return 1 if any(outcome["code"] != 0 or outcome["record"] is None for outcome in outcomes) else 0


def report(outcomes: list[dict[str, Any]], info: dict[str, Any], when: datetime, total: float) -> str:
    packages = ", ".join(f"{name} {version}" for name, version in info["packages"].items())
    lines = [
        "# Benchmark results",
        "",
        "Written by `make bench` (`python -m bench.run_all`); do not edit by hand. Each figure is a ratio or a rate "
        "measured side by side in one run (interleaved where both sides fit one process or one loop); the "
        "scripts in bench/ print every measurement as JSON lines.",
        "",
        f"- Date: {when:%Y-%m-%d %H:%M} UTC; `make bench` took {total / 60:.1f} minutes.",
        f"- Machine: {info['cpu']}, {info['logical_cpus']} logical CPUs ({info['usable_cpus']} usable), "
        f"{info['memory_gib']} GiB memory; {info['platform']}.",
        f"- Python {info['python']} ({info['implementation']}); {packages}.",
        "- Load average (1 min) before and after each benchmark is in its section; other work on the machine "
        "weighs on both sides of each ratio.",
        "",
        "## Figures",
        "",
        "| item | question | figure | goal | verdict |",
        "| --- | --- | --- | --- | --- |",
    ]
    for outcome in outcomes:
        record = outcome["record"]
        if record is None:
            lines.append(
                f"| {outcome['bench']} | {outcome['title']} | did not run (exit {outcome['code']}) | | failed |"
            )
            continue
        verdict = "met" if record["met"] else "missed: explained below"
        lines.append(
            f"| {outcome['bench']} | {record['question']} | {record['figure']} | {record['goal']} | {verdict} |"
        )
    lines += ["", "## Changes made for these figures", "", FIXES.rstrip(), ""]
    for outcome in outcomes:
        record = outcome["record"]
        lines += [
            f"## {outcome['bench']}: {outcome['title']}",
            "",
            f"`python -m {outcome['module']}`: {outcome['seconds']:.0f} s, load average "
            f"{outcome['load_before']:.2f} before, {outcome['load_after']:.2f} after.",
            "",
        ]
        if record is None:
            lines += [f"It did not finish (exit {outcome['code']}): see its output.", ""]
            continue
        verdict = "met" if record["met"] else "**missed**"
        lines += [
            f"{record['question']}. Goal {record['goal']}: {verdict}, {record['figure']}.",
            "",
            record["table"],
            "",
        ]
        if record["notes"]:
            lines += [record["notes"], ""]
        if outcome["bench"] == "P4":
            lines += ["![Prompt tokens per turn](prompt_growth.png)", ""]
    lines += [
        "## The realizer on a GPU",
        "",
        f"`python -m bench.gpu_realizer` measures the pinned {MODEL_ID} "
        f"({REVISION}) on vLLM's CUDA build at batch sizes 1, 2, 4, ..., 256: "
        "replies/s and generated tokens/s. It needs a GPU and the weights already in the local Hugging Face "
        "cache (it checks first, and exits 2 with one sentence when they are absent), so `make bench` does not "
        "run it; `--markdown FILE` writes its table.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
