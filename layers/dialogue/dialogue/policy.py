"""The policy: the next action from the state and what the turn asked.

In order: refuse; abstain (and hand off) on a question the handbook does not cover; hand off when
asked for a person; inform on a covered topic (a program-tied topic needs a known program, else the
program is asked for, and a program the topic has no row for is abstained on); ask for the first
missing slot; confirm. No branch approves anything.
"""

from __future__ import annotations

from dialogue.actions import Action
from dialogue.pack import DomainPack
from dialogue.state import DialogueState
from dialogue.understanding import Understanding


def _inform(state: DialogueState, understanding: Understanding, pack: DomainPack) -> Action:
    topic = pack.topic(understanding.topic)
    if topic is None:  # an understanding from another pack: nothing here answers it
        return Action.ABSTAIN_HAND_OFF
    if not topic.program_tied:
        return Action.INFORM
    if not state.is_known(pack.program_slot):
        request = pack.frame.slot(pack.program_slot).request_action
        return request if request is not None else Action.ABSTAIN_HAND_OFF
    return Action.INFORM if topic.rows_for(state.get(pack.program_slot)) else Action.ABSTAIN_HAND_OFF


def choose_action(state: DialogueState, understanding: Understanding, pack: DomainPack) -> Action:
    """The next action; `state` is the state after the turn's slot updates."""
    if understanding.must_refuse:
        return Action.REFUSE
    if understanding.route == "abstain":
        return Action.ABSTAIN_HAND_OFF
    if understanding.route == "hand_off":
        return Action.HAND_OFF
    if understanding.route == "inform":
        return _inform(state, understanding, pack)
    for slot in pack.frame.requested_slots:
        if not state.is_known(slot.name) and slot.request_action is not None:
            return slot.request_action
    return Action.CONFIRM


def turn_topic(understanding: Understanding, action: Action) -> str | None:
    """The topic a turn keeps: the one that decided an inform or an abstention, else none."""
    return understanding.topic if action in (Action.INFORM, Action.ABSTAIN_HAND_OFF) else None


def next_state(state: DialogueState, understanding: Understanding, pack: DomainPack) -> tuple[DialogueState, Action]:
    """Apply the turn's updates, choose the action, and keep the old state when refusing."""
    updated = state.with_updates(understanding.slot_updates)
    action = choose_action(updated, understanding, pack)
    return (state if action is Action.REFUSE else updated), action
