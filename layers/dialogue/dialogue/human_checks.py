"""Which generated replies wait for a person's check (invariant 3).

The lesson profile checks every generated reply, as the seed does: each one's human check is pending.
At a desk (the desk profile of the screens), a reply the resident was shown the fallback for (a screen
held it, or the model hit its token cap or never ended) is always checked; a reply the resident saw as
drafted is drawn for a check at the desk's rate (`[staff] shown_check_rate`), uniformly at random, one
draw per reply, so the screens' miss rate stays measured (`dialogue.desk.screens_missed`) without every
routine reply waiting for a person. A reply not drawn is "not drawn" and never enters the review queue.

The draw reads the random source alone: never the reply, its slots or anything a resident wrote. The
source is the operating system's (`random.SystemRandom`, which reads os.urandom on every draw, so
functions restored from one SnapStart snapshot never draw alike); a test or a simulation installs its
own with `use_draws`.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable

from dialogue.actions import HumanReview, ScreenProfile
from dialogue.clock import Installed

Draw = Callable[[], float]
"""A uniform draw from [0, 1)."""

_installed: Installed[Draw] = Installed(random.SystemRandom().random)


def draw() -> float:
    """One uniform draw from [0, 1), from the installed source (the system's unless a test set one)."""
    return _installed.source()


def use_draws(source: Draw) -> contextlib.AbstractContextManager[None]:
    """Draw from `source` inside the block; the previous source is back afterwards."""
    return _installed.use(source)


def shown_check_rate(profile: ScreenProfile, rate: float) -> float:
    """The chance a shown reply is checked under `profile`: the desk's `rate`, or every one in the lesson."""
    return 1.0 if profile is ScreenProfile.LESSON else rate


def human_review(
    *, fallback_used: bool, profile: ScreenProfile, rate: float, source: Draw | None = None
) -> HumanReview:
    """A screened reply's human check: pending where the lesson profile ran or the resident was shown the
    fallback; else pending when a draw falls below `rate` (the desk's share of shown replies checked), and
    not drawn otherwise. Only a shown reply at a desk takes a draw."""
    if profile is ScreenProfile.LESSON or fallback_used:
        return HumanReview.PENDING
    drawn = (source or draw)() < rate
    return HumanReview.PENDING if drawn else HumanReview.NOT_DRAWN
