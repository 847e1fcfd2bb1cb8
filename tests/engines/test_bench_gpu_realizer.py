"""bench/gpu_realizer.py on a machine without the weights or a GPU: one sentence and exit 2, never a download.

The benchmark itself needs a GPU; these check the two refusals it makes first, in fresh processes with
a Hugging Face cache made for the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from commands import run_command

from bench.gpu_realizer import MODEL_ID, REVISION

ROOT = Path(__file__).resolve().parents[2]


def run_benchmark(hf_home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    env.pop("HF_HUB_CACHE", None)
    return run_command([sys.executable, "-m", "bench.gpu_realizer", "--batch-sizes", "1"], env=env, timeout=300)


def one_sentence(text: str) -> bool:
    stripped = text.strip()
    return stripped.count("\n") == 0 and stripped.endswith(".") and stripped.count(". ") == 0


def test_without_the_weights_it_says_so_and_exits_2(tmp_path: Path) -> None:
    completed = run_benchmark(tmp_path / "hf")
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert MODEL_ID in completed.stderr and REVISION in completed.stderr
    assert "never downloads" in completed.stderr
    assert one_sentence(completed.stderr), completed.stderr


def test_with_the_weights_but_no_gpu_it_says_so_and_exits_2(tmp_path: Path) -> None:
    # The layout huggingface_hub reads offline: a snapshot folder named by the commit.
    snapshot = tmp_path / "hf" / "hub" / f"models--{MODEL_ID.replace('/', '--')}" / "snapshots" / REVISION
    snapshot.mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (snapshot / name).write_text("{}")
    (snapshot / "model.safetensors").write_bytes(b"")
    completed = run_benchmark(tmp_path / "hf")
    assert completed.returncode == 2
    assert "not in the local Hugging Face cache" not in completed.stderr
    assert "No CUDA GPU is visible here" in completed.stderr
    assert one_sentence(completed.stderr), completed.stderr
