"""Container health: `python -m realizer.healthcheck` exits 0 while the worker's heartbeat file is fresh.

The worker touches REALIZER_HEARTBEAT_FILE (default /tmp/realizer-heartbeat) after every cycle that
went well: a receive, and for a batch the engine, the sends and the deletes. The check fails when the
file is missing or older than REALIZER_HEARTBEAT_MAX_AGE_SECONDS (default 120, more than one long poll
plus one batch). It imports nothing but the standard library, so it runs in well under a second.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

DEFAULT_HEARTBEAT_FILE = "/tmp/realizer-heartbeat"
DEFAULT_MAX_AGE_SECONDS = 120.0


def heartbeat_age(path: Path, now: float | None = None) -> float | None:
    """Seconds since the heartbeat file was last touched, or None when there is none."""
    try:
        modified = path.stat().st_mtime
    except OSError:
        return None
    return (time.time() if now is None else now) - modified


def main() -> int:
    path = Path(os.environ.get("REALIZER_HEARTBEAT_FILE") or DEFAULT_HEARTBEAT_FILE)
    max_age = float(os.environ.get("REALIZER_HEARTBEAT_MAX_AGE_SECONDS") or DEFAULT_MAX_AGE_SECONDS)
    age = heartbeat_age(path)
    if age is None:
        print(f"unhealthy: no heartbeat at {path}", file=sys.stderr)
        return 1
    if age > max_age:
        print(f"unhealthy: last heartbeat {age:.0f} s ago (limit {max_age:.0f} s)", file=sys.stderr)
        return 1
    print(f"healthy: last heartbeat {age:.0f} s ago")
    return 0


if __name__ == "__main__":
    sys.exit(main())
