"""`make pin-base-image` and `make push-image` (realizer_container/image.py) against fake `docker` and `aws`.

The fakes are small scripts first on PATH: each records its arguments (and, for `docker login`, what it
read on stdin) and prints a canned answer. CloudFormation is botocore's Stubber.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from commands import load_script

ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGE = "vllm/vllm-openai:v0.32.0"
BASE_DIGEST = "sha256:" + "a1" * 32
PUSHED_DIGEST = "sha256:" + "b2" * 32
REGISTRY = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
REPOSITORY = f"{REGISTRY}/enrollment-desk-realizer"
PASSWORD = "fake-ecr-password"
FAKE_TOOL = """#!{python}
import json, os, sys
tool, argv = os.path.basename(sys.argv[0]), sys.argv[1:]
stdin = sys.stdin.read() if argv[:1] == ["login"] else None
with open(os.environ["FAKE_TOOL_LOG"], "a") as log:
    log.write(json.dumps({{"tool": tool, "argv": argv, "stdin": stdin}}) + "\\n")
command = " ".join([tool, *argv])
for prefix, output in json.loads(os.environ["FAKE_TOOL_OUTPUT"]).items():
    if command.startswith(prefix):
        print(output)
        break
failing = os.environ.get("FAKE_TOOL_FAIL")
if failing and command.startswith(failing):
    print(f"{{tool}}: denied", file=sys.stderr)
    sys.exit(1)
"""


def _image_tool() -> ModuleType:
    return load_script("realizer_container/image.py", "realizer_image_tool")


image = _image_tool()


@dataclass
class FakeTools:
    log: Path
    outputs: dict[str, str]
    monkeypatch: pytest.MonkeyPatch

    def answer(self, prefix: str, output: str) -> None:
        self.outputs[prefix] = output
        self.monkeypatch.setenv("FAKE_TOOL_OUTPUT", json.dumps(self.outputs))

    def fail(self, prefix: str) -> None:
        self.monkeypatch.setenv("FAKE_TOOL_FAIL", prefix)

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    """Fake `docker` and `aws` first on PATH (git stays the real one: the tag is the commit)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("docker", "aws"):
        script = bin_dir / name
        script.write_text(FAKE_TOOL.format(python=sys.executable))
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path('/usr/bin')}:{Path('/bin')}")
    monkeypatch.setenv("FAKE_TOOL_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.delenv("FAKE_TOOL_FAIL", raising=False)
    fake = FakeTools(log=tmp_path / "calls.jsonl", outputs={}, monkeypatch=monkeypatch)
    fake.answer("docker buildx imagetools inspect", json.dumps({
        "mediaType": "application/vnd.oci.image.index.v1+json", "digest": BASE_DIGEST, "size": 2345,
    }))  # fmt: skip
    fake.answer("aws ecr get-login-password", PASSWORD)
    fake.answer("docker login", "Login Succeeded")
    # Another registry's entry first: the digest must be the one in the stack's repository.
    fake.answer("docker inspect", json.dumps([f"elsewhere.example/realizer@sha256:{'c3' * 32}",
                                              f"{REPOSITORY}@{PUSHED_DIGEST}"]))  # fmt: skip
    return fake


@pytest.fixture
def lock_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the committed lock file (unpinned or not), where the tool reads and writes it."""
    path = tmp_path / "base-image.digest"
    path.write_text(image.LOCK_FILE.read_text())
    monkeypatch.setattr(image, "LOCK_FILE", path)
    return path


def pinned(lock_file: Path, reference: str = f"{BASE_IMAGE}@{BASE_DIGEST}") -> None:
    lock_file.write_text(f"# pinned for the test\n{reference}\n")


@pytest.fixture
def cloudformation(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Stubber]]:
    """A stubbed CloudFormation client, which main() gets in place of boto3's."""
    client = boto3.client(
        "cloudformation", region_name="eu-west-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    stubber = Stubber(client)
    regions: list[str | None] = []

    def session(region_name: str | None = None) -> SimpleNamespace:
        regions.append(region_name)
        return SimpleNamespace(client=lambda service: client)

    monkeypatch.setattr(boto3, "Session", session)
    with stubber:
        yield regions, stubber


def stack_with(outputs: dict[str, str]) -> dict[str, Any]:
    return {
        "Stacks": [{
            "StackName": "enrollment-desk", "CreationTime": datetime(2026, 1, 5, tzinfo=UTC),
            "StackStatus": "UPDATE_COMPLETE",
            "Outputs": [{"OutputKey": key, "OutputValue": value} for key, value in outputs.items()],
        }]
    }  # fmt: skip


def commit() -> str:
    """The commit's full SHA: the repository's tags are immutable, and a short SHA can collide."""
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert re.fullmatch(r"[0-9a-f]{40}", sha.strip())
    return sha.strip()


def test_pin_writes_the_registry_digest_of_the_dockerfiles_base(
    tools: FakeTools, lock_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the committed lock file and a registry that answers with the index's digest
    # When
    assert image.main(["pin"]) == 0
    # Then one registry question for the Dockerfile's VLLM_IMAGE, and the lock file names the pinned reference
    assert [call["argv"] for call in tools.calls()] == [
        ["buildx", "imagetools", "inspect", BASE_IMAGE, "--format", "{{json .Manifest}}"]
    ]
    entries = [line for line in lock_file.read_text().splitlines() if line and not line.startswith("#")]
    assert entries == [f"{BASE_IMAGE}@{BASE_DIGEST}"]
    assert image.read_pin(lock_file, BASE_IMAGE) == BASE_DIGEST
    assert capsys.readouterr().out == f"pin-base-image: {BASE_IMAGE}@{BASE_DIGEST} written to {lock_file}\n"


def test_pin_keeps_the_lock_file_when_the_registry_gives_no_digest(
    tools: FakeTools, lock_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = lock_file.read_text()
    tools.answer("docker buildx imagetools inspect", json.dumps({"mediaType": "x", "digest": "sha256:short"}))
    assert image.main(["pin"]) == 1
    assert lock_file.read_text() == before
    err = capsys.readouterr().err.splitlines()
    assert err == [f"pin-base-image: `docker buildx imagetools inspect {BASE_IMAGE}` printed no sha256 digest"]


def test_the_committed_lock_file_says_how_to_fill_it_until_it_is_pinned() -> None:
    if image.read_pin(image.LOCK_FILE, BASE_IMAGE) is None:
        assert "make pin-base-image" in image.LOCK_FILE.read_text()


@pytest.mark.parametrize("command", [["push", "--stack", "enrollment-desk"], ["build"]])
def test_build_and_push_refuse_without_a_pinned_digest(
    command: list[str],
    tools: FakeTools,
    lock_file: Path,
    cloudformation: tuple[list[str | None], Stubber],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a lock file with comments only (as shipped before the first pin)
    lock_file.write_text("# Not pinned yet: `make pin-base-image` fills this file.\n")
    regions, _ = cloudformation
    # When / Then: one sentence, and neither Docker nor AWS was asked anything
    assert image.main(command) == 1
    name = "push-image" if command[0] == "push" else "build-image"
    assert capsys.readouterr().err.splitlines() == [
        f"{name}: base-image.digest holds no digest for {BASE_IMAGE}: run `make pin-base-image` on a machine "
        "with Docker and commit the file"
    ]
    assert tools.calls() == []
    assert regions == []


def test_push_refuses_a_pin_for_another_base_image(
    tools: FakeTools, lock_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pinned(lock_file, f"vllm/vllm-openai:v0.31.0@{BASE_DIGEST}")
    assert image.main(["push", "--stack", "enrollment-desk"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"push-image: base-image.digest pins vllm/vllm-openai:v0.31.0 but the Dockerfile builds on {BASE_IMAGE}: "
        "run `make pin-base-image`"
    ]
    assert tools.calls() == []


def test_push_builds_on_the_pinned_base_pushes_and_prints_the_deploy_line(
    tools: FakeTools,
    lock_file: Path,
    cloudformation: tuple[list[str | None], Stubber],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a pinned base and a stack whose outputs name its image repository
    pinned(lock_file)
    regions, stubber = cloudformation
    stubber.add_response(
        "describe_stacks", stack_with({"RealizerRepositoryUri": REPOSITORY}), {"StackName": "enrollment-desk"}
    )
    # When
    assert image.main(["push", "--stack", "enrollment-desk", "--region", "eu-west-1"]) == 0
    # Then: sign in to the repository's registry, build on the pinned base, push, read the pushed digest
    reference = f"{REPOSITORY}:{commit()}"
    calls = tools.calls()
    assert [(call["tool"], call["argv"]) for call in calls] == [
        ("aws", ["ecr", "get-login-password", "--region", "eu-west-1"]),
        ("docker", ["login", "--username", "AWS", "--password-stdin", REGISTRY]),
        ("docker", ["build", "--platform", "linux/amd64", "-f", "realizer_container/Dockerfile",
                    "--build-arg", f"VLLM_DIGEST={BASE_DIGEST}", "-t", reference, "."]),
        ("docker", ["push", reference]),
        ("docker", ["inspect", "--format", "{{json .RepoDigests}}", reference]),
    ]  # fmt: skip
    assert calls[1]["stdin"] == PASSWORD  # the password goes on stdin, never in an argument
    assert not any(PASSWORD in " ".join(call["argv"]) for call in calls)
    assert regions == ["eu-west-1"]
    stubber.assert_no_pending_responses()
    # ... and stdout is exactly the line to deploy the pushed digest with
    hint = "(run `sam deploy --guided` and give it at Parameter RealizerImageDigest)"
    assert capsys.readouterr().out == f"RealizerImageDigest={PUSHED_DIGEST} {hint}\n"


def test_push_refuses_a_stack_without_the_repository_output(
    tools: FakeTools,
    lock_file: Path,
    cloudformation: tuple[list[str | None], Stubber],
    capsys: pytest.CaptureFixture[str],
) -> None:
    pinned(lock_file)
    _, stubber = cloudformation
    stubber.add_response("describe_stacks", stack_with({"PagesUrl": "https://d1.cloudfront.net"}))
    assert image.main(["push", "--stack", "enrollment-desk"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "push-image: the stack enrollment-desk has no output RealizerRepositoryUri: deploy this version of "
        "template.yaml"
    ]
    assert tools.calls() == []


def test_push_names_a_stack_that_cannot_be_read(
    tools: FakeTools,
    lock_file: Path,
    cloudformation: tuple[list[str | None], Stubber],
    capsys: pytest.CaptureFixture[str],
) -> None:
    pinned(lock_file)
    _, stubber = cloudformation
    stubber.add_client_error(
        "describe_stacks", service_error_code="ValidationError", service_message="Stack with id nope does not exist"
    )
    assert image.main(["push", "--stack", "nope"]) == 1
    assert capsys.readouterr().err.splitlines() == ["push-image: the stack nope cannot be read (ValidationError)"]
    assert tools.calls() == []


def test_a_refused_push_prints_no_deploy_line(
    tools: FakeTools,
    lock_file: Path,
    cloudformation: tuple[list[str | None], Stubber],
    capsys: pytest.CaptureFixture[str],
) -> None:
    pinned(lock_file)
    _, stubber = cloudformation
    stubber.add_response("describe_stacks", stack_with({"RealizerRepositoryUri": REPOSITORY}))
    tools.fail("docker push")
    assert image.main(["push", "--stack", "enrollment-desk"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [f"push-image: `docker push {REPOSITORY}:{commit()}` failed with exit status 1"]
    assert [call["argv"][0] for call in tools.calls()][-1] == "push"


def test_make_targets_call_the_tool() -> None:
    """The targets' recipes (make -n prints them and runs nothing)."""
    push = subprocess.run(
        ["make", "-n", "push-image", "STACK=enrollment-desk", "REGION=eu-west-1"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert ".venv-ops/bin/python realizer_container/image.py push --stack enrollment-desk --region eu-west-1" in push
    pin = subprocess.run(["make", "-n", "pin-base-image"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert ".venv-ops/bin/python realizer_container/image.py pin" in pin.stdout
