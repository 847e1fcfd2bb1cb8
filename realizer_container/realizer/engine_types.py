"""What every realization engine shares: the pinned model, vLLM's environment, the interface and its
one error. The model engines (hf_engine, vllm_engine) import these from here, and the factory
(realizer.engines) imports the engines: no module imports one that imports it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from dialogue.realize import Realization, RealizeJob

QWEN_MODEL_ID = "Qwen/Qwen2.5-1.5B-Instruct"
QWEN_REVISION = "989aa7980e4cf806f80c7fef2b1adb7bc71aa306"
"""The production model, pinned to a commit (the image bakes exactly these weights)."""

VLLM_ENV_DEFAULTS = {"HF_HUB_OFFLINE": "1", "VLLM_HOST_IP": "127.0.0.1"}
"""vLLM's environment, set before vLLM is imported (a value already set wins): no hub, loopback only."""


class EngineUnavailable(RuntimeError):
    """The engine's model cannot be loaded on this machine (weights or packages missing)."""


class Engine(Protocol):
    name: str
    model_id: str | None
    revision: str | None

    def realize(self, jobs: Sequence[RealizeJob]) -> list[Realization]: ...
