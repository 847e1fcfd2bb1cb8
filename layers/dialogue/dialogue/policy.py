"""The policy: the next action from the state and what the turn asked.

In order: refuse; abstain (and hand off) on a question the handbook does not cover; hand off when
asked for a person; inform on a covered topic (a program-tied topic needs a known program, else the
program is asked for, and a program the topic has no row for is abstained on); answer the question
that waited for the program, once a turn gives it (the desk profile; the state keeps its topic's
name); clarify a correction that names nothing the rules read, once a slot holds a value (never
confirm the old one); ask for the first missing slot; confirm. No branch approves anything.

The desk profile also keeps what the desk asked last (`DialogueState.asked`): "start over" clears the
slots and asks again from the first; once the desk has confirmed, a turn that changes no slot is not
confirmed again: a "no" is asked what to change (clarify), anything else is told what happens next
(next_step). And it keeps, for one turn, the topic its answer raised a slot with
(`DialogueState.answered_topic`: after the creche's answer, "yes please" needs child care).
"""

from __future__ import annotations

from dialogue.actions import Action
from dialogue.pack import UNKNOWN, DomainPack, Topic, UnderstandingProfile
from dialogue.state import DialogueState
from dialogue.understanding import Understanding


def _inform(state: DialogueState, understanding: Understanding, pack: DomainPack) -> Action:
    return _answer(state, pack.topic(understanding.topic), pack)


def _answer(state: DialogueState, topic: Topic | None, pack: DomainPack) -> Action:
    if topic is None:  # an understanding from another pack: nothing here answers it
        return Action.ABSTAIN_HAND_OFF
    if not topic.program_tied:
        return Action.INFORM
    if not state.is_known(pack.program_slot):
        request = pack.frame.slot(pack.program_slot).request_action
        return request if request is not None else Action.ABSTAIN_HAND_OFF
    return Action.INFORM if topic.rows_for(state.get(pack.program_slot)) else Action.ABSTAIN_HAND_OFF


def choose_action(
    state: DialogueState, understanding: Understanding, pack: DomainPack, *, changed: bool = True
) -> Action:
    """The next action; `state` is the state after the turn's slot updates, `changed` whether they
    changed a slot the desk asks for."""
    if understanding.must_refuse:
        return Action.REFUSE
    if understanding.contact_typed:  # a number or an address in the chat: point at the form, keep nothing
        return Action.CLARIFY
    if understanding.route == "abstain":
        return Action.ABSTAIN_HAND_OFF
    if understanding.route == "hand_off":
        return Action.HAND_OFF
    if understanding.route == "inform":
        return _inform(state, understanding, pack)
    waiting = pack.topic(state.waiting_topic)
    if waiting is not None and state.is_known(pack.program_slot):
        return _answer(state, waiting, pack)
    if understanding.correction and not understanding.slot_updates and _holds_an_answer(state, pack):
        return Action.CLARIFY  # a correction it cannot read: ask, never confirm the old value
    for slot in pack.frame.requested_slots:
        if not state.is_known(slot.name) and slot.request_action is not None:
            return slot.request_action
    if state.confirmed and not changed and pack.understanding_profile is UnderstandingProfile.DESK:
        # A bare "no" to the confirmation is asked what to change; "no, i dont need childcare" said what it is about.
        return Action.CLARIFY if understanding.answer == "no" and not understanding.slot_updates else Action.NEXT_STEP
    return Action.CONFIRM


def _holds_an_answer(state: DialogueState, pack: DomainPack) -> bool:
    """Whether some slot the desk asks for already holds a value a correction could be about."""
    return any(state.is_known(slot.name) for slot in pack.frame.requested_slots)


def turn_topic(understanding: Understanding, action: Action, before: DialogueState | None = None) -> str | None:
    """The topic a turn keeps: the one that decided an inform or an abstention (the question that
    waited in `before`, the state the turn met, when this turn answers it), else none."""
    if action not in (Action.INFORM, Action.ABSTAIN_HAND_OFF):
        return None
    if understanding.route == "enroll" and before is not None and before.waiting_topic is not None:
        return before.waiting_topic
    return understanding.topic


def _waiting_after(state: DialogueState, understanding: Understanding, action: Action, pack: DomainPack) -> str | None:
    """The question left waiting after this turn: a program-tied question met with a request for the
    program (desk profile only) waits; a turn on the frame's path keeps it waiting while it is still
    asked for; an answer, another question or anything else ends the wait."""
    if pack.understanding_profile is not UnderstandingProfile.DESK or not action.is_request:
        return None
    if understanding.route == "inform":
        topic = pack.topic(understanding.topic)
        return topic.name if topic is not None and topic.program_tied else None
    return state.waiting_topic if understanding.route == "enroll" else None


def _other_offering(state: DialogueState, pack: DomainPack) -> str | None:
    """The offering the resident has not chosen, where the program slot holds one of exactly two ("the other
    course"); else none."""
    if not state.is_known(pack.program_slot):
        return None
    chosen = state.get(pack.program_slot)
    offerings = [value for value in pack.frame.slot(pack.program_slot).values if value not in (UNKNOWN, chosen)]
    return offerings[0] if len(offerings) == 1 else None


def next_state(state: DialogueState, understanding: Understanding, pack: DomainPack) -> tuple[DialogueState, Action]:
    """Apply the turn's updates ("start over" first clears every slot), choose the action, and keep the
    old state when refusing. The state remembers what the desk asks with this action: a request's slot
    or the confirmation (a turn that asks nothing new leaves the last question as it was)."""
    base = DialogueState.new(pack.frame) if understanding.restart else state
    if understanding.other_offering and (other := _other_offering(base, pack)) is not None:
        understanding = understanding.model_copy(
            update={"slot_updates": {**understanding.slot_updates, pack.program_slot: other}}
        )
    updated = base.with_updates(understanding.slot_updates)
    # A change the confirmation reads back: a slot the desk asks for ("i dont need childcare" after it is recorded, and
    # is told what comes next).
    changed = any(updated.get(slot.name) != base.get(slot.name) for slot in pack.frame.requested_slots)
    action = choose_action(updated, understanding, pack, changed=changed)
    if action is Action.REFUSE:
        return state, action
    asked = str(action) if action.is_request or action is Action.CONFIRM else updated.asked
    after = updated.waiting_for(_waiting_after(updated, understanding, action, pack)).asking(asked)
    return after.answering(_raised_by(understanding, action, state, pack)), action


def _raised_by(understanding: Understanding, action: Action, before: DialogueState, pack: DomainPack) -> str | None:
    """The topic this turn's answer raises a slot with (`Topic.raises`; desk profile only): an inform on it."""
    if action is not Action.INFORM or pack.understanding_profile is not UnderstandingProfile.DESK:
        return None
    topic = pack.raising_topic(turn_topic(understanding, action, before))
    return topic.name if topic is not None else None
