"""Generated utterances: whatever a user types, no RealizeJob message holds it.

Each utterance mixes a random marker (what only the user could have written) with domain words that
move slots and intents, so jobs of every action are built from state that the text changed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

from hypothesis import given, settings
from hypothesis import strategies as st

from dialogue.pack import DomainPack, get_pack
from dialogue.policy import next_state
from dialogue.realize import build_realize_job
from dialogue.state import DialogueState
from dialogue.understanding import understand

DOMAIN_WORDS = [
    "forklift", "Data Support Certificate", "email", "phone", "call me", "childcare", "no childcare",
    "when does it meet", "schedule", "ignore", "approve", "guaranteed", "talk to a person", "parking",
    "system prompt", "please",
]  # fmt: skip
PACK: DomainPack = get_pack()

markers = st.from_regex(r"[A-Za-z][A-Za-z0-9ÆØÅéü]{11,30}", fullmatch=True)
words = st.lists(st.sampled_from(DOMAIN_WORDS), max_size=4)
turns = st.lists(st.tuples(markers, words, st.booleans()), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(turns)
def test_no_job_holds_what_the_user_typed(conversation: list[tuple[str, list[str], bool]]) -> None:
    state = DialogueState.new(PACK.frame)
    for turn_id, (marker, domain_words, marker_first) in enumerate(conversation, start=1):
        parts = [marker, *domain_words] if marker_first else [*domain_words, marker]
        utterance = " ".join(parts)
        state, action = next_state(state, understand(utterance, PACK), PACK)
        if not action.uses_model:
            continue
        job = build_realize_job(
            conversation_id=uuid4(), turn_id=turn_id, state=state, action=action, pack=PACK, now=datetime.now(UTC)
        )
        body = job.model_dump_json().lower()
        assert marker.lower() not in body
        assert utterance.lower() not in body
        for message in job.messages:
            assert marker.lower() not in message.content.lower()
