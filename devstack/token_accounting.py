"""Exact token accounting in the Qwen2.5 vocabulary, as the seed's token table.

For every turn: the naive transcript prompt (the system line plus every user turn so far, the seed's
`build_naive_prompt`) against the state prompt the realizer actually gets. Both go through the same
code the model engines run (`realizer.hf_engine.chat_prompt_ids`: the tokenizer's own chat template,
then its ids) with Qwen2.5's tokenizer, so the counted prompt is the one a Qwen engine sends. The naive
prompt exists only here, to be counted: it is never sent anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from dialogue.realize import DESIGN_TOKEN_BUDGET, MAX_NEW_TOKENS, ChatMessage
from realizer.hf_engine import Message, chat_prompt, chat_prompt_ids


@lru_cache(maxsize=1)
def qwen_tokenizer() -> Any:
    from devstack.qwen_chat import build_qwen25_tokenizer

    return build_qwen25_tokenizer()


def naive_messages(naive_system: str, utterances: Sequence[str]) -> list[ChatMessage]:
    """The seed's naive transcript: its system line, then every user turn so far."""
    return [
        ChatMessage(role="system", content=naive_system),
        *(ChatMessage(role="user", content=text) for text in utterances),
    ]


def prompt_text(messages: Sequence[Message]) -> str:
    """The messages as Qwen2.5-Instruct reads them."""
    return chat_prompt(qwen_tokenizer(), messages)


def count_tokens(messages: Sequence[Message]) -> int:
    """How many Qwen2.5 tokens the messages are, templated as a Qwen engine sends them."""
    return len(chat_prompt_ids(qwen_tokenizer(), messages))


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
