"""The core knows frames, not forklifts: no code names a desk, its programs or services, or its slot values.

Every desk under `data/` contributes its folder name, its desk name, its programs' (services') ids and
display names, and its slot values (but `unknown`, shared by every slot, and the yes/no of a yes/no
slot, which are plain English). None of them may appear as a whole word, in any case, in any file under
`layers/`, `functions/`, `realizer_container/` or `devstack/`: code, comments, Makefiles and Dockerfiles
alike (but devstack/starter/, a pack's data, which must name no desk instead). `devstack check-pack`
runs the same scan (devstack/pack_check.py) on a pack anywhere. A second desk then runs with no code
change, and defaults come from configuration (`data/packs.toml`, the template's DomainPack parameter),
not code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.pack_check import STARTER_DIR, code_files, desk_names, domain_words, find_words, word_pattern
from dialogue.pack import get_pack

ROOT = Path(__file__).resolve().parents[2]
DESKS = sorted(path.parent for path in (ROOT / "data").glob("*/domain.toml"))


def test_there_are_two_desks() -> None:
    assert len(DESKS) >= 2, [desk.name for desk in DESKS]


@pytest.mark.parametrize("desk", DESKS, ids=[desk.name for desk in DESKS])
def test_no_code_names_a_desk_its_services_or_its_slot_values(desk: Path) -> None:
    found = find_words(word_pattern(domain_words(get_pack(desk), desk.name)), code_files(ROOT), ROOT)
    assert not found, "\n".join(found)


def test_the_check_finds_a_domain_word_where_there_is_one(tmp_path: Path) -> None:
    """The pattern is no stub: it finds each kind of word, whole, in any case and spelling of its underscores."""
    pattern = word_pattern({"data_support", "Forklift Operator Licence", "sms"})
    assert pattern.search("DATA SUPPORT hours")
    assert pattern.search("the forklift operator licence")
    assert pattern.search('value = "sms"')
    assert not pattern.search("smsc database_support")


def test_the_starter_names_no_desk() -> None:
    """The starter pack is data, not code (the scan above leaves it out); it names no desk of data/."""
    names = set().union(*(desk_names(get_pack(desk), desk.name) for desk in DESKS))
    starter = sorted(path for path in STARTER_DIR.iterdir() if path.is_file())
    assert len(starter) >= 5
    assert find_words(word_pattern(names), starter, STARTER_DIR) == []
