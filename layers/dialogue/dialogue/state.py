"""The dialogue state: one coarse value per frame slot, never the user's words."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from dialogue.actions import Action
from dialogue.pack import UNKNOWN, Frame


class DialogueState(BaseModel):
    """An immutable record of slot values; updates return a new state.

    `waiting_topic` is a question asked before the slot its answer depends on was known ("when does it
    meet?" before a program was chosen), kept as its topic's name (a pack label, never the words), so
    the turn that fills the slot answers it.

    `asked` is what the desk asked last: the request action of the slot it asked for, or `confirm` once
    it has read the choices back (an action's name, never text). A short answer fills the slot just asked
    ("the blue one", "by post", "yes"), and after the confirmation a turn that changes nothing is not
    confirmed again.

    `answered_topic` is the topic the desk answered with its last reply, when that topic raises a slot the desk
    never asks for (a pack name, never text): after an answer about the creche, "yes please" or "i'll need it"
    says the resident needs child care. It lasts one turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slots: dict[str, str]
    waiting_topic: str | None = None
    asked: str | None = None
    answered_topic: str | None = None

    @classmethod
    def new(cls, frame: Frame) -> DialogueState:
        return cls(slots=dict.fromkeys(frame.slot_names, UNKNOWN))

    @classmethod
    def from_slots(cls, frame: Frame, slots: Mapping[str, str]) -> DialogueState:
        """Rebuild a stored state, rejecting slots or values the frame does not allow."""
        if set(slots) != set(frame.slot_names):
            raise ValueError("stored slots do not match the frame")
        for name, value in slots.items():
            if value not in frame.slot(name).values:
                raise ValueError(f"stored slot {name} holds a value the frame does not allow")
        return cls(slots={name: slots[name] for name in frame.slot_names})

    @classmethod
    def read_stored(
        cls,
        frame: Frame,
        slots: Mapping[str, str],
        waiting_topic: str | None = None,
        asked: str | None = None,
        answered_topic: str | None = None,
    ) -> tuple[DialogueState, tuple[str, ...]]:
        """A stored state read under today's frame, which a pack change may have altered since it was
        written: a slot the frame has gained starts unknown, one it has lost is dropped, and a value it no
        longer allows reads as unknown; a question the frame no longer asks reads as none asked. Returns the
        state and the slots read so (to count: never raises)."""
        read, changed = {}, []
        for name in frame.slot_names:
            value = slots.get(name, UNKNOWN)
            if value not in frame.slot(name).values:
                value = UNKNOWN
            if value != slots.get(name):
                changed.append(name)
            read[name] = value
        changed += sorted(set(slots) - set(frame.slot_names))
        if asked != Action.CONFIRM and asked not in frame.request_actions:
            asked = None
        state = cls(slots=read, waiting_topic=waiting_topic, asked=asked, answered_topic=answered_topic)
        return state, tuple(changed)

    def get(self, slot: str) -> str:
        return self.slots[slot]

    def is_known(self, slot: str) -> bool:
        return self.slots[slot] != UNKNOWN

    def with_updates(self, updates: Mapping[str, str]) -> DialogueState:
        """A new state with `updates` applied; slots not named keep their value."""
        if not updates:
            return self
        return self.model_copy(update={"slots": {**self.slots, **updates}})

    def waiting_for(self, topic: str | None) -> DialogueState:
        """A new state whose waiting question is `topic` (None: no question waits)."""
        return self if topic == self.waiting_topic else self.model_copy(update={"waiting_topic": topic})

    def asking(self, asked: str | None) -> DialogueState:
        """A new state whose last question is `asked` (a request action's name, `confirm`, or None)."""
        return self if asked == self.asked else self.model_copy(update={"asked": asked})

    def answering(self, topic: str | None) -> DialogueState:
        """A new state whose last answer raised `topic`'s slot (None: it raised none)."""
        return self if topic == self.answered_topic else self.model_copy(update={"answered_topic": topic})

    @property
    def confirmed(self) -> bool:
        """Whether the desk's last question was the confirmation of the choices."""
        return self.asked == Action.CONFIRM
