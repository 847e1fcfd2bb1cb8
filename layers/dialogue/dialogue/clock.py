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
from typing import Generic, TypeVar

T = TypeVar("T")
Source = Callable[[], datetime]


class Installed(Generic[T]):
    """A source a module reads (this clock, `human_checks`' draws), which a test or a simulation may
    replace for the length of a block: the previous source is back afterwards."""

    def __init__(self, source: T) -> None:
        self.source = source

    @contextlib.contextmanager
    def use(self, source: T) -> Iterator[None]:
        previous, self.source = self.source, source
        try:
            yield
        finally:
            self.source = previous


def system_time() -> datetime:
    return datetime.now(UTC)


_installed: Installed[Source] = Installed(system_time)


def now() -> datetime:
    """The current time, in UTC, from the installed source (the system's unless a simulation set one)."""
    return _installed.source()


def use_clock(source: Source) -> contextlib.AbstractContextManager[None]:
    """Read the time from `source` inside the block; the previous source is back afterwards."""
    return _installed.use(source)
