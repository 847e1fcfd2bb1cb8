"""The core knows frames, not forklifts: no code names a desk, its programs or services, or its slot values.

Every desk under `data/` contributes its folder name, its desk name, its programs' (services') ids and
display names, and its slot values (but `unknown`, shared by every slot, and the yes/no of a yes/no
slot, which are plain English). None of them may appear as a whole word, in any case, in what the shared
code under `layers/`, `functions/`, `realizer_container/` or `devstack/` says: a Python file's identifiers
and string literals (read with `ast`; comments and docstrings are no code), and the lines of a Makefile,
Dockerfile or requirements list but their comment lines. devstack/starter/ is a pack's data, which must
name no desk instead; devstack's simulation (`SIMULATION_MODULES`: the simulated month, the faults, the
written history...) has words of its own, which a desk may share. `devstack check-pack` runs the same scan
(devstack/pack_check.py) on a pack anywhere. A second desk then runs with no code change, and defaults
come from configuration (`data/packs.toml`, the template's DomainPack parameter), not code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack.pack_check import (
    SIMULATION_MODULES,
    STARTER_DIR,
    code_files,
    desk_names,
    domain_words,
    find_code_words,
    find_words,
    word_pattern,
)
from dialogue.pack import get_pack

ROOT = Path(__file__).resolve().parents[2]
DESKS = sorted(path.parent for path in (ROOT / "data").glob("*/domain.toml"))


def test_there_are_two_desks() -> None:
    assert len(DESKS) >= 2, [desk.name for desk in DESKS]


@pytest.mark.parametrize("desk", DESKS, ids=[desk.name for desk in DESKS])
def test_no_code_names_a_desk_its_services_or_its_slot_values(desk: Path) -> None:
    found = find_code_words(word_pattern(domain_words(get_pack(desk), desk.name)), code_files(ROOT), ROOT)
    assert not found, "\n".join(found)


def test_the_shared_code_is_every_file_but_the_starter_and_the_simulation() -> None:
    files = {path.relative_to(ROOT).as_posix() for path in code_files(ROOT)}
    assert all((ROOT / module).is_file() for module in SIMULATION_MODULES)
    assert not files & SIMULATION_MODULES
    assert not any(name.startswith("devstack/starter/") for name in files)
    wanted = {"layers/dialogue/dialogue/policy.py", "functions/turn_api/turn_api.py", "realizer_container/Dockerfile"}
    assert wanted | {"devstack/pack_check.py", "devstack/replay.py", "layers/dialogue/Makefile"} <= files


def test_the_code_scan_reads_identifiers_and_strings_not_comments_or_docstrings(tmp_path: Path) -> None:
    code = tmp_path / "code.py"
    code.write_text(
        '"""Forklift, in the docstring."""\n'
        "# forklift, in a comment\n"
        "import forklift.parts as crane\n"
        "class Depot:\n"
        '    """Forklift."""\n'
        "    def lift(self, forklift: int, *, depot=crane.forklift) -> str:\n"
        '        return f"{forklift} Forklift trucks"  # forklift\n'
        'GREETING = """Hello,\nforklift driver"""\n'
        '"""Forklift, documenting GREETING."""\n',
        encoding="utf-8",
    )
    found = find_code_words(word_pattern({"forklift"}), [code], tmp_path)
    assert found == [
        "code.py:3: 'forklift'", "code.py:6: 'forklift'", "code.py:7: 'Forklift'", "code.py:7: 'forklift'",
        "code.py:9: 'forklift'",
    ]  # fmt: skip
    assert len(find_words(word_pattern({"forklift"}), [code], tmp_path)) == 8


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
