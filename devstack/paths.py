"""Puts the Lambda code, the layer and the realizer on sys.path, as Lambda and the image do."""

from __future__ import annotations

import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
CODE_PATHS = (
    PROJECT_ROOT / "layers" / "dialogue",
    PROJECT_ROOT / "functions" / "turn_api",
    PROJECT_ROOT / "functions" / "screen_reply",
    PROJECT_ROOT / "functions" / "dispatch_turn",
    PROJECT_ROOT / "realizer_container",
)


def add_project_paths() -> None:
    for path in reversed(CODE_PATHS):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
