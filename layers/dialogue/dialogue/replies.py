"""Fixed reply texts: the whole reply for refuse and hand-offs, the fallback for generated actions."""

from __future__ import annotations

from collections.abc import Mapping

from dialogue.actions import Action
from dialogue.pack import UNKNOWN, DomainPack
from dialogue.state import DialogueState


class SlotText(str):
    """A slot's value in a text: `{slot}` is the value itself, `{slot.label}` how it reads to a person
    and `{slot.phrase}` what a confirmation adds for it (empty for most values)."""

    label: str
    phrase: str

    def __new__(cls, value: str, label: str, phrase: str) -> SlotText:
        text = super().__new__(cls, value)
        text.label, text.phrase = label, phrase
        return text


def reply_fields(slots: Mapping[str, str], pack: DomainPack, facts: str = "") -> dict[str, str]:
    """The placeholders a fixed or template text may use, all derived from the slots and the pack."""
    fields: dict[str, str] = {
        spec.name: SlotText(value, pack.value_label(spec.name, value), spec.confirm_phrase(value))
        for spec in pack.frame.slots
        for value in (slots.get(spec.name, UNKNOWN),)
    }
    return {"program_display": pack.program_display(slots.get(pack.program_slot, UNKNOWN)), "facts": facts, **fields}


def fixed_reply(action: Action, state: DialogueState, pack: DomainPack, topic: str | None = None) -> str:
    """The pack's fixed text for `action`, filled from the state: an abstention on a topic with its own
    text gets that text."""
    found = pack.topic(topic) if action is Action.ABSTAIN_HAND_OFF else None
    text = found.fixed_text if found is not None and found.fixed_text else pack.action(action).fixed_text
    return text.format_map(reply_fields(state.slots, pack))
