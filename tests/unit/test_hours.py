"""The desk's hours (dialogue.hours, the pack's [hours]): when a person next answers."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dialogue.hours import is_open, next_opening
from dialogue.pack.schema import DeskHours

WEEKDAYS_9_TO_5 = DeskHours.model_validate(
    {
        "time_zone": "Europe/London",
        "closed_text": "Closed now; a person answers from {next_opening}.",
        "open": {day: ["09:00", "17:00"] for day in ("monday", "tuesday", "wednesday", "thursday", "friday")},
    }
)


@pytest.mark.parametrize(
    ("moment", "opening"),
    [
        ("2026-12-05T16:15:00+00:00", "2026-12-07T09:00:00+00:00"),  # Saturday afternoon: Monday
        ("2026-12-07T08:59:00+00:00", "2026-12-07T09:00:00+00:00"),  # Monday before nine: at nine
        ("2026-12-07T09:00:00+00:00", None),  # open at nine
        ("2026-12-07T16:59:00+00:00", None),
        ("2026-12-07T17:00:00+00:00", "2026-12-08T09:00:00+00:00"),  # closed at five: tomorrow
        ("2026-12-11T17:30:00+00:00", "2026-12-14T09:00:00+00:00"),  # Friday evening: Monday
        ("2026-03-27T18:00:00+00:00", "2026-03-30T08:00:00+00:00"),  # over the clocks going forward: 9 BST
        ("2026-06-01T08:30:00+00:00", None),  # 9:30 in London in summer
    ],
)
def test_the_next_opening_in_the_desks_own_time_zone(moment: str, opening: str | None) -> None:
    at = datetime.fromisoformat(moment)
    expected = datetime.fromisoformat(opening) if opening else None
    assert next_opening(WEEKDAYS_9_TO_5, at) == expected
    assert is_open(WEEKDAYS_9_TO_5, at) is (expected is None)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"time_zone": "Mars/Olympus"}, "time zone"),
        ({"open": {"monday": ["17:00", "09:00"]}}, "open before it closes"),
        ({"open": {"monday": ["9am", "5pm"]}}, "pattern"),
        ({"closed_text": "Closed now."}, "{next_opening}"),
        ({"closed_text": "Closed until {opening}."}, "{next_opening}"),
    ],
)
def test_hours_that_cannot_be_read_are_refused_at_load(change: dict[str, object], problem: str) -> None:
    data = WEEKDAYS_9_TO_5.model_dump() | change
    with pytest.raises(ValueError, match=problem.replace("{", r"\{").replace("}", r"\}")):
        DeskHours.model_validate(data)


def test_a_naive_moment_is_read_as_utc() -> None:
    assert next_opening(WEEKDAYS_9_TO_5, datetime(2026, 12, 5, 16, 15)) == datetime(2026, 12, 7, 9, tzinfo=UTC)
