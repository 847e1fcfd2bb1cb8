"""The vLLM engine under the image's read-only root: everything it writes lands on the writable /tmp.

The session's vLLM run (tests/engines/conftest.py's `vllm_run`, the one the engine tests read) runs in the
image's environment (tests/engines/image_root.py): the Dockerfile's ENV over a fresh T for /tmp, an empty
home H and working directory W, and HF_HOME a hub cache holding the weights where the image bakes them
(the tiny Qwen2 under the pinned Qwen id and revision, loaded offline as the image loads them). The
engine runs with torch.compile on, as on a GPU, so the compile caches and their .so kernels are written
and loaded too. Tests run as root, so read-only permissions prove nothing; H and W still empty and
HF_HOME unchanged afterwards do.
"""

from __future__ import annotations

import os

from image_root import summary, tree
from tinyqwen_support import VllmRun

from realizer.engines import QWEN_MODEL_ID, QWEN_REVISION


def test_the_vllm_engine_writes_only_where_the_image_env_points(vllm_run: VllmRun) -> None:
    root = vllm_run.image_root
    # The engine replied, from the pinned id and revision under HF_HOME
    assert (vllm_run.model_id, vllm_run.revision) == (QWEN_MODEL_ID, QWEN_REVISION)
    answer = vllm_run.result(1.05, "C1t3")
    assert answer["realization"]["text"] and not answer["realization"]["failed"]
    # ... and wrote nothing to the home, the working directory or the weights
    assert sorted(os.listdir(root.home)) == [], f"written to HOME: {sorted(tree(root.home))}"
    assert sorted(os.listdir(root.work)) == [], f"written to the working directory: {sorted(tree(root.work))}"
    assert tree(root.hf_home) == root.baked, "HF_HOME changed"
    # ... but did write where the image points: the compile cache, with kernels loaded from there
    written = sorted(tree(root.tmp))
    assert any(name.startswith("cache/vllm/torch_compile_cache/") for name in written), written[:20]
    assert any(name.endswith(".so") for name in written), "no compiled kernel under T"
    print("\nwritten under T (the image's /tmp):", *summary(root.tmp), sep="\n  ")
