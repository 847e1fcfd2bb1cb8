"""Shared fixtures: the domain pack, the scripted turns and a local stack on moto."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.stack import LocalStack, local_stack
from dialogue.pack import DomainPack, ScriptedTurn, get_pack, read_scripted_turns

ROOT = Path(__file__).resolve().parents[1]
PACK_DIR = ROOT / "data" / "riverton"
SCRIPTED_TURNS = PACK_DIR / "scripted_turns.csv"


@pytest.fixture(scope="session")
def pack() -> DomainPack:
    return get_pack(PACK_DIR)


@pytest.fixture(scope="session")
def scripted_turns() -> list[ScriptedTurn]:
    return read_scripted_turns(SCRIPTED_TURNS)


@pytest.fixture
def stack() -> Iterator[LocalStack]:
    with local_stack() as running:
        yield running
