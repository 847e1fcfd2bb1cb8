"""The staff desk's rules as pure logic: decisions, who counts as staff, and the desk's figures."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta
from uuid import uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from dialogue.actions import Action, HumanReview, Queue, ReplyScreen, ReplySource, Screen, TurnStatus
from dialogue.desk import (
    CLOSED,
    WAIT_BUCKETS,
    DayOfDecisions,
    DecisionRequest,
    DeskCounters,
    DeskStats,
    StaffMember,
    bucket_percentile,
    checked_staff_text,
    claim_view,
    claimed_groups,
    decided_review,
    decision_counters,
    message_for_decision,
    percentile,
    staff_member,
    stats_from_counters,
    wait_counter,
)
from dialogue.errors import (
    CorrectionRequired,
    InvalidDecision,
    NoDraftToSend,
    NotSignedIn,
    NotStaff,
    StaffTextTooLong,
)
from dialogue.pack import DomainPack
from dialogue.records import Draft, TurnRecord

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def reviewed(
    review: HumanReview, *, held: bool = False, fired: tuple[Screen, ...] = (), waited_s: float | None = None
) -> TurnRecord:
    """A review-queue turn queued at T0, decided `waited_s` later (if decided)."""
    return TurnRecord(
        conversation_id=uuid4(),
        turn_id=1,
        intent="program_interest",
        injection_screen=False,
        privileged_request=False,
        slots={},
        action=Action.CONFIRM,
        reply_source=ReplySource.MODEL,
        status=TurnStatus.FINAL,
        screens_fired=fired,
        reply_screen=ReplyScreen.HELD if held else ReplyScreen.NOT_FLAGGED,
        human_review=review,
        fallback_used=held,
        created_at=T0 - timedelta(seconds=1),
        queue=Queue.REVIEW,
        queued_at=T0,
        decided_at=T0 + timedelta(seconds=waited_s) if waited_s is not None else None,
    )


# --- decisions -------------------------------------------------------------------------------------------


def test_a_decision_keeps_the_fallbacks_promise() -> None:
    """The resident shown the fallback gets the approved draft or a correction; one shown the reply, nothing more."""
    draft = Draft(text="Classes meet on Saturdays.", ended_by_eos=True, hit_token_cap=False)
    shown, fell_back = reviewed(HumanReview.PENDING), reviewed(HumanReview.PENDING, held=True)
    assert message_for_decision(HumanReview.APPROVED, None, shown, draft) is None
    assert message_for_decision(HumanReview.REJECTED, None, shown, draft) is None
    assert message_for_decision(HumanReview.CORRECTED, "Better.", shown, draft) == "Better."
    assert message_for_decision(HumanReview.APPROVED, None, fell_back, draft) == "Classes meet on Saturdays."
    assert message_for_decision(HumanReview.CORRECTED, "Better.", fell_back, draft) == "Better."
    with pytest.raises(CorrectionRequired):
        message_for_decision(HumanReview.REJECTED, None, fell_back, draft)
    for missing in (None, draft.model_copy(update={"text": "  "})):
        with pytest.raises(NoDraftToSend):
            message_for_decision(HumanReview.APPROVED, None, fell_back, missing)


def test_a_decision_is_checked_against_the_desks_reason_codes(pack: DomainPack) -> None:
    assert decided_review(DecisionRequest(decision="approve"), pack) is HumanReview.APPROVED
    assert decided_review(DecisionRequest(decision="reject", reason="wrong_fact"), pack) is HumanReview.REJECTED
    corrected = DecisionRequest(decision="reject", reason="promise", correction="A better answer.")
    assert decided_review(corrected, pack) is HumanReview.CORRECTED
    for bad in (
        DecisionRequest(decision="reject"),
        DecisionRequest(decision="reject", reason="made_up"),
        DecisionRequest(decision="approve", reason="other"),
        DecisionRequest(decision="approve", correction="Text."),
    ):
        with pytest.raises(InvalidDecision):
            decided_review(bad, pack)


def test_staff_text_has_the_desks_limit(pack: DomainPack) -> None:
    limit = pack.spec.staff.max_message_chars
    assert checked_staff_text("x" * limit, pack) == "x" * limit
    with pytest.raises(StaffTextTooLong):
        checked_staff_text("x" * (limit + 1), pack)


# --- who is staff ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claim", "groups"),
    [
        ("[desk-staff]", {"desk-staff"}),
        ("[desk-staff admins]", {"desk-staff", "admins"}),
        ("desk-staff,admins", {"desk-staff", "admins"}),
        (["desk-staff"], {"desk-staff"}),
        ("[]", set()),
        (None, set()),
    ],
)
def test_group_claims_as_the_gateway_passes_them(claim: object, groups: set[str]) -> None:
    claims = {} if claim is None else {"cognito:groups": claim}
    assert claimed_groups(claims) == groups


def test_only_a_subject_in_the_staff_group_is_staff() -> None:
    member = staff_member({"sub": "abc", "cognito:groups": "[desk-staff]", "username": "ana"}, "desk-staff")
    assert member == StaffMember(subject="abc", name="ana")
    with pytest.raises(NotStaff):
        staff_member({"sub": "abc", "cognito:groups": "[desk-staffers]"}, "desk-staff")
    with pytest.raises(NotStaff):
        staff_member({"sub": "abc"}, "desk-staff")
    for claims in (None, {}, {"cognito:groups": "[desk-staff]"}, {"sub": ""}, {"sub": "x" * 129}):
        with pytest.raises(NotSignedIn):
            staff_member(claims, "desk-staff")


def test_a_claim_shows_whose_it_is_only_to_its_holder() -> None:
    turn = reviewed(HumanReview.PENDING).model_copy(
        update={"claimed_by": "ana", "claim_expires_at": T0 + timedelta(minutes=10)}
    )
    mine = claim_view(turn, StaffMember(subject="ana"), T0)
    theirs = claim_view(turn, StaffMember(subject="bo"), T0)
    assert mine is not None and mine.mine and theirs is not None and not theirs.mine
    assert "ana" not in theirs.model_dump_json()
    assert claim_view(turn, StaffMember(subject="bo"), T0 + timedelta(minutes=10)) is None  # expired


# --- figures ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "fraction", "expected"),
    [([5.0], 0.9, 5.0), ([float(n) for n in range(1, 11)], 0.9, 9.0), ([10.0, 20, 30, 100], 0.9, 100),
     ([3.0, 1.0, 2.0], 0.5, 2.0)],
)  # fmt: skip
def test_percentile_is_the_nearest_rank(values: list[float], fraction: float, expected: float) -> None:
    assert percentile(values, fraction) == expected


def figures(decided: list[TurnRecord], *, pending: int = 0, open_handoffs: int = 0, closed: int = 0) -> DeskStats:
    """The figures from the counters that the decisions on `decided` (each as its turn records it) add to,
    as the store adds to them: in TOTAL and in the decision's day."""
    total: Counter[str] = Counter({CLOSED: closed})
    days: dict[date, Counter[str]] = {}
    for turn in decided:
        assert turn.decided_at is not None
        names = decision_counters(turn, turn.human_review, turn.decided_at)
        total.update(names)
        days.setdefault(turn.decided_at.date(), Counter()).update(names)
    counters = DeskCounters(
        total=dict(total),
        days=[(day, dict(days[day])) for day in sorted(days)],
        pending_reviews=pending,
        open_handoffs=open_handoffs,
    )
    return stats_from_counters(counters)


def test_the_desks_figures_on_known_decisions() -> None:
    decided = [
        reviewed(HumanReview.CORRECTED, held=True, fired=(Screen.PROMISE_WORDS,), waited_s=10),
        reviewed(HumanReview.APPROVED, waited_s=20),
        reviewed(HumanReview.APPROVED, held=True, fired=(Screen.NUMERALS,), waited_s=30),
        reviewed(HumanReview.REJECTED, waited_s=100),
    ]
    stats = figures(decided, pending=1, open_handoffs=1, closed=1)
    assert stats.reviews == {"pending": 1, "approved": 2, "rejected": 1, "corrected": 1}
    assert stats.handoffs == {"open": 1, "closed": 1}
    # The median (20 s, nearest rank) and the p90 (100 s) as the bounds of their buckets (up to 30 s, 120 s)
    assert (stats.decided, stats.seconds_to_decision_median, stats.seconds_to_decision_p90) == (4, 30.0, 120.0)
    assert stats.shown_as_drafted_share == pytest.approx(2 / 4)  # of the decided; the held two were replaced
    assert stats.decisions_per_day == [DayOfDecisions(day=T0.date(), approved=2, rejected=1, corrected=1)]
    overall = stats.screens_overall
    assert (overall.held, overall.held_rejected_share, overall.passed, overall.passed_rejected_share) == (
        2,
        0.5,
        2,
        0.5,
    )
    promise = stats.screens["promise_words"]
    assert (promise.held, promise.held_rejected_share, promise.passed, promise.passed_rejected_share) == (
        1, 1.0, 3, 1 / 3
    )  # fmt: skip
    numerals = stats.screens["numerals"]
    assert (numerals.held, numerals.held_rejected_share) == (1, 0.0)


def test_figures_with_nothing_decided_say_so() -> None:
    stats = figures([], pending=1)
    assert (stats.decided, stats.seconds_to_decision_median, stats.seconds_to_decision_p90) == (0, None, None)
    assert stats.screens_overall.held_rejected_share is None and stats.screens_overall.passed == 0
    assert stats.shown_as_drafted_share is None and stats.decisions_per_day == []
    assert stats.reviews["pending"] == 1


def test_waits_fall_in_fixed_buckets_bounds_included() -> None:
    assert [wait_counter(seconds) for seconds in (0, 10, 10.001, 30, 2_592_000)] == [
        "wait_le_10", "wait_le_10", "wait_le_30", "wait_le_30", "wait_le_2592000"
    ]  # fmt: skip
    assert wait_counter(2_592_000.5) == "wait_over_2592000"
    assert bucket_percentile({"wait_over_2592000": 3}, 0.5) == WAIT_BUCKETS[-1]  # longer: the last bound
    assert bucket_percentile({}, 0.5) is None


@given(st.lists(st.floats(min_value=0, max_value=4e6, allow_nan=False), min_size=1, max_size=60))
def test_a_bucket_percentile_is_the_bound_of_the_exact_ones_bucket(waits: list[float]) -> None:
    histogram = Counter(wait_counter(wait) for wait in waits)
    for fraction in (0.5, 0.9):
        exact = percentile(waits, fraction)
        bound = min((b for b in WAIT_BUCKETS if exact <= b), default=WAIT_BUCKETS[-1])
        assert bucket_percentile(histogram, fraction) == bound


def test_a_decision_counts_on_its_own_day() -> None:
    late = reviewed(HumanReview.APPROVED, waited_s=15 * 3600)  # queued at 09:00, decided the next day
    stats = figures([late, reviewed(HumanReview.REJECTED, waited_s=60)])
    assert stats.decisions_per_day == [
        DayOfDecisions(day=T0.date(), rejected=1),
        DayOfDecisions(day=T0.date() + timedelta(days=1), approved=1),
    ]
    assert stats.seconds_to_decision_p90 == 86400  # 15 h: the bucket up to a day


def test_the_pack_refuses_repeated_reason_codes(pack: DomainPack) -> None:
    from dialogue.pack.schema import StaffDesk

    assert pack.spec.staff.reason_codes[0] == "wrong_fact"
    with pytest.raises(ValidationError):
        StaffDesk(reason_codes=("other", "other"), max_message_chars=100)
    with pytest.raises(ValidationError):
        StaffDesk(reason_codes=(), max_message_chars=100)
