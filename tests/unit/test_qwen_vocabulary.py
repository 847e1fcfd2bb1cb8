"""The converted Qwen2.5 vocabulary is kept between runs: a later build reads the kept file instead of
converting qwen.tiktoken again, and gives the same ids; a damaged file is converted over, and `off` keeps
nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from devstack import qwen_chat
from devstack.qwen_chat import QWEN_TOKENIZER_CACHE_ENV, build_qwen25_tokenizer, kept_backend_path

TEXTS = [
    "Hello <|im_end|> wörld",
    "<|im_start|>user\nI need child care for the forklift course.<|im_end|>\n",
    "  spaces\tand tabs, 1234567 digits, émojis 🚜 and <tool_call>{}</tool_call>",
]


@pytest.fixture(scope="module")
def converted() -> Any:
    """A build that converts and keeps nothing (the reference)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(QWEN_TOKENIZER_CACHE_ENV, "off")
        assert kept_backend_path() is None
        return build_qwen25_tokenizer()


def ids(tokenizer: Any) -> list[list[int]]:
    return [tokenizer(text)["input_ids"] for text in TEXTS]


def test_a_later_build_reads_the_kept_vocabulary_and_gives_the_same_ids(
    converted: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(QWEN_TOKENIZER_CACHE_ENV, str(tmp_path))
    kept = kept_backend_path()
    assert kept is not None and kept.parent == tmp_path and not kept.exists()
    first = build_qwen25_tokenizer()
    assert kept.is_file() and [p.name for p in tmp_path.iterdir()] == [kept.name]  # no part-written file left

    def no_conversion() -> Any:
        raise AssertionError("converted again although the vocabulary was kept")

    monkeypatch.setattr(qwen_chat, "_converted_backend", no_conversion)
    second = build_qwen25_tokenizer()
    assert ids(first) == ids(second) == ids(converted)
    assert len(second) == len(converted) == 151665
    assert second.eos_token_id == converted.eos_token_id == 151645
    assert second.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False) == (
        converted.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
    )


def test_a_damaged_kept_file_is_converted_over(converted: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(QWEN_TOKENIZER_CACHE_ENV, str(tmp_path))
    kept = kept_backend_path()
    assert kept is not None
    kept.write_text('{"version": "1.0", "model": {"type": "BP', encoding="utf-8")
    assert ids(build_qwen25_tokenizer()) == ids(converted)
    assert kept.stat().st_size > 1_000_000  # the whole vocabulary written over the damaged file


def test_every_local_cache_follows_one_rule_for_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The vocabulary, the example index and SmolLM2's weights share one rule (dialogue.local_cache): the
    variable's folder; unset, enrollment-desk under XDG_CACHE_HOME or ~/.cache; `off`, nothing."""
    from devstack.__main__ import keep_example_index
    from dialogue.local_cache import cache_folder, cache_home
    from dialogue.pack.examples import INDEX_CACHE_ENV

    monkeypatch.delenv(QWEN_TOKENIZER_CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_folder(QWEN_TOKENIZER_CACHE_ENV) == cache_home() == tmp_path / "xdg" / "enrollment-desk"
    kept = kept_backend_path()
    assert kept is not None and kept.parent == tmp_path / "xdg" / "enrollment-desk"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_folder(QWEN_TOKENIZER_CACHE_ENV) == tmp_path / "home" / ".cache" / "enrollment-desk"
    monkeypatch.setenv(QWEN_TOKENIZER_CACHE_ENV, f"  {tmp_path / 'named'} ")
    assert cache_folder(QWEN_TOKENIZER_CACHE_ENV) == tmp_path / "named"
    monkeypatch.setenv(QWEN_TOKENIZER_CACHE_ENV, "OFF")
    assert cache_folder(QWEN_TOKENIZER_CACHE_ENV) is None and kept_backend_path() is None

    monkeypatch.delenv(INDEX_CACHE_ENV, raising=False)
    keep_example_index()
    assert Path(os.environ[INDEX_CACHE_ENV]) == tmp_path / "home" / ".cache" / "enrollment-desk" / "example-index"
    monkeypatch.setenv(INDEX_CACHE_ENV, "off")
    keep_example_index()  # a setting already made is kept
    assert os.environ[INDEX_CACHE_ENV] == "off"
