"""Which generated replies wait for a person's check (dialogue.human_checks), and the interval the checked
sample gives the screens' miss rate (dialogue.desk.wilson_interval, sample_share, stats_from_counters)."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime
from uuid import uuid4

import pytest

from dialogue import human_checks
from dialogue.actions import Action, HumanReview, ScreenProfile
from dialogue.desk import (
    READABLE_SAMPLE,
    SHOWN_CHECKED,
    SHOWN_REJECTED,
    DeskCounters,
    sample_share,
    stats_from_counters,
    wilson_interval,
)
from dialogue.human_checks import human_review, shown_check_rate, use_draws
from dialogue.pack import DomainPack
from dialogue.realize import RealizedReply, build_realize_job
from dialogue.screens import decide
from dialogue.state import DialogueState

DESK, LESSON = ScreenProfile.DESK, ScreenProfile.LESSON
CLEAN = "Should staff contact you by phone or by email?"
OTHER_CLEAN = "Would you like staff to reach you by phone or by email?"
HELD = "Should staff contact you by phone or by email? Your seat is guaranteed."


def no_draw() -> float:
    raise AssertionError("this reply takes no draw")


class Draws:
    """A fixed sequence of draws, counting how many were taken."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)
        self.taken = 0

    def __call__(self) -> float:
        self.taken += 1
        return self.values.pop(0)


# --- the draw ------------------------------------------------------------------------------------------


def test_the_lesson_checks_every_generated_reply_and_takes_no_draw() -> None:
    for fallback_used in (True, False):
        review = human_review(fallback_used=fallback_used, profile=LESSON, rate=0.10, source=no_draw)
        assert review is HumanReview.PENDING


def test_at_a_desk_a_held_reply_is_always_checked_and_takes_no_draw() -> None:
    assert human_review(fallback_used=True, profile=DESK, rate=0.10, source=no_draw) is HumanReview.PENDING


@pytest.mark.parametrize(
    ("drawn", "review"),
    [(0.0, HumanReview.PENDING), (0.0999, HumanReview.PENDING), (0.10, HumanReview.NOT_DRAWN),
     (0.5, HumanReview.NOT_DRAWN), (0.9999, HumanReview.NOT_DRAWN)],
)  # fmt: skip
def test_at_a_desk_a_shown_reply_is_checked_when_its_draw_falls_below_the_rate(
    drawn: float, review: HumanReview
) -> None:
    draws = Draws(drawn)
    assert human_review(fallback_used=False, profile=DESK, rate=0.10, source=draws) is review
    assert draws.taken == 1


def test_a_rate_of_one_checks_every_shown_reply() -> None:
    draws = Draws(*(i / 100 for i in range(100)))
    assert all(
        human_review(fallback_used=False, profile=DESK, rate=1.0, source=draws) is HumanReview.PENDING
        for _ in range(100)
    )


def test_the_share_drawn_is_the_rate_within_the_binomial_spread() -> None:
    source, replies, rate = random.Random(40).random, 20_000, 0.10
    drawn = sum(
        human_review(fallback_used=False, profile=DESK, rate=rate, source=source) is HumanReview.PENDING
        for _ in range(replies)
    )
    assert abs(drawn - rate * replies) <= 4 * math.sqrt(replies * rate * (1 - rate))


def test_use_draws_installs_a_source_and_puts_the_last_one_back() -> None:
    system = human_checks._installed.source
    assert 0 <= human_checks.draw() < 1
    with use_draws(lambda: 0.25):
        assert human_checks.draw() == 0.25
        with use_draws(lambda: 0.75):
            assert human_checks.draw() == 0.75
        assert human_checks.draw() == 0.25
    assert human_checks._installed.source is system


def test_the_default_source_is_the_systems_so_snapshots_restored_from_one_never_draw_alike() -> None:
    # SnapStart restores one snapshot into many functions: the random module's own generator would be
    # restored with the same state in each, and they would draw the same sequence. SystemRandom keeps none.
    assert isinstance(getattr(human_checks._installed.source, "__self__", None), random.SystemRandom)


def test_the_rate_a_profile_checks_shown_replies_at() -> None:
    assert (shown_check_rate(LESSON, 0.10), shown_check_rate(DESK, 0.10), shown_check_rate(DESK, 0.25)) == (
        1.0, 0.10, 0.25
    )  # fmt: skip


# --- the screen function's verdict -----------------------------------------------------------------------


def realized(pack: DomainPack, text: str) -> RealizedReply:
    slots = {"program": "forklift", "childcare_needed": "unknown", "contact_channel": "unknown"}
    job = build_realize_job(
        conversation_id=uuid4(),
        turn_id=1,
        state=DialogueState.from_slots(pack.frame, slots),
        action=Action.REQUEST_CONTACT,
        pack=pack,
        now=datetime.now(UTC),
    )
    return RealizedReply(job=job, text=text, engine="canned", ended_by_eos=True, hit_token_cap=False)


def test_decide_draws_once_for_a_shown_reply_at_the_pack_rate_and_never_for_a_held_one(pack: DomainPack) -> None:
    assert pack.spec.staff.shown_check_rate == 0.10  # the default: riverton sets none
    draws = Draws(0.05, 0.15)
    assert decide(realized(pack, CLEAN), pack, DESK, draws).human_review is HumanReview.PENDING
    assert decide(realized(pack, CLEAN), pack, DESK, draws).human_review is HumanReview.NOT_DRAWN
    held = decide(realized(pack, HELD), pack, DESK, no_draw)
    assert (held.fallback_used, held.human_review) == (True, HumanReview.PENDING)
    assert decide(realized(pack, CLEAN), pack, LESSON, no_draw).human_review is HumanReview.PENDING
    assert draws.taken == 2


def test_the_draw_depends_on_nothing_a_reply_says(pack: DomainPack) -> None:
    """The source is called with no argument, so the verdict on two different shown replies is the same for
    the same draw: whatever a reply (or the resident) said, its chance of a check is the rate."""
    for drawn in (0.01, 0.5):
        draws = Draws(drawn, drawn)
        verdicts = {decide(realized(pack, text), pack, DESK, draws).human_review for text in (CLEAN, OTHER_CLEAN)}
        assert verdicts == {HumanReview.PENDING if drawn < 0.10 else HumanReview.NOT_DRAWN}
        assert draws.taken == 2
    # and the installed source is the one used when none is passed
    with use_draws(lambda: 0.99):
        assert decide(realized(pack, CLEAN), pack, DESK).human_review is HumanReview.NOT_DRAWN


# --- the interval ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rejected", "checked", "low", "high"),
    [
        (0, 10, 0.0, 0.2775),  # the rule of three's neighbour: none seen is not a rate of 0
        (10, 10, 0.7225, 1.0),
        (1, 2, 0.0945, 0.9055),
        (3, 100, 0.0103, 0.0845),  # Newcombe (1998), method 3
        (81, 263, 0.2553, 0.3662),  # Newcombe (1998), method 3
        (15, 148, 0.0624, 0.1605),  # Newcombe (1998), method 3
    ],
)
def test_the_wilson_interval_matches_published_values(rejected: int, checked: int, low: float, high: float) -> None:
    assert wilson_interval(rejected, checked) == pytest.approx((low, high), abs=1e-4)


def test_the_interval_holds_its_share_and_narrows_as_the_sample_grows() -> None:
    widths = []
    for checked in (10, 40, 160, 640):
        rejected = checked // 10
        low, high = wilson_interval(rejected, checked)
        assert 0 <= low <= rejected / checked <= high <= 1
        widths.append(high - low)
    assert widths == sorted(widths, reverse=True) and widths[-1] < widths[0] / 4


@pytest.mark.parametrize(("rejected", "checked"), [(0, 0), (-1, 10), (11, 10)])
def test_the_interval_needs_a_sample(rejected: int, checked: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(rejected, checked)


def test_a_sample_below_the_readable_size_says_so() -> None:
    empty = sample_share(0, 0)
    assert (empty.share, empty.low, empty.high, empty.readable) == (None, None, None, False)
    small = sample_share(1, READABLE_SAMPLE - 1)
    assert small.share == pytest.approx(1 / 29) and not small.readable
    enough = sample_share(1, READABLE_SAMPLE)
    assert enough.readable and enough.low is not None and enough.high is not None


def test_the_stats_estimate_the_miss_rate_from_the_checked_shown_replies_only() -> None:
    counters = DeskCounters(
        # 40 shown replies checked, 4 rejected; the held ones' decisions count elsewhere
        total={"approved": 50, "rejected": 6, "corrected": 4, SHOWN_CHECKED: 40, SHOWN_REJECTED: 4},
        days=[],
        pending_reviews=7,
        open_handoffs=0,
    )
    stats = stats_from_counters(counters, 0.10)
    missed = stats.screens_missed
    assert (missed.checked, missed.rejected, missed.share, missed.readable) == (40, 4, 0.10, True)
    assert (missed.low, missed.high) == pytest.approx(wilson_interval(4, 40))
    assert (stats.shown_check_rate, stats.readable_sample, stats.reviews["pending"]) == (0.10, READABLE_SAMPLE, 7)
    # counting began without them: no sample, no estimate
    assert stats_from_counters(DeskCounters(total={}, days=[], pending_reviews=0, open_handoffs=0)).screens_missed == (
        sample_share(0, 0)
    )
