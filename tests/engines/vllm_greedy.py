"""Run the vLLM engine once on a batch of jobs and write what it answered as JSON.

Used by tests/engines in a subprocess, so vLLM's worker processes and globals never touch pytest's.
    python vllm_greedy.py REQUEST.json RESULT.json
REQUEST: {"model", "revision", "llm_kwargs", "penalties": [float], "jobs": [RealizeJob as JSON]}.
RESULT: {"load_seconds", "model_id", "revision", "by_penalty": {penalty: [{"realization", "token_ids"}]},
         "when_generate_raises": [{"realization", "token_ids"}]}.
One engine serves every penalty: the whole batch goes through `realize_with_ids` once per penalty, then
once more with `LLM.generate` replaced by a function that raises.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(request_path: str, result_path: str) -> int:
    from dialogue.realize import RealizeJob
    from realizer.vllm_engine import VllmEngine

    request = json.loads(Path(request_path).read_text())
    jobs = [RealizeJob.model_validate(job) for job in request["jobs"]]
    started = time.monotonic()
    engine = VllmEngine(request["model"], request["revision"], **request["llm_kwargs"])
    load_seconds = time.monotonic() - started
    by_penalty = {}
    for penalty in request["penalties"]:
        engine.repetition_penalty = penalty
        by_penalty[str(penalty)] = [
            {"realization": realization.model_dump(), "token_ids": token_ids}
            for realization, token_ids in engine.realize_with_ids(jobs)
        ]

    def generate_raises(*args: object, **kwargs: object) -> object:
        raise RuntimeError("engine dead")

    engine.llm.generate = generate_raises
    when_generate_raises = [
        {"realization": realization.model_dump(), "token_ids": token_ids}
        for realization, token_ids in engine.realize_with_ids(jobs)
    ]
    result = {
        "load_seconds": load_seconds,
        "model_id": engine.model_id,
        "revision": engine.revision,
        "by_penalty": by_penalty,
        "when_generate_raises": when_generate_raises,
    }
    Path(result_path).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
