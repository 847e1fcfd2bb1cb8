"""The transformers engine on the tiny random Qwen2 model: batches, counts, length, stop, budget and failure
paths."""

from __future__ import annotations

import pytest
from tinyqwen_support import IM_END_ID, LENGTH_TOKENS, TinyQwen

from dialogue.realize import DESIGN_TOKEN_BUDGET
from realizer.engines import Engine
from realizer.hf_engine import TransformersEngine


def test_it_is_an_engine(hf_engine: TransformersEngine) -> None:
    engine: Engine = hf_engine
    assert (engine.name, engine.model_id, engine.revision) == ("transformers", "tiny-qwen2", "test")


def test_answers_in_order_with_exact_token_counts(hf_engine: TransformersEngine, tiny_qwen: TinyQwen) -> None:
    jobs = [tiny_qwen.jobs[name] for name in ("C1t3", "C2t1", "C1t1")]
    realizations = hf_engine.realize(jobs)
    assert len(realizations) == 3
    for job, realization in zip(jobs, realizations, strict=True):
        prompt_ids = hf_engine.prompt_ids(job)
        generated = hf_engine.greedy_ids(job)
        assert realization.prompt_tokens == len(prompt_ids)
        assert realization.output_tokens == len(generated)
        assert realization.text == hf_engine.tokenizer.decode(generated, skip_special_tokens=True).strip()
        assert realization.text
        assert not realization.failed and not realization.over_budget
    # C1 turn 3 is the seed's 125-token state prompt.
    assert realizations[0].prompt_tokens == 125


def test_length_path_hits_the_token_cap(hf_engine: TransformersEngine, tiny_qwen: TinyQwen) -> None:
    [realization] = hf_engine.realize([tiny_qwen.jobs["length"]])
    assert realization.hit_token_cap is True
    assert realization.ended_by_eos is False
    assert realization.output_tokens == LENGTH_TOKENS


def test_stop_path_ends_with_eos(hf_engine: TransformersEngine, tiny_qwen: TinyQwen) -> None:
    """The fixture swapped <|im_end|>'s output row with a token the model emits a few steps in."""
    job = tiny_qwen.jobs["stop"]
    assert hf_engine.greedy_ids(job) == tiny_qwen.stop_ids
    [realization] = hf_engine.realize([job])
    assert realization.ended_by_eos is True
    assert realization.hit_token_cap is False
    assert realization.output_tokens == len(tiny_qwen.stop_ids) < job.max_new_tokens
    assert tiny_qwen.stop_ids[-1] == IM_END_ID
    assert "<|im_end|>" not in realization.text
    assert realization.text == hf_engine.tokenizer.decode(tiny_qwen.stop_ids[:-1]).strip()


def test_over_budget_job_is_not_generated(
    hf_engine: TransformersEngine, tiny_qwen: TinyQwen, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = tiny_qwen.jobs["over_budget"]
    calls: list[object] = []
    original = hf_engine.model.generate

    def counting_generate(*args: object, **kwargs: object) -> object:
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(hf_engine.model, "generate", counting_generate)
    [realization, after] = hf_engine.realize([job, tiny_qwen.jobs["length"]])
    assert realization.over_budget is True
    assert (realization.text, realization.output_tokens) == ("", 0)
    assert realization.prompt_tokens is not None
    assert realization.prompt_tokens + job.max_new_tokens > DESIGN_TOKEN_BUDGET
    assert not realization.ended_by_eos and not realization.hit_token_cap
    assert len(calls) == 1  # only the second job was generated
    assert after.hit_token_cap and not after.over_budget


@pytest.mark.parametrize(("slack", "over"), [(0, False), (-1, True)])
def test_budget_boundary(hf_engine: TransformersEngine, tiny_qwen: TinyQwen, slack: int, over: bool) -> None:
    """Prompt plus new tokens equal to the budget is allowed; one more token is not."""
    job = tiny_qwen.jobs["length"]
    budget = len(hf_engine.prompt_ids(job)) + job.max_new_tokens + slack
    engine = TransformersEngine(
        hf_engine.model, hf_engine.tokenizer, model_id="tiny-qwen2", revision="test", token_budget=budget
    )
    [realization] = engine.realize([job])
    assert realization.over_budget is over
    assert realization.output_tokens == (0 if over else LENGTH_TOKENS)


def test_engine_cap_limits_the_job(hf_engine: TransformersEngine, tiny_qwen: TinyQwen) -> None:
    engine = TransformersEngine(hf_engine.model, hf_engine.tokenizer, model_id="t", revision=None, max_new_tokens=3)
    [realization] = engine.realize([tiny_qwen.jobs["C1t3"]])
    assert (realization.output_tokens, realization.hit_token_cap) == (3, True)


def test_a_job_whose_prompt_fails_does_not_sink_the_batch(
    hf_engine: TransformersEngine, tiny_qwen: TinyQwen, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tiny_qwen.jobs["C2t1"]
    original = hf_engine.prompt_ids

    def flaky(job: object) -> list[int]:
        if job is bad:
            raise RuntimeError("template error")
        return original(job)  # type: ignore[arg-type]

    monkeypatch.setattr(hf_engine, "prompt_ids", flaky)
    first, second = hf_engine.realize([bad, tiny_qwen.jobs["length"]])
    assert first.failed is True
    assert (first.text, first.ended_by_eos, first.hit_token_cap) == ("", False, False)
    assert second.failed is False and second.hit_token_cap is True


def test_a_failing_generate_fails_its_batch_and_the_next_goes_on(
    hf_engine: TransformersEngine, tiny_qwen: TinyQwen, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = [tiny_qwen.jobs["C2t1"], tiny_qwen.jobs["length"]]
    original = hf_engine.model.generate
    monkeypatch.setattr(hf_engine.model, "generate", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("OOM")))
    failed = hf_engine.realize(jobs)
    assert [r.failed for r in failed] == [True, True]
    assert [r.prompt_tokens for r in failed] == [len(hf_engine.prompt_ids(job)) for job in jobs]
    monkeypatch.setattr(hf_engine.model, "generate", original)
    assert [r.failed for r in hf_engine.realize(jobs)] == [False, False]


def test_a_batch_words_each_job_as_it_would_alone(hf_engine: TransformersEngine, tiny_qwen: TinyQwen) -> None:
    """Left padding and each job's own cap: the batch's ids are each job's ids alone (prompts of different
    lengths, one that stops early, one that runs to its cap)."""
    jobs = [tiny_qwen.jobs[name] for name in ("stop", "C1t3", "length", "C2t1", "C1t1")]
    assert len({len(hf_engine.prompt_ids(job)) for job in jobs}) > 1
    batched = hf_engine.realize(jobs)
    for job, realization in zip(jobs, batched, strict=True):
        [alone] = hf_engine.realize([job])
        assert realization == alone, job.job_id


def test_eos_ids_come_from_tokenizer_and_generation_config(hf_engine: TransformersEngine) -> None:
    assert hf_engine.eos_token_ids == [151645, 151643]
    assert hf_engine.pad_token_id == 151643
