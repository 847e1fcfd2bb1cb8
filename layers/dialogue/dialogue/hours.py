"""When a person answers at the desk: its opening hours, from the pack's `[hours]` (pack.schema.DeskHours).

A turn left to a person (a hand-off, an abstention, a refusal, a contact left) made outside the hours
carries the next opening, so the resident is told when a person will answer (the chat words it with the
pack's `closed_text`, in the desk's locale and time zone). Pure functions of the hours and a moment: the
caller passes the moment (a turn's own time), so a stored turn always reads the same.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from dialogue.pack.schema import WEEKDAYS, DeskHours

__all__ = ["is_open", "next_opening"]


def _window(hours: DeskHours, day: datetime) -> tuple[datetime, datetime] | None:
    """The desk's opening on `day` (a local date, as a datetime in the desk's zone), or None if closed."""
    times = hours.open.get(WEEKDAYS[day.weekday()])
    if times is None:
        return None
    zone = day.tzinfo
    opens, closes = (time.fromisoformat(value) for value in times)
    return (
        datetime.combine(day.date(), opens, tzinfo=zone),
        datetime.combine(day.date(), closes, tzinfo=zone),
    )


def is_open(hours: DeskHours, moment: datetime) -> bool:
    """Whether a person answers at `moment` (any time zone; a naive moment is read as UTC)."""
    local = _local(hours, moment)
    window = _window(hours, local)
    return window is not None and window[0] <= local < window[1]


def next_opening(hours: DeskHours, moment: datetime) -> datetime | None:
    """When the desk next opens after `moment`, in UTC; None while it is open. Looks a week ahead (the
    schema asks for at least one open day)."""
    local = _local(hours, moment)
    for ahead in range(8):
        day = local + timedelta(days=ahead)
        window = _window(hours, day)
        if window is None:
            continue
        opens, closes = window
        if ahead == 0 and opens <= local < closes:
            return None
        if opens > local:
            return opens.astimezone(UTC)
    raise AssertionError("a desk with an open day opens within a week")  # pragma: no cover


def _local(hours: DeskHours, moment: datetime) -> datetime:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(ZoneInfo(hours.time_zone))
