"""The one clock the code reads.

Every handler takes the time from `now()`, never from `datetime.now` itself, so a simulation can move
time forward (a reply deadline falls due, a claim expires, a month passes) without sleeping: the local
stack installs its own source with `use_clock` (devstack.stack.QueueClock drives this clock and moto's
SQS clock together).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

Source = Callable[[], datetime]


def system_time() -> datetime:
    return datetime.now(UTC)


_source: Source = system_time


def now() -> datetime:
    """The current time, in UTC, from the installed source (the system's unless a simulation set one)."""
    return _source()


@contextlib.contextmanager
def use_clock(source: Source) -> Iterator[None]:
    """Read the time from `source` inside the block; the previous source is back afterwards."""
    global _source
    previous, _source = _source, source
    try:
        yield
    finally:
        _source = previous
