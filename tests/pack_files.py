"""Editing a copy of a desk's files, for tests that check what the loader says of a mistake."""

from __future__ import annotations

from pathlib import Path


def edit_domain(pack_dir: Path, old: str, new: str) -> None:
    """Replace the first `old` in the pack's domain.toml with `new` (which must be there)."""
    domain = pack_dir / "domain.toml"
    text = domain.read_text(encoding="utf-8")
    assert old in text, old
    domain.write_text(text.replace(old, new, 1), encoding="utf-8")
