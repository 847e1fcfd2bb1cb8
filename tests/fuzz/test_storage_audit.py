"""Last in the fuzz tier (file order): stop the server and read every item, message and log line it kept."""

from __future__ import annotations

from typing import Any

import pytest
from fuzzing import PACK_DIR, ROOT, SERVER_WORDING, Budget, kept_forms, telling


def test_nothing_a_turn_carried_was_kept(served_api: Any, budget: Budget) -> None:
    """Runs last (file order): stops the server, then reads every item, message and log line it kept."""
    if not budget.turn_texts:
        pytest.skip("no turn was fuzzed in this session")
    from devstack.audit import AUDIT_FILES, approved_wording

    served_api.stop()
    files = {name: (served_api.audit_dir / name).read_text(encoding="utf-8").lower() for name in AUDIT_FILES}
    assert all(files.values()), "the server kept items, sent messages and logged"
    kept = "\n".join(files.values())
    # The system's own words: the pack's, and its code's (a field name such as "human_review" is kept).
    code = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "layers" / "dialogue").rglob("*.py"))
    approved = approved_wording(PACK_DIR) + code.lower() + SERVER_WORDING.lower()
    checked = [text for text in budget.turn_texts if telling(text) and text.lower() not in approved]
    assert len(checked) >= 100, "the fuzzer sent enough turn text to check"
    leaks = [text for text in checked if any(form in kept for form in kept_forms(text))]
    assert not leaks, f"{len(leaks)} sent strings were kept, e.g. {leaks[:3]!r:.300}"
