"""The staff desk's rules (dialogue.desk_rules, dialogue.desk) on the in-memory adapters: claims and their
expiry, release, decisions, replies, closes, corrections of the record, what a refusal means, what the
counters add and what the audit records. No moto, no AWS library: the DynamoDB adapter's own conditions
and transactions are tested on moto in tests/integration."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from uuid import UUID, uuid4

import pytest

from dialogue import audit_chain, conversation, desk
from dialogue.actions import Action, HandoffStatus, HumanReview, Queue, ReplyScreen, ReplySource, TurnStatus
from dialogue.desk import CLOSED, DecisionRequest, decided_review, decision_counters
from dialogue.desk_rules import Decision, RecordCorrection, StaffMember, claim_until, refusal
from dialogue.errors import (
    AlreadyDecided,
    ClaimedByOther,
    ClaimRequired,
    HandoffClosed,
    InvalidDecision,
    NotInQueue,
)
from dialogue.pack import DomainPack
from dialogue.ports import (
    ConversationStore,
    DeskStore,
    DispatchQueues,
    RealizerWaker,
    SealedContact,
    TurnCommit,
    WakeOutcome,
)
from dialogue.records import Draft, ScreenOutcome, TurnRecord
from dialogue.state import DialogueState
from tests.memory_adapters import (
    MemoryConversationStore,
    MemoryDeskStore,
    MemoryDispatchQueues,
    MemoryRealizerWaker,
)

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
CLAIM = timedelta(minutes=10)
ANA, BO = StaffMember(subject="sub-ana", name="ana"), StaffMember(subject="sub-bo")
DRAFT = Draft(text="Classes meet on Saturdays.", ended_by_eos=True, hit_token_cap=False)


def test_these_tests_and_the_memory_adapters_load_no_aws_library_and_no_moto() -> None:
    script = (
        "import json, sys, tests.unit.test_desk_rules\n"
        "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=root)
    loaded = set(json.loads(done.stdout))
    assert "dialogue" in loaded
    assert not loaded & {"moto", "boto3", "botocore", "aws_lambda_powertools"}


def test_the_memory_adapters_fit_the_ports() -> None:
    """Each in-memory adapter stands where its port is asked for (tests/unit/test_dispatch.py sends on the
    dispatch queues' one)."""
    conversations: ConversationStore = MemoryConversationStore()
    store: DeskStore = MemoryDeskStore()
    recording = MemoryDispatchQueues()
    queues: DispatchQueues = recording
    waker: RealizerWaker = MemoryRealizerWaker(WakeOutcome.WOKEN, cold=True)
    assert conversations.load_conversation(uuid4()) is None
    assert store.conversations.load_conversation(uuid4()) is None
    assert store.desk_counters().total == {} and store.turn_copies(uuid4(), 1) is None
    assert queues is recording and recording.sent == []
    assert (waker.wake(), waker.cold) == (WakeOutcome.WOKEN, True)


# --- building items -------------------------------------------------------------------------------------


def desk_item(queue: Queue | None, **fields: object) -> TurnRecord:
    """A turn at T0 waiting in `queue` (None: in none), open, unclaimed; `fields` change it."""
    base = {
        "conversation_id": uuid4(),
        "turn_id": 1,
        "intent": "hand_off",
        "injection_screen": False,
        "privileged_request": False,
        "slots": {},
        "action": Action.HAND_OFF,
        "reply_source": ReplySource.FIXED,
        "status": TurnStatus.FINAL,
        "reply_screen": ReplyScreen.NOT_FLAGGED,
        "human_review": HumanReview.PENDING if queue is Queue.REVIEW else HumanReview.NOT_APPLICABLE,
        "handoff_status": HandoffStatus.OPEN if queue is Queue.HANDOFF else None,
        "created_at": T0,
        "queue": queue,
        "queued_at": T0 if queue is not None else None,
    }
    return TurnRecord.model_validate({**base, **fields})


def handoff(store: MemoryDeskStore, pack: DomainPack, now: datetime = T0) -> UUID:
    """A conversation whose first turn (a resident's, through the core) opened a hand-off item: turn 1."""
    conversation_id = conversation.start_conversation(store.conversations, pack, now)
    view = conversation.take_turn(
        conversation_id, "Can I talk to a person?", store=store.conversations, pack=pack, now=now, max_turns=20
    )
    assert view.turn.turn_id == 1 and store.queued_turn(conversation_id, 1, Queue.HANDOFF).opens_handoff
    return conversation_id


def review(store: MemoryDeskStore, pack: DomainPack, *, fallback: bool = False) -> UUID:
    """A conversation whose first turn is a screened draft awaiting a person's check: turn 1, queued at T0."""
    conversation_id = conversation.start_conversation(store.conversations, pack, T0)
    before = store.conversations.load_conversation(conversation_id)
    assert before is not None
    pending = desk_item(
        None,
        conversation_id=conversation_id,
        action=Action.CONFIRM,
        reply_source=ReplySource.MODEL,
        status=TurnStatus.PENDING,
        created_at=T0 - timedelta(seconds=5),
    )
    store.conversations.commit_turn(TurnCommit(before, DialogueState(slots={}), pending))
    outcome = ScreenOutcome(
        screens_fired=(),
        fallback_used=fallback,
        reply_screen=ReplyScreen.HELD if fallback else ReplyScreen.NOT_FLAGGED,
        human_review=HumanReview.PENDING,
        final_reply="A staff member will check this." if fallback else DRAFT.text,
        draft=DRAFT,
    )
    assert store.conversations.record_screened_reply(conversation_id, 1, outcome, T0)
    return conversation_id


def decide(
    store: MemoryDeskStore,
    conversation_id: UUID,
    staff: StaffMember,
    now: datetime,
    review: HumanReview,
    reason: str | None = None,
) -> None:
    turn = store.queued_turn(conversation_id, 1, Queue.REVIEW)
    store.decide(Decision(turn, review, reason, reply_kept=True), staff, now)


@pytest.fixture
def store() -> MemoryDeskStore:
    return MemoryDeskStore()


# --- claims -----------------------------------------------------------------------------------------------


def test_a_claim_is_its_holders_until_its_lifetime_to_the_millisecond(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = handoff(store, pack)
    now = T0 + timedelta(microseconds=123_456)
    until = store.claim(conversation_id, 1, Queue.HANDOFF, ANA, now, CLAIM)
    assert until == T0 + CLAIM + timedelta(milliseconds=123) == claim_until(now, CLAIM)
    item = store.queued_turn(conversation_id, 1, Queue.HANDOFF)
    assert (item.claimed_by, item.claimed_by_name, item.claim_expires_at) == ("sub-ana", "ana", until)


def test_of_two_claimants_the_second_meets_the_firsts_live_claim(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = handoff(store, pack)
    store.claim(conversation_id, 1, Queue.HANDOFF, ANA, T0, CLAIM)
    with pytest.raises(ClaimedByOther):
        store.claim(conversation_id, 1, Queue.HANDOFF, BO, T0 + CLAIM - timedelta(milliseconds=1), CLAIM)
    assert store.queued_turn(conversation_id, 1, Queue.HANDOFF).claimed_by == "sub-ana"


def test_a_claim_expires_at_its_expiry_and_another_may_take_it(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = handoff(store, pack)
    until = store.claim(conversation_id, 1, Queue.HANDOFF, ANA, T0, CLAIM)
    assert store.claim(conversation_id, 1, Queue.HANDOFF, BO, until, CLAIM) == until + CLAIM
    item = store.queued_turn(conversation_id, 1, Queue.HANDOFF)
    assert (item.claimed_by, item.claimed_by_name) == ("sub-bo", None)


def test_the_holder_renews_their_claim(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = handoff(store, pack)
    store.claim(conversation_id, 1, Queue.HANDOFF, ANA, T0, CLAIM)
    later = T0 + timedelta(minutes=5)
    assert store.claim(conversation_id, 1, Queue.HANDOFF, ANA, later, CLAIM) == later + CLAIM


def test_nothing_left_to_do_or_another_queue_refuses_a_claim(store: MemoryDeskStore, pack: DomainPack) -> None:
    decided_one, closed_one = review(store, pack), handoff(store, pack)
    store.claim(decided_one, 1, Queue.REVIEW, ANA, T0, CLAIM)
    decide(store, decided_one, ANA, T0, HumanReview.APPROVED)
    store.claim(closed_one, 1, Queue.HANDOFF, ANA, T0, CLAIM)
    store.close(closed_one, 1, ANA, T0)
    with pytest.raises(AlreadyDecided):
        store.claim(decided_one, 1, Queue.REVIEW, BO, T0, CLAIM)
    with pytest.raises(HandoffClosed):
        store.claim(closed_one, 1, Queue.HANDOFF, BO, T0, CLAIM)
    with pytest.raises(NotInQueue):
        store.claim(closed_one, 1, Queue.REVIEW, BO, T0, CLAIM)
    with pytest.raises(NotInQueue):
        store.claim(uuid4(), 1, Queue.HANDOFF, BO, T0, CLAIM)


# --- release ---------------------------------------------------------------------------------------------


def test_only_the_holder_releases_a_claim_expired_or_not(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = handoff(store, pack)
    until = store.claim(conversation_id, 1, Queue.HANDOFF, ANA, T0, CLAIM)
    with pytest.raises(ClaimedByOther):
        store.release(conversation_id, 1, Queue.HANDOFF, BO, T0)
    store.release(conversation_id, 1, Queue.HANDOFF, ANA, until + timedelta(hours=1))
    item = store.queued_turn(conversation_id, 1, Queue.HANDOFF)
    assert (item.claimed_by, item.claimed_by_name, item.claim_expires_at) == (None, None, None)
    with pytest.raises(ClaimRequired):
        store.release(conversation_id, 1, Queue.HANDOFF, ANA, until)


# --- decisions -------------------------------------------------------------------------------------------


def test_a_decision_needs_a_live_claim_of_the_deciders_own(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = review(store, pack)
    with pytest.raises(ClaimRequired):  # unclaimed
        decide(store, conversation_id, ANA, T0, HumanReview.APPROVED)
    until = store.claim(conversation_id, 1, Queue.REVIEW, ANA, T0, CLAIM)
    with pytest.raises(ClaimedByOther):
        decide(store, conversation_id, BO, T0, HumanReview.APPROVED)
    with pytest.raises(ClaimRequired):  # the holder's own claim, expired
        decide(store, conversation_id, ANA, until, HumanReview.APPROVED)
    assert store.queued_turn(conversation_id, 1, Queue.REVIEW).human_review is HumanReview.PENDING
    assert store.audit_trail(conversation_id, 1)[-1]["action"] == "claim"  # a refused act writes no link


def test_a_decision_records_who_what_when_and_why_and_ends_the_claim(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = review(store, pack)
    reason = pack.spec.staff.reason_codes[0]
    store.claim(conversation_id, 1, Queue.REVIEW, ANA, T0, CLAIM)
    decided_at = T0 + timedelta(seconds=30)
    decide(store, conversation_id, ANA, decided_at, HumanReview.REJECTED, reason)
    item = store.queued_turn(conversation_id, 1, Queue.REVIEW)
    assert (item.human_review, item.decided_by, item.decided_at, item.decision_reason) == (
        HumanReview.REJECTED, "sub-ana", decided_at, reason
    )  # fmt: skip
    assert (item.claimed_by, item.claim_expires_at) == (None, None)
    with pytest.raises(AlreadyDecided):
        decide(store, conversation_id, ANA, decided_at, HumanReview.APPROVED, reason)


def test_a_rejection_needs_a_reason_from_the_pack_and_an_approval_takes_none(pack: DomainPack) -> None:
    reason = pack.spec.staff.reason_codes[0]
    with pytest.raises(InvalidDecision):
        decided_review(DecisionRequest(decision="reject"), pack)
    with pytest.raises(InvalidDecision):
        decided_review(DecisionRequest(decision="reject", reason="not-a-reason-code"), pack)
    with pytest.raises(InvalidDecision):
        decided_review(DecisionRequest(decision="approve", reason=reason), pack)
    assert decided_review(DecisionRequest(decision="reject", reason=reason), pack) is HumanReview.REJECTED


def test_a_decision_posts_its_message_to_the_resident(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = review(store, pack, fallback=True)
    store.claim(conversation_id, 1, Queue.REVIEW, ANA, T0, CLAIM)
    turn = store.queued_turn(conversation_id, 1, Queue.REVIEW)
    reply, draft = store.drafts([turn])[conversation_id, 1]
    message = desk.message_for_decision(HumanReview.APPROVED, None, turn, draft)
    posted = store.decide(Decision(turn, HumanReview.APPROVED, message=message, reply_kept=True), ANA, T0)
    assert posted is not None and (posted.after_turn, posted.number, posted.about_turn) == (1, 1, 1)
    assert posted.text == DRAFT.text and reply != DRAFT.text
    assert list(store.conversations.staff_messages_backwards(conversation_id, 1)) == [posted]


# --- replies and closes ------------------------------------------------------------------------------------


def test_a_reply_needs_the_claim_and_is_numbered_after_the_last_turn(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = handoff(store, pack)
    with pytest.raises(ClaimRequired):
        store.reply(conversation_id, 1, ANA, T0, "We will call you.")
    store.claim(conversation_id, 1, Queue.HANDOFF, ANA, T0, CLAIM)
    first = store.reply(conversation_id, 1, ANA, T0, "We will call you.")
    second = store.reply(conversation_id, 1, ANA, T0 + timedelta(seconds=1), "Today, before five.")
    assert [(message.after_turn, message.number, message.about_turn) for message in (first, second)] == [
        (1, 1, 1),
        (1, 2, 1),
    ]
    assert store.conversations.staff_message_count(conversation_id) == 2


def contact_held_by(turn_id: int) -> SealedContact:
    """A contact form, sealed, that the hand-off item `turn_id` holds."""
    return SealedContact(
        sealed=b"sealed",
        channel="phone",
        has_detail=True,
        has_note=False,
        left_at=T0,
        expires_at=T0 + timedelta(days=7),
        turn_id=turn_id,
    )


@pytest.mark.parametrize("open_item", [1, 9])
def test_a_close_ends_the_item_and_clears_the_open_handoff_and_contact_only_where_they_are_its(
    store: MemoryDeskStore, pack: DomainPack, open_item: int
) -> None:
    conversation_id = handoff(store, pack)
    store.conversations.contacts[conversation_id] = contact_held_by(open_item)
    record = store.conversations.load_conversation(conversation_id)
    assert record is not None and record.open_handoff == 1
    record = record.model_copy(update={"open_handoff": open_item})  # 9: a later hand-off is the open one
    store.conversations.records[conversation_id] = record
    store.claim(conversation_id, 1, Queue.HANDOFF, ANA, T0, CLAIM)
    store.close(conversation_id, 1, ANA, T0 + timedelta(minutes=1))
    shut = store.queued_turn(conversation_id, 1, Queue.HANDOFF)
    assert (shut.handoff_status, shut.decided_by, shut.claimed_by) == (HandoffStatus.CLOSED, "sub-ana", None)
    after = store.conversations.load_conversation(conversation_id)
    its_own = open_item == 1
    assert after is not None
    assert (after.open_handoff, after.version) == ((None, record.version + 1) if its_own else (9, record.version))
    assert (store.read_contact(conversation_id, T0) is None) is its_own
    with pytest.raises(HandoffClosed):
        store.close(conversation_id, 1, ANA, T0 + timedelta(minutes=1))


def test_a_look_at_the_contact_form_needs_the_claim(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = handoff(store, pack)
    store.conversations.contacts[conversation_id] = contact_held_by(1)
    with pytest.raises(ClaimRequired):
        store.contact_for_staff(conversation_id, 1, ANA, T0)
    store.claim(conversation_id, 1, Queue.HANDOFF, ANA, T0, CLAIM)
    assert store.contact_for_staff(conversation_id, 1, ANA, T0) is not None
    assert store.contact_for_staff(conversation_id, 1, ANA, T0 + timedelta(days=7)) is None  # expired


# --- corrections of the record -------------------------------------------------------------------------------


def test_a_correction_needs_the_claim_and_writes_the_state_and_a_turn(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = handoff(store, pack)
    slot = pack.frame.slots[0]
    value = slot.values[0]

    def correct(at: datetime, staff: StaffMember) -> TurnRecord:
        make = functools.partial(desk.corrected_record, slot=slot.name, value=value, pack=pack, staff=staff, now=at)
        return store.correct_record(
            RecordCorrection(conversation_id, 1, Queue.HANDOFF, slot.name, value, make), staff, at
        )

    before = store.conversations.load_conversation(conversation_id)
    assert before is not None
    with pytest.raises(ClaimRequired):
        correct(T0, ANA)
    assert store.conversations.load_conversation(conversation_id) == before  # nothing written
    store.claim(conversation_id, 1, Queue.HANDOFF, ANA, T0, CLAIM)
    with pytest.raises(ClaimedByOther):
        correct(T0, BO)
    turn = correct(T0 + timedelta(seconds=1), ANA)
    after = store.conversations.load_conversation(conversation_id)
    assert after is not None and (after.version, after.turn_count) == (before.version + 1, 2)
    assert after.state.slots[slot.name] == value and turn.turn_id == 2 and turn.corrected_by == "sub-ana"
    assert store.conversations.get_turn(conversation_id, 2) == turn


# --- what a refusal means ----------------------------------------------------------------------------------


LIVE = {"claimed_by": "sub-bo", "claim_expires_at": T0 + CLAIM}


@pytest.mark.parametrize(
    ("turn", "queue", "clash"),
    [
        (None, Queue.HANDOFF, NotInQueue),
        (desk_item(Queue.REVIEW), Queue.HANDOFF, NotInQueue),
        (desk_item(Queue.REVIEW, human_review=HumanReview.APPROVED, **LIVE), Queue.REVIEW, AlreadyDecided),
        (desk_item(Queue.HANDOFF, handoff_status=HandoffStatus.CLOSED, **LIVE), Queue.HANDOFF, HandoffClosed),
        (desk_item(Queue.HANDOFF, **LIVE), Queue.HANDOFF, ClaimedByOther),
        (desk_item(Queue.HANDOFF, claimed_by="sub-bo", claim_expires_at=T0), Queue.HANDOFF, ClaimRequired),
        (desk_item(Queue.HANDOFF, claimed_by="sub-ana", claim_expires_at=T0), Queue.HANDOFF, ClaimRequired),
        (desk_item(Queue.REVIEW), Queue.REVIEW, ClaimRequired),
    ],
)
def test_a_refused_write_means_the_clash_the_item_shows(turn: TurnRecord | None, queue: Queue, clash: type) -> None:
    assert type(refusal(turn, queue, ANA, T0)) is clash


# --- what the counters add -------------------------------------------------------------------------------------


def test_a_decision_adds_its_counters_to_total_and_to_its_utc_day(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = review(store, pack)
    late_evening = datetime(2026, 12, 1, 22, 30, tzinfo=timezone(timedelta(hours=-5)))  # 03:30 UTC on the 2nd
    store.claim(conversation_id, 1, Queue.REVIEW, ANA, late_evening, CLAIM)
    turn = store.queued_turn(conversation_id, 1, Queue.REVIEW)
    decide(store, conversation_id, ANA, late_evening, HumanReview.APPROVED)
    counters = store.desk_counters()
    expected = decision_counters(turn, HumanReview.APPROVED, late_evening)
    assert str(HumanReview.APPROVED) in expected and desk.SHOWN_AS_DRAFTED in expected
    assert counters.total == dict.fromkeys(expected, 1)
    assert counters.days == [(date(2026, 12, 2), dict.fromkeys(expected, 1))]
    assert (counters.pending_reviews, counters.open_handoffs) == (0, 0)


def test_a_close_adds_one_to_closed_in_total_only(store: MemoryDeskStore, pack: DomainPack) -> None:
    conversation_id = handoff(store, pack)
    assert store.desk_counters().open_handoffs == 1
    store.claim(conversation_id, 1, Queue.HANDOFF, ANA, T0, CLAIM)
    store.close(conversation_id, 1, ANA, T0)
    counters = store.desk_counters()
    assert (counters.total, counters.days, counters.open_handoffs) == ({CLOSED: 1}, [], 0)


# --- what the audit records -------------------------------------------------------------------------------------


def test_the_audit_records_who_did_what_and_when_in_one_chain_never_text(
    store: MemoryDeskStore, pack: DomainPack
) -> None:
    conversation_id = review(store, pack, fallback=True)
    reason = pack.spec.staff.reason_codes[0]
    correction = "Classes meet on Sundays, not Saturdays."
    store.claim(conversation_id, 1, Queue.REVIEW, ANA, T0, CLAIM)
    store.release(conversation_id, 1, Queue.REVIEW, ANA, T0 + timedelta(seconds=1))
    store.claim(conversation_id, 1, Queue.REVIEW, BO, T0 + timedelta(seconds=2), CLAIM)
    turn = store.queued_turn(conversation_id, 1, Queue.REVIEW)
    decided_at = T0 + timedelta(seconds=3)
    store.decide(Decision(turn, HumanReview.CORRECTED, reason, correction, reply_kept=True), BO, decided_at)
    slot = pack.frame.slots[0]
    value = slot.values[0]
    with pytest.raises(AlreadyDecided):  # refused: nothing left to do, and no link written
        store.claim(conversation_id, 1, Queue.REVIEW, BO, decided_at, CLAIM)
    links = store.audit_trail(conversation_id, 1)
    assert [(link["action"], link["staff"], link["outcome"], link["reason"]) for link in links] == [
        ("claim", "sub-ana", None, None),
        ("release", "sub-ana", None, None),
        ("claim", "sub-bo", None, None),
        ("decision", "sub-bo", "corrected", reason),
    ]
    assert [link["at"] for link in links] == [
        (T0 + timedelta(seconds=second)).isoformat(timespec="milliseconds") for second in range(4)
    ]
    assert {link["queue"] for link in links} == {str(Queue.REVIEW)}
    assert not any(correction in str(field) for link in links for field in link.values())
    assert audit_chain.verify_chain(links, now=T0.timestamp()) == []
    # a correction of the record keeps the slot as its reason and the value as its outcome
    other = handoff(store, pack)
    store.claim(other, 1, Queue.HANDOFF, ANA, T0, CLAIM)
    make = functools.partial(desk.corrected_record, slot=slot.name, value=value, pack=pack, staff=ANA, now=T0)
    store.correct_record(RecordCorrection(other, 1, Queue.HANDOFF, slot.name, value, make), ANA, T0)
    last = store.audit_trail(other, 1)[-1]
    assert (last["action"], last["outcome"], last["reason"]) == ("correct_record", value, slot.name)
