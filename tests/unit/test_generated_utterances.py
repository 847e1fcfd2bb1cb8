"""A RealizeJob cannot carry what a user typed: its inputs take no text, and every value in it comes
from a closed set (ids, the frame's slot values, the pack's wording and handbook rows).

The job is built from the coarse state, the action and the pack only, so instead of looking for a typed
marker in it (which could never be there), these check the job's shape and that every line of its
prompt is one the pack and the frame can write, over every state the frame allows.
"""

from __future__ import annotations

import inspect
from datetime import UTC, datetime
from uuid import uuid4

from hypothesis import given, settings
from hypothesis import strategies as st

from dialogue.actions import Action
from dialogue.pack import DomainPack, get_pack
from dialogue.realize import RealizeJob, build_realize_job, build_realizer_messages
from dialogue.state import DialogueState

PACK: DomainPack = get_pack()
JOB_FIELDS = {
    "job_id", "conversation_id", "turn_id", "action", "slots", "topic", "fact_ids", "messages", "max_new_tokens",
    "created_at", "reply_queue_url",
}  # fmt: skip

states = st.fixed_dictionaries({slot.name: st.sampled_from(slot.values) for slot in PACK.frame.slots}).map(
    lambda slots: DialogueState.from_slots(PACK.frame, slots)
)
model_actions = st.sampled_from(PACK.model_actions)


def test_the_job_builders_take_no_text() -> None:
    """Their parameters are ids, a state of coarse values, an action, the pack and a time: nothing else."""
    assert set(inspect.signature(build_realize_job).parameters) == {
        "conversation_id", "turn_id", "state", "action", "pack", "now", "topic", "reply_queue_url",
    }  # fmt: skip
    assert set(inspect.signature(build_realizer_messages).parameters) == {"state", "action", "pack", "topic"}
    assert set(RealizeJob.model_fields) == JOB_FIELDS


def allowed_lines(state: DialogueState, action: Action, topic: str | None) -> set[str]:
    """Every line a user message of this job may hold: the pack's and the frame's words."""
    program = state.get(PACK.program_slot)
    ids = PACK.passage_ids_for(action, program, topic)
    facts = {f"{pid}: {PACK.passages[pid].text}" for pid in ids} or {"none"}
    slot_lines = {f"{name}={value}" for name, value in state.slots.items()}
    return {
        f"ACTION: {action}",
        f"ACTION MEANING: {PACK.action(action).instruction}",
        "SLOTS:",
        "HANDBOOK FACTS:",
        *slot_lines,
        *facts,
    }


@settings(max_examples=300, deadline=None)
@given(states, model_actions, st.sampled_from([None, *(topic.name for topic in PACK.spec.topics)]))
def test_every_value_in_a_job_comes_from_the_pack_or_the_frame(
    state: DialogueState, action: Action, topic: str | None
) -> None:
    job = build_realize_job(
        conversation_id=uuid4(), turn_id=1, state=state, action=action, pack=PACK, now=datetime.now(UTC), topic=topic
    )
    assert job.slots == state.slots
    for slot, value in job.slots.items():
        assert value in PACK.frame.slot(slot).values
    assert set(job.fact_ids) <= set(PACK.passages)
    system, user = job.messages
    assert (system.role, system.content) == ("system", PACK.spec.prompts.realizer_system)
    assert user.role == "user"
    assert set(user.content.splitlines()) <= allowed_lines(state, action, topic)
