"""The production realizer on a GPU: the pinned Qwen2.5-1.5B-Instruct on vLLM, replies/s and tokens/s by batch size.

For a machine with an NVIDIA GPU, vLLM (the CUDA build) and the weights already in the local Hugging
Face cache; `make bench` does not run it. It never downloads: it first looks for the pinned revision
in the local cache (HF_HOME / HF_HUB_CACHE) and, when the weights are not there, says so in one
sentence and exits 2.

    python -m bench.gpu_realizer [--batch-sizes 1,2,4,...,256] [--passes 3] [--markdown FILE]

The engine is the container's own (realizer.vllm_engine.VllmEngine with the production defaults:
greedy, 60 new tokens at most, repetition penalty 1.05, bfloat16 as the checkpoint says), the jobs
are built from states and actions as the turn API builds them. For each batch size: a warm-up pass,
then `--passes` timed passes of `realize` on that many jobs; replies/s and generated tokens/s from
the median pass. Prints JSON lines and a table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench._common import emit, machine_info, markdown_table, package_version
from realizer.engines import QWEN_MODEL_ID as MODEL_ID
from realizer.engines import QWEN_REVISION as REVISION

BENCH = "GPU"
BATCH_SIZES = tuple(2**power for power in range(9))  # 1, 2, 4, ..., 256


def cached_weights(model_id: str = MODEL_ID, revision: str = REVISION) -> Path | None:
    """The local snapshot folder of `model_id` at `revision` if its config, tokenizer and weights are there."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        folder = Path(snapshot_download(model_id, revision=revision, local_files_only=True))
    except Exception:  # LocalEntryNotFoundError and its kin: not in the cache
        return None
    needed = ("config.json", "tokenizer.json", "tokenizer_config.json")
    if not all((folder / name).is_file() for name in needed):
        return None
    if not any(folder.glob("*.safetensors")):
        return None
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", default=",".join(map(str, BATCH_SIZES)))
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--markdown", type=Path, help="also write the table and the machine to this file")
    arguments = parser.parse_args(argv)
    sizes = [int(size) for size in arguments.batch_sizes.split(",")]

    folder = cached_weights()
    if folder is None:
        print(
            f"{MODEL_ID} at revision {REVISION} is not in the local Hugging Face cache on this machine, and this "
            "benchmark never downloads it: copy the cache here (hf download on a machine with hub access), then run "
            "it again.",
            file=sys.stderr,
        )
        return 2
    try:
        import torch
    except ImportError:
        print("torch is not installed here: this benchmark needs vLLM's CUDA build on a GPU machine.", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print(
            "No CUDA GPU is visible here: this benchmark is for a GPU machine with vLLM's CUDA build.", file=sys.stderr
        )
        return 2

    from bench.p7_batching import build_jobs
    from dialogue.realize import RealizeJob
    from realizer.vllm_engine import VllmEngine

    jobs = [RealizeJob.model_validate(job) for job in build_jobs(max(sizes))]
    started = time.perf_counter()
    engine = VllmEngine(MODEL_ID, REVISION)
    load_seconds = time.perf_counter() - started
    device = torch.cuda.get_device_name(0)
    emit(
        BENCH, "engine", model=MODEL_ID, revision=REVISION, snapshot=str(folder), load_seconds=load_seconds, gpu=device
    )
    rows = []
    results: list[dict[str, Any]] = []
    for size in sizes:
        batch = jobs[:size]
        engine.realize(batch)  # warm-up at this size
        passes = []
        tokens = 0
        for _ in range(arguments.passes):
            torch.cuda.synchronize()
            started = time.perf_counter()
            realizations = engine.realize(batch)
            torch.cuda.synchronize()
            passes.append(time.perf_counter() - started)
            tokens = sum(realization.output_tokens or 0 for realization in realizations)
        seconds = statistics.median(passes)
        failed = sum(1 for realization in realizations if realization.failed or realization.over_budget)
        result = {
            "batch": size,
            "seconds": seconds,
            "passes": passes,
            "replies_per_second": size / seconds,
            "output_tokens": tokens,
            "tokens_per_second": tokens / seconds,
            "failed_or_over_budget": failed,
        }
        results.append(result)
        emit(BENCH, "measurement", **result)
        rows.append(
            [
                size,
                f"{seconds * 1e3:,.0f}",
                f"{size / seconds:,.1f}",
                f"{tokens / seconds:,.0f}",
                f"{tokens / size:.1f}",
            ]
        )
    table = markdown_table(["batch", "ms per batch (median)", "replies/s", "generated tokens/s", "tokens/reply"], rows)
    print()
    print(table)
    if arguments.markdown:
        info = machine_info()
        text = "\n".join(
            [
                f"# {MODEL_ID} @ {REVISION} on vLLM {package_version('vllm')}",
                "",
                f"GPU: {device}; CPU: {info['cpu']}; engine load {load_seconds:.1f} s; {arguments.passes} passes per "
                "size after a warm-up; greedy, at most 60 new tokens, repetition penalty 1.05.",
                "",
                table,
                "",
                "```json",
                json.dumps(results, indent=1),
                "```",
            ]
        )
        arguments.markdown.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
