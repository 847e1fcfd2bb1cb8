"""Editing a copy of a desk's files, for tests that check what the loader says of a mistake."""

from __future__ import annotations

from pathlib import Path


def edit_domain(pack_dir: Path, old: str, new: str) -> None:
    """Replace the first `old` in the pack's domain.toml with `new` (which must be there)."""
    domain = pack_dir / "domain.toml"
    text = domain.read_text(encoding="utf-8")
    assert old in text, old
    domain.write_text(text.replace(old, new, 1), encoding="utf-8")


def desk_reply(action: str, **slots: str) -> str:
    """The default desk's fixed text for `action` in the state `slots` set (the desk profile's words, the
    template realizer's and every fallback's), so that a test names the reply without restating it."""
    from dialogue.actions import Action
    from dialogue.pack import get_pack
    from dialogue.replies import fixed_reply
    from dialogue.state import DialogueState

    pack = get_pack()
    return fixed_reply(Action(action), DialogueState.new(pack.frame).with_updates(slots), pack)
