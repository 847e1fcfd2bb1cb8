"""The core knows frames, not forklifts: no code names a desk, its programs or services, or its slot values.

Every desk under `data/` contributes its folder name, its desk name, its programs' (services') ids and
display names, and its slot values (but `unknown`, shared by every slot, and the yes/no of a yes/no
slot, which are plain English). None of them may appear as a whole word, in any case, in any file under
`layers/`, `functions/`, `realizer_container/` or `devstack/`: code, comments, Makefiles and Dockerfiles
alike. A second desk then runs with no code change, and defaults come from configuration
(`data/packs.toml`, the template's DomainPack parameter), not code.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dialogue.pack import get_pack

ROOT = Path(__file__).resolve().parents[2]
DESKS = sorted(path.parent for path in (ROOT / "data").glob("*/domain.toml"))
CODE_DIRS = ("layers", "functions", "realizer_container", "devstack")
PLAIN_WORDS = {"unknown", "yes", "no"}


def domain_words(desk: Path) -> set[str]:
    pack = get_pack(desk)
    words = {desk.name, pack.spec.domain.name}
    for program in pack.spec.programs:
        words |= {program.id, program.display_name}
    for slot in pack.frame.slots:
        words |= set(slot.values) - PLAIN_WORDS
    return words


def word_pattern(words: set[str]) -> re.Pattern[str]:
    """Whole words, any case; an identifier's underscores also match spaces or hyphens ("data support")."""
    alternatives = sorted((re.escape(word).replace("_", "[_ -]") for word in words), key=len, reverse=True)
    return re.compile(rf"(?<![\w-])(?:{'|'.join(alternatives)})(?![\w-])", re.IGNORECASE)


def code_files() -> list[Path]:
    files = []
    for folder in CODE_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in {".pyc", ".png"}:
                files.append(path)
    return files


def test_there_are_two_desks() -> None:
    assert len(DESKS) >= 2, [desk.name for desk in DESKS]


@pytest.mark.parametrize("desk", DESKS, ids=[desk.name for desk in DESKS])
def test_no_code_names_a_desk_its_services_or_its_slot_values(desk: Path) -> None:
    pattern = word_pattern(domain_words(desk))
    found = []
    for path in code_files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if match := pattern.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r}")
    assert not found, "\n".join(found)


def test_the_check_finds_a_domain_word_where_there_is_one(tmp_path: Path) -> None:
    """The pattern is no stub: it finds each kind of word, whole, in any case and spelling of its underscores."""
    pattern = word_pattern({"data_support", "Forklift Operator Licence", "sms"})
    assert pattern.search("DATA SUPPORT hours")
    assert pattern.search("the forklift operator licence")
    assert pattern.search('value = "sms"')
    assert not pattern.search("smsc database_support")
