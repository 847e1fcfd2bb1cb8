"""Shared fixtures: the domain pack, the scripted turns and a local stack on moto; the Hypothesis
profiles; and each test's tier marker, from its folder."""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.loaders
import botocore.session
import pytest
from hypothesis import settings

from devstack.stack import LocalStack, local_stack
from dialogue.pack import DomainPack, ScriptedTurn, get_pack, load_pack, read_scripted_turns
from dialogue.pack import loader as pack_loader
from dialogue.similarity import PRUNE, ExampleIndex

ROOT = Path(__file__).resolve().parents[1]
PACK_DIR = ROOT / "data" / "riverton"
SCRIPTED_TURNS = PACK_DIR / "scripted_turns.csv"

# Property tests explore new cases on a developer's machine (and remember failures in .hypothesis/),
# but in CI they run derandomized, with no example database: the same cases on every run, so a red
# build is the code's doing, never the draw's. HYPOTHESIS_PROFILE chooses one explicitly.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

# devstack's staff signing key (devstack/auth.py) for this run only: every local stack and every
# `devstack serve` or `devstack token` the tests start shares it, and none touches the project's own.
# The process that makes the folder removes it, key and all, when it exits; pytest-xdist's workers and
# the tests' subprocesses inherit the variable and make none of their own.
if not os.environ.get("DEVSTACK_HOME"):
    os.environ["DEVSTACK_HOME"] = tempfile.mkdtemp(prefix="devstack-home-")
    atexit.register(shutil.rmtree, os.environ["DEVSTACK_HOME"], ignore_errors=True)

# A local stack starts its handlers afresh (forget_loaded_packs), as a new Lambda process would, so every
# test's first turn loaded the pack again, compiled its patterns and built its examples' index: about 2 s
# a test, most of the integration tier's time. A pack is immutable (a frozen model) and what `load_pack`
# makes of a folder depends on its files and the profile alone, so in this test process `get_pack` takes
# the pack already made from the same files with the same profile. A pack edited on disk has other files
# and is loaded afresh; a `load_pack` call of a test's own always loads.
_PACKS_MADE: dict[tuple[str, str], DomainPack] = {}
_load_pack = pack_loader.load_pack


def _load_pack_once(directory: str | os.PathLike[str], *, profile: Any = None) -> DomainPack:
    files = hashlib.sha256()
    folder = Path(directory)
    for path in sorted(folder.iterdir()) if folder.is_dir() else ():
        if path.is_file():
            files.update(b"%s\0%d\0" % (path.name.encode(), path.stat().st_size) + path.read_bytes())
    key = (files.hexdigest(), str(profile))
    if key not in _PACKS_MADE:
        _PACKS_MADE[key] = _load_pack(directory, profile=profile)
    return _PACKS_MADE[key]


pack_loader.load_pack = _load_pack_once

# Every local stack makes a new boto3 session and its clients, and each new session read botocore's service
# models (JSON, megabytes) from disk again: about a sixth of the integration tier's time. Here the sessions
# share one loader, which keeps what it read; the models are botocore's files, the same for every session.
botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)

# The examples' TF-IDF index (ExampleIndex.build) depends on the examples and `prune` alone, and an index
# is never changed once built (its fields are set in __init__ only). A pack loaded afresh from the same
# files (check-pack's own load_pack in both profiles, a test's load_pack) built it again, seconds each.
# Here the index built from the same examples with the same prune is reused; examples that fail to build
# raise as before (nothing is kept), and a test that builds from other examples builds afresh.
_INDEXES: dict[Any, ExampleIndex] = {}
_build_index = ExampleIndex.build.__func__  # type: ignore[attr-defined]


def _build_index_once(cls: type[ExampleIndex], examples: Any, *, prune: float = PRUNE) -> ExampleIndex:
    try:
        if any(isinstance(texts, str) for texts in examples.values()):
            raise TypeError("one string, not examples: build raises, so nothing is kept")
        key = (cls, tuple((label, tuple(texts)) for label, texts in examples.items()), prune)
        hash(key)
    except (AttributeError, TypeError):
        return _build_index(cls, examples, prune=prune)
    if key not in _INDEXES:
        _INDEXES[key] = _build_index(cls, examples, prune=prune)
    return _INDEXES[key]


ExampleIndex.build = classmethod(_build_index_once)  # type: ignore[method-assign, assignment]

# Tiers (pytest -m, make unit/integration/engines/fuzz): a test's tier is its folder's.
TIERS = ("unit", "integration", "engines", "fuzz", "deploy", "browser")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        (folder, *_) = Path(str(item.fspath)).resolve().relative_to(ROOT / "tests").parts
        if folder not in TIERS:
            raise pytest.UsageError(f"tests/{folder} is in no tier: put tests in one of {', '.join(TIERS)}")
        item.add_marker(getattr(pytest.mark, folder))


@pytest.fixture(scope="session")
def pack() -> DomainPack:
    return get_pack(PACK_DIR)


@pytest.fixture(scope="session")
def lesson_pack() -> DomainPack:
    """The reference desk read as the seed's lesson: its texts and prompts are the seed's word for word."""
    return load_pack(PACK_DIR, profile="lesson")


@pytest.fixture(scope="session")
def scripted_turns() -> list[ScriptedTurn]:
    return read_scripted_turns(SCRIPTED_TURNS, get_pack(PACK_DIR).frame)


@pytest.fixture
def pack_copy(tmp_path: Path) -> Path:
    """A copy of the riverton pack folder, for tests that edit a pack file."""
    target = tmp_path / "pack"
    shutil.copytree(PACK_DIR, target)
    return target


@pytest.fixture
def stack() -> Iterator[LocalStack]:
    with local_stack() as running:
        yield running
