"""Fixed reply texts: the whole reply for refuse and hand-offs, the fallback for generated actions."""

from __future__ import annotations

from dialogue.actions import Action
from dialogue.pack import DomainPack
from dialogue.state import DialogueState


def reply_fields(state: DialogueState, pack: DomainPack, facts: str = "") -> dict[str, str]:
    """The placeholders a fixed or template text may use, all derived from the state and pack."""
    return {
        "program_display": pack.program_display(state.get(pack.program_slot)),
        "facts": facts,
        **state.slots,
    }


def fixed_reply(action: Action, state: DialogueState, pack: DomainPack, topic: str | None = None) -> str:
    """The pack's fixed text for `action`, filled from the state: an abstention on a topic with its own
    text gets that text."""
    found = pack.topic(topic) if action is Action.ABSTAIN_HAND_OFF else None
    text = found.fixed_text if found is not None and found.fixed_text else pack.action(action).fixed_text
    return text.format_map(reply_fields(state, pack))
