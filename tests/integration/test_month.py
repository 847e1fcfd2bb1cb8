"""A desk's month, at the small scale `make slow` runs (`make month` runs the 30 days, then this): residents every
day, staff on weekdays, a realizer outage, a dispatch failure past the stream's hour and a pack change,
on a clock the code takes. Every check the simulation makes holds, and the faults it plans happened."""

from __future__ import annotations

import pytest

from devstack.month import MonthPlan, simulate_month


@pytest.mark.slow  # ~2 minutes on two cores: make slow and make month run it, make test leaves it out
def test_a_small_month_with_every_fault_leaves_every_check_holding() -> None:
    report = simulate_month(MonthPlan.small())
    assert report.ok, report.render()
    assert [check.name for check in report.checks] == [
        "every turn is final",
        "every chat shows every reply and staff message",
        "each console tab lists every open item on its first page",
        "the stats equal the decisions",
        "the review queue holds every held reply and the shown replies drawn for a check",
        "no draft is gone before its decision",
        "the audit verifies",
        "every request a resident or staff member made was answered",
    ]
    figures = report.figures
    # The faults happened, so the checks held through them, not around them.
    assert figures["deadline fallbacks"] > 0, "the realizer outage left replies to their deadlines"
    assert figures["stream records given up (failure queue)"] > 0, "the dispatch failure outlived the stream's hour"
    assert figures["failure queue messages cleared"] > 0
    assert figures["stuck turns finalized by the sweeper"] > 0, "no deadline was ever sent for those turns"
    assert figures["stored values unreadable after the pack change"] > 0
    # And the month's ordinary work: replies worded and screened, decisions, TTL, an audit.
    assert figures["replies screened"] > 0 and figures["reviews decided"] > 0 and figures["hand-offs closed"] > 0
    assert figures["items expired by TTL"] > 0 and figures["audit links"] > 0
