"""`python -m devstack verify-audit` as a developer runs it: a local desk session's audit verifies, and the
two rewrites it then makes (one keeping the hash, one recomputing it) are each caught and named."""

from __future__ import annotations

import re

from commands import run_devstack


def test_the_command_verifies_a_clean_audit_and_catches_both_rewrites() -> None:
    result = run_devstack("verify-audit")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"verify-audit: a desk session wrote (\d+) audit links and \1 WORM copies", lines[0]), lines
    assert "verify-audit: 1. the clean audit verifies, table and WORM copies alike" in lines
    link = r"conversation [0-9a-f-]{36} turn \d+ link \d+"
    changed = [line for line in lines if re.search(rf"{link}: changed: its hash does not match its fields$", line)]
    rehashed = [line for line in lines[lines.index(next(ln for ln in lines if "3. " in ln)) :] if "differs" in line]
    assert changed and rehashed
    assert lines[-1].startswith("verify-audit: both rewrites were caught")
    # ids, numbers and codes only: nothing the session's resident or staff typed
    from devstack.desk_walk import CORRECTION, HANDOFF_REPLY
    from devstack.month import resident_scripts
    from dialogue.pack import default_pack_dir

    said = [text for script in resident_scripts(default_pack_dir()) for text in script]
    for text in (CORRECTION, HANDOFF_REPLY, *said):
        assert text not in result.stdout + result.stderr
