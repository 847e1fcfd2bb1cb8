"""A turn that outlives its pack: stored with an action, a slot, a value or a topic a deploy has since
renamed or withdrawn, while its reply was in flight. Its deadline, the sweeper, the dispatch and the
screening of its reply each end it with a fallback, never raise on it, and never stop on it (issue 41,
item 1; issue 43, item 6).

Today's pack is the desk's own; each stored turn is one an earlier version of it would have written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest

from dialogue.actions import Action, HumanReview, ReplyScreen, ReplySource, Screen, TurnStatus
from dialogue.dispatch import STALE_TURN, dispatch_pending_turn
from dialogue.pack import DomainPack
from dialogue.realize import RealizedReply, RealizeJob, ReplyDeadline, build_realize_job
from dialogue.records import ScreenOutcome, TurnRecord
from dialogue.replies import GENERIC_FALLBACK, fixed_reply, generic_fallback, outlives_pack, turn_fallback
from dialogue.screens import deadline_outcome, decide
from dialogue.state import DialogueState
from dialogue.sweep import FailedTurn, sweep_overdue_turns

CREATED = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
DEADLINE = timedelta(seconds=60)
GRACE = timedelta(seconds=120)
AFTER_THE_GRACE = CREATED + DEADLINE + GRACE + timedelta(minutes=5)

SLOTS = {"program": "forklift", "childcare_needed": "unknown", "contact_channel": "email"}

# What an earlier version of the pack stored, one way of outliving today's per case: (action, slots, topic).
ACTION_GONE = (Action("request_contact_method"), {**SLOTS, "contact_channel": "unknown"}, None)
SLOT_GONE = (  # the contact slot since renamed: its old name is gone, its new one was never stored
    Action.CONFIRM,
    {"program": "forklift", "childcare_needed": "unknown", "contact_method": "email"},
    None,
)
VALUE_GONE = (Action.CONFIRM, {**SLOTS, "program": "welding"}, None)  # a program since withdrawn
TOPIC_GONE = (Action.INFORM, SLOTS, "evening_classes")  # a topic since withdrawn
STALE = {"action gone": ACTION_GONE, "slot gone": SLOT_GONE, "value gone": VALUE_GONE}


def stored_turn(
    action: Action, slots: dict[str, str], topic: str | None = None, *, created_at: datetime = CREATED
) -> TurnRecord:
    return TurnRecord(
        conversation_id=uuid4(), turn_id=2, intent="enrollment", injection_screen=False, privileged_request=False,
        slots=slots, action=action, topic=topic, reply_source=ReplySource.MODEL, status=TurnStatus.PENDING,
        reply_screen=ReplyScreen.NOT_APPLICABLE, human_review=HumanReview.PENDING, created_at=created_at,
    )  # fmt: skip


def deadline_of(turn: TurnRecord) -> ReplyDeadline:
    return ReplyDeadline(
        conversation_id=turn.conversation_id, turn_id=turn.turn_id, action=turn.action, slots=turn.slots,
        due_at=turn.created_at + DEADLINE,
    )  # fmt: skip


# --- the fallback ------------------------------------------------------------------------------------


def test_the_fixed_text_of_an_action_the_pack_lost_raises_which_is_why_a_stale_turn_needs_its_own(
    pack: DomainPack,
) -> None:
    action, slots, _ = ACTION_GONE
    with pytest.raises(KeyError):
        fixed_reply(action, DialogueState.read_stored(pack.frame, slots)[0], pack)


@pytest.mark.parametrize("case", STALE, ids=list(STALE))
def test_the_deadline_of_a_turn_that_outlived_the_pack_ends_it_with_the_generic_fallback(
    pack: DomainPack, case: str
) -> None:
    """An action gone made the deadline raise (KeyError) and left the turn pending; a slot or a value gone
    read as unknown in the action's own text ("with contact by unknown"). Each gets the generic fallback."""
    action, slots, topic = STALE[case]
    turn = stored_turn(action, slots, topic)
    assert outlives_pack(turn.action, turn.slots, pack)
    outcome = deadline_outcome(deadline_of(turn), pack)
    assert outcome.final_reply == generic_fallback(pack) == GENERIC_FALLBACK
    assert outcome.fallback_used and outcome.screens_fired == (Screen.DEADLINE,)
    assert (outcome.reply_screen, outcome.human_review) == (ReplyScreen.NOT_APPLICABLE, HumanReview.NOT_APPLICABLE)


@pytest.mark.parametrize("case", STALE, ids=list(STALE))
def test_a_reply_worded_for_a_turn_that_outlived_the_pack_shows_the_generic_fallback_and_awaits_a_check(
    pack: DomainPack, case: str
) -> None:
    """A deploy between a job and its reply: screening raised (KeyError) on an action gone, so the screen
    queue retried the reply into its DLQ, and screened a slot or value gone as if today's pack had it."""
    action, slots, _ = STALE[case]
    state = DialogueState.from_slots(pack.frame, SLOTS)
    job = build_realize_job(
        conversation_id=uuid4(), turn_id=2, state=state, action=Action.CONFIRM, pack=pack, now=CREATED
    )
    text = "I noted the Welding Certificate, with contact by email."
    realized = RealizedReply(
        job=job.model_copy(update={"action": action, "slots": slots}),  # as an earlier pack built it
        text=text, engine="test", ended_by_eos=True, hit_token_cap=False,
    )  # fmt: skip
    outcome = decide(realized, pack)
    assert (outcome.final_reply, outcome.fallback_used) == (GENERIC_FALLBACK, True)
    assert (outcome.reply_screen, outcome.human_review) == (ReplyScreen.NOT_APPLICABLE, HumanReview.PENDING)
    assert outcome.draft is not None and outcome.draft.text == text


def test_a_turn_of_todays_pack_and_one_whose_topic_is_gone_get_their_actions_own_fallback(pack: DomainPack) -> None:
    """A deadline carries no topic (its fallback is the action's, whatever the topic), so a topic gone
    outlives only the job (see the dispatch below)."""
    state = DialogueState.from_slots(pack.frame, SLOTS)
    for action, slots, topic in ((Action.CONFIRM, SLOTS, None), (Action.REQUEST_CONTACT, SLOTS, None), TOPIC_GONE):
        turn = stored_turn(action, slots, topic)
        assert not outlives_pack(turn.action, turn.slots, pack)
        assert deadline_outcome(deadline_of(turn), pack).final_reply == fixed_reply(action, state, pack)
        assert turn_fallback(action, slots, pack) == fixed_reply(action, state, pack) != GENERIC_FALLBACK


def test_a_pack_may_word_its_own_generic_fallback_and_it_names_no_slot(pack_copy: Any) -> None:
    from pack_files import edit_domain

    from dialogue.pack import PackError, load_pack

    edit_domain(pack_copy, "[domain]\n", '[domain]\nfallback_text = "Please send that message again."\n')
    own = load_pack(pack_copy)
    action, slots, _ = ACTION_GONE
    assert turn_fallback(action, slots, own) == "Please send that message again."
    edit_domain(pack_copy, '"Please send that message again."', '"Please name the {program} again."')
    with pytest.raises(PackError, match=r"table domain, field fallback_text: names no placeholder"):
        load_pack(pack_copy)


# --- the sweeper --------------------------------------------------------------------------------------


@dataclass
class FakePendingTurns:
    """The sweeper's store: overdue turns oldest first, each finalized once. A turn in `broken` raises its
    error when finalized, as a store or a bug might."""

    turns: list[TurnRecord]
    broken: dict[UUID, Exception] = field(default_factory=dict)
    finalized: dict[UUID, ScreenOutcome] = field(default_factory=dict)

    def overdue_turns(
        self, created_before: datetime, *, limit: int, after: str | None = None
    ) -> tuple[list[TurnRecord], str | None]:
        overdue = sorted((t for t in self.turns if t.created_at < created_before), key=lambda t: t.created_at)
        start = int(after or 0)
        page = overdue[start : start + limit]
        return page, str(start + limit) if start + limit < len(overdue) else None

    def record_screened_reply(self, conversation_id: UUID, turn_id: int, outcome: ScreenOutcome, now: datetime) -> bool:
        if conversation_id in self.broken:
            raise self.broken[conversation_id]
        if conversation_id in self.finalized:
            return False
        self.finalized[conversation_id] = outcome
        return True


def sweep(store: FakePendingTurns, pack: DomainPack) -> Any:
    return sweep_overdue_turns(store, pack, now=AFTER_THE_GRACE, reply_deadline=DEADLINE, grace=GRACE)


def test_a_request_for_a_renamed_slot_ahead_of_a_confirm_no_longer_stops_the_sweep(pack: DomainPack) -> None:
    """The issue's case: the sweep read oldest first and died on the request every run (KeyError), so 0
    of the 2 turns were ever finalized. Both are now: the request with the generic fallback, counted."""
    action, slots, _ = ACTION_GONE
    stale = stored_turn(action, slots)
    confirm = stored_turn(Action.CONFIRM, SLOTS, created_at=CREATED + timedelta(seconds=1))
    store = FakePendingTurns([confirm, stale])
    result = sweep(store, pack)
    assert (result.finalized, result.stale, result.failed, result.complete) == (2, 1, 0, True)
    assert store.finalized[stale.conversation_id].final_reply == GENERIC_FALLBACK
    confirm_text = fixed_reply(Action.CONFIRM, DialogueState.from_slots(pack.frame, SLOTS), pack)
    assert store.finalized[confirm.conversation_id].final_reply == confirm_text


def test_every_way_of_outliving_the_pack_is_finalized_and_counted_by_the_sweep(pack: DomainPack) -> None:
    turns = [stored_turn(*case, created_at=CREATED + timedelta(seconds=n)) for n, case in enumerate(STALE.values())]
    topic_gone = stored_turn(*TOPIC_GONE, created_at=CREATED + timedelta(seconds=10))
    store = FakePendingTurns([*turns, topic_gone])
    result = sweep(store, pack)
    assert (result.finalized, result.stale, result.failed, result.complete) == (4, 3, 0, True)
    assert [store.finalized[turn.conversation_id].final_reply for turn in turns] == [GENERIC_FALLBACK] * 3
    assert store.finalized[topic_gone.conversation_id].final_reply == pack.action(Action.INFORM).fixed_text
    assert result.unreadable_values == 2 + 1  # the slot renamed: its new name unread, its old one; the value


def test_a_turn_that_fails_in_any_other_way_is_reported_by_its_ids_and_the_sweep_goes_on(pack: DomainPack) -> None:
    first = stored_turn(Action.CONFIRM, SLOTS)
    second = stored_turn(Action.REQUEST_CONTACT, SLOTS, created_at=CREATED + timedelta(seconds=1))
    store = FakePendingTurns([first, second], broken={first.conversation_id: RuntimeError("Forklift, by email.")})
    result = sweep(store, pack)
    assert (result.finalized, result.failed) == (1, 1)
    assert second.conversation_id in store.finalized
    assert result.failures == [FailedTurn(conversation_id=first.conversation_id, turn_id=2, error="RuntimeError")]
    # Not complete: the failure queue is kept until a sweep has finalized every overdue turn.
    assert result.complete is False
    assert "Forklift" not in result.model_dump_json()
    # The next run tries it again, and finishes once it can.
    store.broken.clear()
    again = sweep(store, pack)
    assert (again.finalized, again.already_final, again.failed, again.complete) == (1, 1, 0, True)


# --- the dispatch -------------------------------------------------------------------------------------


@dataclass
class RecordingQueues:
    sent: list[tuple[str, object]] = field(default_factory=list)

    def send_deadline(self, deadline: ReplyDeadline, *, delay_seconds: int) -> None:
        self.sent.append(("deadline", deadline))

    def send_job(self, job: RealizeJob) -> None:
        self.sent.append(("job", job))


WITHHELD = {**STALE, "topic gone": TOPIC_GONE}


@pytest.mark.parametrize("case", WITHHELD, ids=list(WITHHELD))
def test_a_turn_whose_job_the_pack_cannot_build_is_sent_its_deadline_alone_and_never_fails(
    pack: DomainPack, case: str
) -> None:
    """The deadline went first and building the job then raised (an action or a topic gone: KeyError,
    ValueError), so each of the stream's retries sent another deadline; a slot or value gone sent a job
    no model could word. Now the job is built first, and such a turn is sent its deadline alone, every
    delivery the same message."""
    turn = stored_turn(*WITHHELD[case])
    first, again = RecordingQueues(), RecordingQueues()
    withheld = dispatch_pending_turn(turn, queues=first, pack=pack, now=CREATED, reply_deadline=DEADLINE)
    dispatch_pending_turn(turn, queues=again, pack=pack, now=CREATED + timedelta(hours=1), reply_deadline=DEADLINE)
    assert withheld == (STALE_TURN if case in STALE else "ValueError")
    ((kind, deadline),) = first.sent
    assert kind == "deadline" and deadline == deadline_of(turn)
    assert again.sent == first.sent


def test_a_turn_of_todays_pack_still_gets_its_deadline_then_its_job(pack: DomainPack) -> None:
    queues = RecordingQueues()
    turn = stored_turn(Action.INFORM, SLOTS, "schedule")
    assert dispatch_pending_turn(turn, queues=queues, pack=pack, now=CREATED, reply_deadline=DEADLINE) is None
    assert [kind for kind, _ in queues.sent] == ["deadline", "job"]
