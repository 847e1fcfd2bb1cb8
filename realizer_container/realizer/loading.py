"""The heartbeat while the model loads: healthy for a bounded load, unhealthy for a hung one.

The container's health check (`python -m realizer.healthcheck`) passes while the heartbeat file is
younger than REALIZER_HEARTBEAT_MAX_AGE_SECONDS (120 s). The worker touches it after every good cycle,
but only once the engine is built, and ECS gives a container's health check a start period of at most
300 s. A cold vLLM start (weights read from the image, torch.compile with an empty cache, CUDA graph
capture) can take longer than that on a slow or busy instance, and a task killed for it starts the
whole load again: three kills in a row and the deployment circuit breaker fails the deploy.

So `LoadingHeartbeat` touches the file from a background thread every `interval` seconds (30) while the
engine is built, for at most `max_seconds` (REALIZER_MAX_LOAD_SECONDS, default 900). Past that bound it
stops beating: the file goes stale, the health check fails, and ECS replaces a task whose load hung
about `max_seconds` + 120 s (the file's age limit) + 90 s (three failed checks 30 s apart) after it
started. A load that ends first stops the thread, and the worker's own heartbeat takes over.

Why 900 s: on this project's 2-core CPU machine, vLLM builds the tiny Qwen2 test model (the real
151,936-token vocabulary, 2 layers) in 33-38 s eager and 74 s with torch.compile, and transformers
loads SmolLM2-135M in 28 s; the production GPU load of Qwen2.5-1.5B is estimated at 3-5 minutes
(template.yaml's cold start). Three times the top of that estimate leaves a slow instance room, and a
hung load still costs at most about 18 minutes of one GPU.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from realizer.logs import log

DEFAULT_MAX_LOAD_SECONDS = 900.0
DEFAULT_BEAT_SECONDS = 30.0


class LoadingHeartbeat:
    """A context manager: the heartbeat file is touched at entry and then every `interval` seconds
    until exit, or until `max_seconds` have passed since entry (then `expired` is True)."""

    def __init__(
        self,
        path: str | Path | None,
        *,
        interval: float = DEFAULT_BEAT_SECONDS,
        max_seconds: float = DEFAULT_MAX_LOAD_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval <= 0 or max_seconds <= 0:
            raise ValueError("interval and max_seconds must be positive")
        self._path = Path(path) if path else None
        self._interval = interval
        self._max_seconds = max_seconds
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.beats = 0
        self.expired = False

    def __enter__(self) -> LoadingHeartbeat:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        if self._path is None or self._thread is not None:
            return
        self._touch()
        self._thread = threading.Thread(
            target=self._beat, args=(self._clock() + self._max_seconds,), name="loading-heartbeat", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self, deadline: float) -> None:
        while True:
            left = deadline - self._clock()
            if left <= 0:
                self.expired = True
                log.error(
                    "model load passed its bound; the heartbeat stops so the health check fails",
                    extra={"max_load_seconds": self._max_seconds},
                )
                return
            if self._stop.wait(min(self._interval, left)):
                return
            if self._clock() < deadline:
                self._touch()

    def _touch(self) -> None:
        assert self._path is not None
        try:
            self._path.touch()
            self.beats += 1
        except OSError as exc:
            log.warning("heartbeat file not written while loading", extra={"error": type(exc).__name__})


def max_load_seconds(value: str | float | None) -> float:
    """REALIZER_MAX_LOAD_SECONDS as seconds: unset, empty, or not a positive finite number, the default."""
    try:
        seconds = float(value) if value not in (None, "") else DEFAULT_MAX_LOAD_SECONDS
    except ValueError:
        return DEFAULT_MAX_LOAD_SECONDS
    return seconds if 0 < seconds < float("inf") else DEFAULT_MAX_LOAD_SECONDS
