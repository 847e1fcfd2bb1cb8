"""The policy: the next action from the state and what the turn asked, in the seed's branch order."""

from __future__ import annotations

from dialogue.actions import Action
from dialogue.pack import DomainPack
from dialogue.state import DialogueState
from dialogue.understanding import Understanding


def choose_action(state: DialogueState, understanding: Understanding, pack: DomainPack) -> Action:
    """Refuse, abstain, hand off, inform, ask for the first missing slot, else confirm.

    `state` is the state after the turn's slot updates. No branch approves anything.
    """
    if understanding.must_refuse:
        return Action.REFUSE
    if understanding.route == "abstain":
        return Action.ABSTAIN_HAND_OFF
    if understanding.route == "hand_off":
        return Action.HAND_OFF
    if understanding.route == "inform" and state.is_known(pack.program_slot):
        return Action.INFORM
    for slot in pack.frame.requested_slots:
        if not state.is_known(slot.name) and slot.request_action is not None:
            return slot.request_action
    return Action.CONFIRM


def next_state(state: DialogueState, understanding: Understanding, pack: DomainPack) -> tuple[DialogueState, Action]:
    """Apply the turn's updates, choose the action, and keep the old state when refusing."""
    updated = state.with_updates(understanding.slot_updates)
    action = choose_action(updated, understanding, pack)
    return (state if action is Action.REFUSE else updated), action
