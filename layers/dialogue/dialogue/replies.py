"""Fixed reply texts: the whole reply for refuse and hand-offs, the fallback for generated actions, and the
desk's generic fallback for a turn that has outlived its pack.

A generated turn waits for its reply with the action and slots it was decided with. A deploy may change the
pack meanwhile: a slot renamed takes its request action with it, a value or a slot is withdrawn. Such a
turn's action has no fixed text any more, or its slots read as unknown ("I recorded the unknown"), so it
gets the generic fallback, which names nothing (`turn_fallback`).
"""

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


GENERIC_FALLBACK = "Sorry, I could not answer that message. Please send it again."
"""The generic fallback of a desk whose pack gives no `fallback_text` ([domain] table): it names nothing a
desk has, so it fits every desk."""


COLD_REPLY_LINE = "A person will check this reply and write to you here if anything needs adding."
"""The line a desk whose pack gives no `cold_reply_line` ([domain] table) adds to the fallback of a turn
that found the realizer cold: it names nothing a desk has, so it fits every desk."""


def cold_reply_line(pack: DomainPack) -> str:
    """The desk's line for a turn the model could not word in time (the realizer cold): the pack's
    `cold_reply_line`, else COLD_REPLY_LINE."""
    return pack.spec.domain.cold_reply_line or COLD_REPLY_LINE


def outlives_pack(action: Action, slots: Mapping[str, str], pack: DomainPack) -> bool:
    """Whether a turn stored under an earlier version of the pack has outlived it: its action is not one of
    this pack's (a request for a slot since renamed or dropped), or its slots are not a state of today's frame
    (a slot renamed, dropped or added, a value withdrawn: what `DialogueState.read_stored` reads otherwise).
    A stored turn's slots are its whole state, so a turn of an unchanged pack never has."""
    return action not in pack.actions or bool(DialogueState.read_stored(pack.frame, slots)[1])


def generic_fallback(pack: DomainPack) -> str:
    """The desk's reply to a turn it can no longer word: the pack's `fallback_text`, else GENERIC_FALLBACK."""
    return pack.spec.domain.fallback_text or GENERIC_FALLBACK


def turn_fallback(action: Action, slots: Mapping[str, str], pack: DomainPack) -> str:
    """The fixed fallback a generated turn shows in place of its reply: its action's fixed text in its
    stored state, or the generic fallback for a turn that has outlived the pack (`outlives_pack`), whose
    action's text would raise or misread its slots."""
    if outlives_pack(action, slots, pack):
        return generic_fallback(pack)
    return fixed_reply(action, DialogueState.from_slots(pack.frame, slots), pack)
