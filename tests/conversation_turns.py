"""Talking to a desk turn by turn in a test, as the turn function reads each turn: with what the desk asked last and
the topic its last answer raised a slot with."""

from __future__ import annotations

from dialogue.pack import DomainPack
from dialogue.policy import next_state
from dialogue.state import DialogueState
from dialogue.understanding import understand

Turn = tuple[str, str, dict[str, str]]
"""The resident's text, the action expected, and the slots expected after it (those named only)."""


def talk(pack: DomainPack, turns: list[Turn]) -> DialogueState:
    """Each turn through understanding and the policy; asserts its action and the slots it names. Returns the state
    after the last turn."""
    state = DialogueState.new(pack.frame)
    for number, (text, expected, slots) in enumerate(turns, 1):
        read = understand(text, pack, state.asked, answered_topic=state.answered_topic)
        state, action = next_state(state, read, pack)
        assert (str(action), {slot: state.get(slot) for slot in slots}) == (expected, slots), f"turn {number}: {text}"
    return state
