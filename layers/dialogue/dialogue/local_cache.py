"""Where local runs (devstack, the CPU engines) keep what they build between runs: one rule for every cache.

A cache's variable names its folder, or says `off` to keep nothing; unset, the folder is under
~/.cache/enrollment-desk (or $XDG_CACHE_HOME/enrollment-desk). Lambda sets none of them.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_home() -> Path:
    """~/.cache/enrollment-desk, or enrollment-desk under XDG_CACHE_HOME when that is set."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "enrollment-desk"


def cache_folder(variable: str) -> Path | None:
    """The folder the environment variable `variable` names; cache_home() when it is unset or empty;
    None when it says `off` (keep nothing)."""
    setting = os.environ.get(variable, "").strip()
    if setting.lower() == "off":
        return None
    return Path(setting) if setting else cache_home()
