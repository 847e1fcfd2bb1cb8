"""The screens' one table: the Screen enum holds each screen's name, its label and the profile that adds it;
the profiles' screen lists and the staff API's `/staff/desk` are read from it."""

from __future__ import annotations

from dialogue.actions import CONTENT_SCREENS, DESK_SCREENS, LESSON_SCREENS, Screen, ScreenProfile
from dialogue.desk import screen_labels


def test_every_screen_has_a_label_of_its_own() -> None:
    labels = [screen.label for screen in Screen]
    assert all(label.strip() for label in labels)
    assert len(set(labels)) == len(labels)


def test_the_profiles_are_read_from_the_table() -> None:
    assert len(LESSON_SCREENS) == 6 and len(DESK_SCREENS) == 14 and CONTENT_SCREENS == DESK_SCREENS
    assert ScreenProfile.LESSON.screens == tuple(s for s in Screen if s.profile is ScreenProfile.LESSON)
    assert set(ScreenProfile.DESK.screens) == {s for s in Screen if s.profile is not None}
    # the generation checks and the deadline: every reply, whatever the profile
    assert {s for s in Screen if s.profile is None} == {
        Screen.OVER_BUDGET, Screen.FAILED, Screen.TOKEN_CAP, Screen.NO_EOS, Screen.DEADLINE
    }  # fmt: skip


def test_the_staff_api_serves_the_table() -> None:
    served = [label.model_dump(mode="json") for label in screen_labels()]
    assert served == [
        {"name": s.value, "label": s.label, "profile": s.profile.value if s.profile else None} for s in Screen
    ]
    assert Screen("date_words") is Screen.DATE_WORDS  # a look-up by name, as stored in a TURN item
