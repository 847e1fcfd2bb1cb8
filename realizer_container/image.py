"""The realizer image's build tooling: pin the vLLM base image by digest, build on it, push it to a stack.

    python realizer_container/image.py pin                                  # make pin-base-image
    python realizer_container/image.py build [--tag enrollment-realizer:dev]
    python realizer_container/image.py push --stack NAME [--region R]      # make push-image STACK=NAME

`pin` asks the registry for the digest of the Dockerfile's VLLM_IMAGE (`docker buildx imagetools
inspect`) and writes `IMAGE@sha256:...` to realizer_container/base-image.digest, the committed lock
file. `build` and `push` pass that digest as VLLM_DIGEST and refuse to run without one. `push` builds
for linux/amd64, tags the image with the commit's full SHA (`git rev-parse HEAD`: the repository's tags
are immutable, and a short SHA can collide), pushes it to the repository the stack names in its
RealizerRepositoryUri output, reads back the digest the registry gave it and prints the one line to
deploy it with (docs/DEPLOY.md step 2: `sam deploy --guided` again, pasting the digest at its prompt,
so samconfig.toml keeps it for later deploys):

    RealizerImageDigest=sha256:... (run `sam deploy --guided` and give it at Parameter RealizerImageDigest)

Needs Docker with Buildx, the AWS CLI v2 (`aws ecr get-login-password`) and boto3's credentials.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "realizer_container" / "Dockerfile"
LOCK_FILE = ROOT / "realizer_container" / "base-image.digest"
LOCAL_REPOSITORY = "enrollment-realizer"
PLATFORM = "linux/amd64"  # the GPU instances are x86_64
REPOSITORY_OUTPUT = "RealizerRepositoryUri"
DIGEST_PARAMETER = "RealizerImageDigest"
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
LOCK_HEADER = (
    "# The realizer's base image pinned by digest (the Dockerfile's VLLM_IMAGE): written by `make pin-base-image`,\n"
    "# read by `make push-image`, which passes the digest as --build-arg VLLM_DIGEST. Commit it.\n"
)


class ImageError(RuntimeError):
    """The image cannot be pinned, built or pushed as things stand; the message says what to do."""


def dockerfile_base_image(dockerfile: Path = DOCKERFILE) -> str:
    """The default of the Dockerfile's `ARG VLLM_IMAGE=...`: the tag the digest belongs to."""
    match = re.search(r"^ARG VLLM_IMAGE=(\S+)\s*$", dockerfile.read_text(), re.MULTILINE)
    if not match:
        raise ImageError(f"{dockerfile.name} has no `ARG VLLM_IMAGE=...` line to pin")
    return match.group(1)


def read_pin(lock_file: Path, image: str) -> str | None:
    """The pinned digest of `image` from the lock file, or None when nothing is pinned yet.

    The file holds comment lines and, once pinned, one line `IMAGE@sha256:<64 hex>`."""
    if not lock_file.is_file():
        return None
    entries = [line.strip() for line in lock_file.read_text().splitlines()]
    entries = [line for line in entries if line and not line.startswith("#")]
    if not entries:
        return None
    pinned_image, _, digest = entries[0].partition("@")
    if len(entries) > 1 or not DIGEST.fullmatch(digest):
        raise ImageError(f"{lock_file.name} should hold one line IMAGE@sha256:<64 hex>: run `make pin-base-image`")
    if pinned_image != image:
        raise ImageError(
            f"{lock_file.name} pins {pinned_image} but the Dockerfile builds on {image}: run `make pin-base-image`"
        )
    return digest


def require_pin(lock_file: Path, image: str) -> str:
    digest = read_pin(lock_file, image)
    if digest is None:
        raise ImageError(
            f"{lock_file.name} holds no digest for {image}: run `make pin-base-image` on a machine with Docker "
            "and commit the file"
        )
    return digest


def write_pin(lock_file: Path, image: str, digest: str) -> None:
    lock_file.write_text(f"{LOCK_HEADER}{image}@{digest}\n")


def run(args: Sequence[str], *, capture: bool = False, stdin: str | None = None) -> str:
    """Run a command from the repository root; its output goes to the terminal unless captured.
    Raises ImageError when it cannot start or fails."""
    try:
        completed = subprocess.run(
            list(args), cwd=ROOT, input=stdin, text=True, check=False,
            stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None,
        )  # fmt: skip
    except FileNotFoundError as error:
        raise ImageError(f"`{args[0]}` is not on PATH: install it (docs/DEPLOY.md, Before you start)") from error
    if completed.returncode != 0:
        detail = f": {completed.stderr.strip().splitlines()[-1]}" if capture and completed.stderr.strip() else ""
        raise ImageError(f"`{' '.join(args[:3])}` failed with exit status {completed.returncode}{detail}")
    return completed.stdout or ""


def registry_digest(image: str) -> str:
    """The digest the registry serves for `image` (the index of a multi-platform image)."""
    output = run(["docker", "buildx", "imagetools", "inspect", image, "--format", "{{json .Manifest}}"], capture=True)
    try:
        digest = json.loads(output)["digest"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ImageError(f"`docker buildx imagetools inspect {image}` printed no manifest digest") from error
    if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
        raise ImageError(f"`docker buildx imagetools inspect {image}` printed no sha256 digest")
    return digest


def pin(lock_file: Path, dockerfile: Path = DOCKERFILE) -> str:
    """Look up the base image's digest and write it to the lock file; returns `IMAGE@DIGEST`."""
    image = dockerfile_base_image(dockerfile)
    digest = registry_digest(image)
    write_pin(lock_file, image, digest)
    return f"{image}@{digest}"


def commit_tag() -> str:
    """The commit's full SHA (40 hex digits), never a short one that another commit may share."""
    return run(["git", "rev-parse", "HEAD"], capture=True).strip()


def build(tag: str, base_digest: str) -> None:
    run([
        "docker", "build", "--platform", PLATFORM, "-f", str(DOCKERFILE.relative_to(ROOT)),
        "--build-arg", f"VLLM_DIGEST={base_digest}", "-t", tag, ".",
    ])  # fmt: skip


def stack_repository_uri(cloudformation: Any, stack: str) -> str:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        (described,) = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as error:
        raise ImageError(f"the stack {stack} cannot be read ({error.response['Error']['Code']})") from error
    except BotoCoreError as error:
        raise ImageError(f"the stack {stack} cannot be read: {error}") from error
    outputs = {output["OutputKey"]: output["OutputValue"] for output in described.get("Outputs", [])}
    if REPOSITORY_OUTPUT not in outputs:
        raise ImageError(f"the stack {stack} has no output {REPOSITORY_OUTPUT}: deploy this version of template.yaml")
    return str(outputs[REPOSITORY_OUTPUT])


def registry_of(repository_uri: str) -> tuple[str, str]:
    """(registry host, region) of an ECR repository URI `ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME`."""
    host = repository_uri.split("/", 1)[0]
    match = re.fullmatch(r"\d{12}\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?", host)
    if not match or "/" not in repository_uri:
        raise ImageError(f"{REPOSITORY_OUTPUT} {repository_uri} is not an ECR repository URI")
    return host, match.group(1)


def pushed_digest(reference: str, repository_uri: str) -> str:
    """The digest the registry gave the pushed image, from its local RepoDigests."""
    output = run(["docker", "inspect", "--format", "{{json .RepoDigests}}", reference], capture=True)
    try:
        repo_digests = json.loads(output) or []
    except json.JSONDecodeError as error:
        raise ImageError(f"`docker inspect {reference}` printed no RepoDigests") from error
    for entry in repo_digests:
        name, _, digest = str(entry).partition("@")
        if name == repository_uri and DIGEST.fullmatch(digest):
            return digest
    raise ImageError(f"`docker inspect {reference}` shows no digest in {repository_uri}: was the push refused?")


def push(stack: str, base_digest: str, *, cloudformation: Any) -> str:
    """Build on the pinned base, push to the stack's repository; returns the `sam deploy` line to run next."""
    repository_uri = stack_repository_uri(cloudformation, stack)
    registry, region = registry_of(repository_uri)
    password = run(["aws", "ecr", "get-login-password", "--region", region], capture=True).strip()
    run(["docker", "login", "--username", "AWS", "--password-stdin", registry], stdin=password)
    reference = f"{repository_uri}:{commit_tag()}"
    build(reference, base_digest)
    run(["docker", "push", reference])
    digest = pushed_digest(reference, repository_uri)
    return f"{DIGEST_PARAMETER}={digest} (run `sam deploy --guided` and give it at Parameter {DIGEST_PARAMETER})"


def cloudformation_client(region: str | None) -> Any:
    import boto3
    from botocore.exceptions import NoRegionError

    try:
        return boto3.Session(region_name=region).client("cloudformation")
    except NoRegionError as error:
        raise ImageError("no AWS region: pass REGION=... (--region) or set one with `aws configure`") from error


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="image.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("pin", help="write the base image's digest to realizer_container/base-image.digest")
    build_command = commands.add_parser("build", help="build the image locally on the pinned base")
    build_command.add_argument("--tag", help=f"the image's name (default {LOCAL_REPOSITORY}:<commit>)")
    push_command = commands.add_parser("push", help="build, push to the stack's repository, print the deploy line")
    push_command.add_argument("--stack", required=True, help="the deployed stack's name")
    push_command.add_argument("--region", help="its region (default: the AWS CLI's)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    name = {"pin": "pin-base-image", "build": "build-image", "push": "push-image"}[args.command]
    try:
        if args.command == "pin":
            print(f"{name}: {pin(LOCK_FILE)} written to {shown(LOCK_FILE)}")
            return 0
        base_digest = require_pin(LOCK_FILE, dockerfile_base_image())  # before Docker or AWS is asked anything
        if args.command == "build":
            tag = args.tag or f"{LOCAL_REPOSITORY}:{commit_tag()}"
            build(tag, base_digest)
            print(f"{name}: built {tag}")
        else:
            print(push(args.stack, base_digest, cloudformation=cloudformation_client(args.region)))
    except ImageError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
