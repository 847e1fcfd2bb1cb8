"""The realizer's heartbeat while its model loads (realizer/loading.py): the health check passes through a
load longer than ECS's start period, and fails once a load runs past its bound.

No model is loaded here. The "engine builders" are fakes: functions that sleep, standing in for a
slow vLLM build, and return a placeholder.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

from realizer import healthcheck
from realizer import loading as loading_module
from realizer.engines import EngineUnavailable
from realizer.loading import DEFAULT_MAX_LOAD_SECONDS, LoadingHeartbeat, max_load_seconds

BEAT = 0.05  # seconds between the fake load's beats: the production 30 s, scaled down


def fake_slow_engine_builder(seconds: float) -> object:
    """A fake engine builder (a test double, not a model): it takes `seconds`, as a slow load would."""
    time.sleep(seconds)
    return object()


def check(path: Path, monkeypatch: pytest.MonkeyPatch, max_age: float) -> int:
    """The container's health check on `path` with an age limit of `max_age` seconds."""
    monkeypatch.setenv("REALIZER_HEARTBEAT_FILE", str(path))
    monkeypatch.setenv("REALIZER_HEARTBEAT_MAX_AGE_SECONDS", str(max_age))
    return healthcheck.main()


def test_a_load_longer_than_the_age_limit_keeps_the_check_passing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake load takes 1.2 s, four times the check's 0.3 s age limit (as a 9-minute load is to the
    120 s limit), and the file stays fresh throughout: the check passes during and right after it."""
    heartbeat = tmp_path / "heartbeat"
    assert check(heartbeat, monkeypatch, max_age=0.3) == 1  # nothing yet
    results: list[int] = []
    with LoadingHeartbeat(heartbeat, interval=BEAT, max_seconds=30) as beating:
        for _ in range(6):
            fake_slow_engine_builder(0.2)
            results.append(check(heartbeat, monkeypatch, max_age=0.3))
    assert results == [0] * 6
    assert beating.beats >= 6 and not beating.expired
    # Stopped with the load: no thread touches the file afterwards.
    beats = beating.beats
    mtime = heartbeat.stat().st_mtime
    time.sleep(3 * BEAT)
    assert (beating.beats, heartbeat.stat().st_mtime) == (beats, mtime)


def test_a_load_past_its_bound_stops_beating_so_the_check_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A hung load: the fake builder takes 1 s, the bound is 0.2 s. The beats stop at the bound, the file
    ages, and the check fails before the load is over; the log says why, with no text but the bound."""
    caplog.set_level(logging.INFO, logger="realizer")
    heartbeat = tmp_path / "heartbeat"
    started = time.time()
    with LoadingHeartbeat(heartbeat, interval=BEAT, max_seconds=0.2) as beating:
        fake_slow_engine_builder(0.6)
        assert beating.expired
        last_beat = heartbeat.stat().st_mtime
        assert last_beat - started <= 0.2 + 2 * BEAT
        assert check(heartbeat, monkeypatch, max_age=0.3) == 1
        fake_slow_engine_builder(0.4)
    (record,) = [r for r in caplog.records if r.getMessage().startswith("model load passed its bound")]
    assert getattr(record, "max_load_seconds", None) == 0.2


def test_the_entry_point_beats_while_it_builds_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m realizer` wraps the engine build in the loading heartbeat, bounded by
    REALIZER_MAX_LOAD_SECONDS: a fake slow builder sees the heartbeat file touched again while it runs."""
    import realizer.__main__ as entry

    heartbeat = tmp_path / "heartbeat"
    seen: list[float] = []

    def fake_build_engine(name: str, **_: object) -> object:
        first = heartbeat.stat().st_mtime  # touched as the load began
        fake_slow_engine_builder(0.25)
        seen.append(heartbeat.stat().st_mtime - first)
        raise EngineUnavailable("fake builder: no engine, so the entry point stops here")

    original = loading_module.LoadingHeartbeat

    def quick(path: str | Path | None, *, max_seconds: float) -> LoadingHeartbeat:
        seen.append(max_seconds)
        return original(path, interval=BEAT, max_seconds=max_seconds)

    monkeypatch.setattr(entry, "build_engine", fake_build_engine)
    monkeypatch.setattr(entry, "LoadingHeartbeat", quick)
    monkeypatch.setenv("REALIZE_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/realize")
    monkeypatch.setenv("SCREEN_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/screen")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("REALIZER_MAX_LOAD_SECONDS", "42")
    status = entry.main(["--engine", "vllm", "--visibility-timeout", "30", "--heartbeat-file", str(heartbeat)])
    assert status == 2
    bound, moved = seen
    assert bound == 42
    assert moved > 0, "the heartbeat file was not touched while the fake builder ran"


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(None, DEFAULT_MAX_LOAD_SECONDS), ("", DEFAULT_MAX_LOAD_SECONDS), ("1200", 1200.0), (600.0, 600.0),
     ("0", DEFAULT_MAX_LOAD_SECONDS), ("-5", DEFAULT_MAX_LOAD_SECONDS), ("soon", DEFAULT_MAX_LOAD_SECONDS),
     ("inf", DEFAULT_MAX_LOAD_SECONDS), ("nan", DEFAULT_MAX_LOAD_SECONDS)],
)  # fmt: skip
def test_the_bound_comes_from_the_environment_or_defaults(value: str | float | None, seconds: float) -> None:
    assert max_load_seconds(value) == seconds


def test_no_heartbeat_file_means_no_thread(tmp_path: Path) -> None:
    with LoadingHeartbeat(None, interval=BEAT, max_seconds=1) as beating:
        fake_slow_engine_builder(2 * BEAT)
    assert beating.beats == 0 and not os.listdir(tmp_path)
    with pytest.raises(ValueError):
        LoadingHeartbeat(tmp_path / "heartbeat", interval=0, max_seconds=1)
