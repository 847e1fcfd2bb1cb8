"""The desk profile on a corpus of drafts: bad ones kept from the resident, good ones shown as written.

`data/<desk>/drafts.csv` holds drafts a model wrote (`source` smollm: the offline SmolLM2's own, from
many replays) or could write (`written`), each labelled with its class (`good`, or the kind of bad
draft it is), the state and action it was written for, the inform topic, and `expected` (shown or
held). A bad draft is kept from the resident when the profile shows the fixed fallback instead; a good
one is shown when nothing fires. The figures per class are printed for both profiles (`-s`).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

from dialogue.actions import Action, ScreenProfile
from dialogue.pack import get_pack
from dialogue.screens import screen_reply

DATA = Path(__file__).resolve().parents[2] / "data"
CORPORA = sorted(DATA.glob("*/drafts.csv"))
GOAL = 0.95


def outcomes(corpus: Path, profile: ScreenProfile) -> dict[str, list[bool]]:
    """Per class, whether each draft came out as labelled (bad held, good shown)."""
    pack = get_pack(corpus.parent)
    results: dict[str, list[bool]] = defaultdict(list)
    with corpus.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            state = {slot: row[slot] for slot in pack.frame.slot_names}
            action = Action(row["action"])
            rows = pack.passage_ids_for(action, state[pack.program_slot], row["topic"] or None)
            held = bool(screen_reply(row["text"], action, state, pack, rows, profile).fired)
            results[row["class"]].append(held == (row["expected"] == "held"))
    return results


def table(results: dict[str, list[bool]]) -> str:
    lines = [f"{'class':<18} {'right':>5} {'of':>4}  share"]
    for name in sorted(results):
        right = results[name]
        lines.append(f"{name:<18} {sum(right):>5} {len(right):>4}  {sum(right) / len(right):>5.0%}")
    return "\n".join(lines)


def share(results: dict[str, list[bool]], bad: bool) -> float:
    picked = [right for name, values in results.items() if (name != "good") == bad for right in values]
    return sum(picked) / len(picked)


@pytest.mark.parametrize("corpus", CORPORA, ids=[path.parent.name for path in CORPORA])
def test_the_desk_profile_keeps_bad_drafts_back_and_shows_good_ones(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    desk, lesson = outcomes(corpus, ScreenProfile.DESK), outcomes(corpus, ScreenProfile.LESSON)
    kept, shown = share(desk, bad=True), share(desk, bad=False)
    with capsys.disabled():
        print(f"\n{corpus.parent.name}/drafts.csv, desk profile (bad held {kept:.1%}, good shown {shown:.1%}):")
        print(table(desk))
        print(f"lesson profile: bad held {share(lesson, bad=True):.1%}, good shown {share(lesson, bad=False):.1%}")
    assert kept >= GOAL and shown >= GOAL, table(desk)


@pytest.mark.parametrize("corpus", CORPORA, ids=[path.parent.name for path in CORPORA])
def test_the_corpus_covers_every_class_and_action(corpus: Path) -> None:
    with corpus.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    bad = [row for row in rows if row["class"] != "good"]
    good = [row for row in rows if row["class"] == "good"]
    assert len(bad) >= 60 and len(good) >= 30
    assert {row["expected"] for row in bad} == {"held"} and {row["expected"] for row in good} == {"shown"}
    classes = {row["class"] for row in bad}
    assert classes >= {
        "status_claim", "personal_detail", "unknown_program", "date_word", "addresses_staff", "boilerplate",
        "contact_promise",
    }  # fmt: skip
    generated = {str(action) for action in get_pack(corpus.parent).model_actions}
    assert {row["action"] for row in good} == generated
    assert any(row["source"] == "smollm" for row in rows), "some drafts are the offline model's own"
