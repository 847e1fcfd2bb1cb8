"""Questions answered from the whole handbook: each desk's own topic test sets, scored per topic.

Every `topic_cases*.csv` of every desk under `data/` is scored: `topic_cases.csv` is the desk's own
set (written with the patterns, at least 80 rows over every topic). The `_heldout` sets were written
blind to the patterns and scored before any tuning on them: Riverton's 75.0% and (after tuning on
the first) 86.7%, the library's 76.5%; the patterns were then improved in general terms, never per
sentence. A row holds:

- `topic`: what the row is about, for the per-topic figures (a handbook topic, `uncovered`,
  `off_topic` or `statement`);
- one column per frame slot it sets before the turn (e.g. `program`): the state the turn meets;
- `text`: the turn;
- `expected_action` and `expected_passage_ids` (`;`-joined): what the policy must choose and the
  rows its prompt must hold (empty for every action but inform).

A row is right when both the action and the rows are. The goal is at least 95% right overall; the
figures per topic are printed (run with `-s`, or see them in the failure message).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from devstack.evaluate import render, score_file
from devstack.pack_check import SHIPPED_TOPIC_CASES, unnamed_rows, untested_groups
from dialogue.pack import DomainPack, get_pack
from dialogue.understanding import understand

DATA = Path(__file__).resolve().parents[2] / "data"
DESKS = sorted(path.parent for path in DATA.glob("*/topic_cases.csv"))
CASE_FILES = sorted(DATA.glob("*/topic_cases*.csv"))
GOAL = 0.95


def score(pack: DomainPack, cases_file: Path) -> dict[str, list[bool]]:
    """Per topic, whether each row came out right (through `devstack eval`'s scoring)."""
    results: dict[str, list[bool]] = defaultdict(list)
    for outcome in score_file(cases_file, pack).outcomes:
        results[outcome.case.group].append(outcome.right)
    return results


@pytest.mark.parametrize("cases", CASE_FILES, ids=[f"{path.parent.name}/{path.stem}" for path in CASE_FILES])
def test_topic_questions_meet_the_goal(cases: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = score_file(cases, get_pack(cases.parent))
    table = render(report)
    with capsys.disabled():
        print(f"\n{table}")
    assert report.share >= GOAL, table


@pytest.mark.parametrize("desk", DESKS, ids=[desk.name for desk in DESKS])
def test_the_set_covers_every_topic(desk: Path) -> None:
    """At least 80 rows; every handbook topic, uncovered topics, off-topic questions and statements."""
    """As devstack check-pack (devstack/pack_check.py), with the floor a desk under data/ must meet."""
    pack = get_pack(desk)
    results = score(pack, desk / "topic_cases.csv")
    assert sum(len(outcomes) for outcomes in results.values()) >= SHIPPED_TOPIC_CASES
    assert untested_groups(pack, set(results)) == []
    assert unnamed_rows(pack) == [], "every handbook row is named by a topic or a fact_rows entry"


def test_the_coverage_checks_find_what_is_missing(pack: DomainPack) -> None:
    groups = {topic.name for topic in pack.spec.topics if topic.covered} | {"uncovered", "off_topic"}
    assert untested_groups(pack, groups) == ["statement"]
    stray = pack.handbook[0].model_copy(update={"passage_id": "H99"})
    assert unnamed_rows(DomainPack(spec=pack.spec, handbook=(*pack.handbook, stray))) == ["H99"]


def test_a_question_on_a_covered_word_still_abstains_when_it_names_an_uncovered_topic(pack: DomainPack) -> None:
    """The seed's C4 turn 1: "fee" names a covered topic, "parking" an uncovered one; the desk abstains."""
    understood = understand("What is the parking fee?", pack)
    assert (understood.route, understood.topic, understood.intent) == ("abstain", "parking", "parking_question")


def test_a_statement_on_a_topic_stays_on_the_enrollment_path(pack: DomainPack) -> None:
    understood = understand("I want the spreadsheet career track.", pack)
    assert (understood.question, understood.topic, understood.route) == (False, None, "enroll")


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("can i bring my son along?", "child_care"),  # the child alone: its weak pattern places it
        ("my son is 16, can he join?", "eligibility"),  # another topic's pattern matches: it wins over the weak one
        ("my son filled in the form for me, what happens next?", "enrollment_process"),
        ("how old do kids need to be for the creche?", "child_care"),  # its own pattern names the child's age
    ],
)
def test_a_topics_weak_pattern_places_a_question_only_where_no_pattern_does(
    pack: DomainPack, text: str, topic: str
) -> None:
    assert understand(text, pack).topic == topic


def test_a_weak_pattern_alone_is_enough_for_a_topic(pack: DomainPack) -> None:
    """A topic whose strong pattern is gone still reads a question by its weak one: the weak pattern is read."""
    topics = [
        t.model_copy(update={"pattern": r"\bnever-matches-anything\b"}) if t.name == "child_care" else t
        for t in pack.spec.topics
    ]
    spec = pack.spec.model_copy(update={"topics": tuple(topics)})
    plain = DomainPack(spec=spec, handbook=pack.handbook)
    assert understand("can i bring my son along?", plain).topic == "child_care"
    weakless = DomainPack(
        spec=spec.model_copy(
            update={"topics": tuple(t.model_copy(update={"weak_pattern": None}) for t in spec.topics)}
        ),
        handbook=pack.handbook,
    )
    assert understand("can i bring my son along?", weakless).topic is None


@pytest.mark.parametrize(
    ("text", "route"),
    [
        (
            "how much is a forklift truck to buy second hand",
            "abstain",
        ),  # a fact no topic holds, in words the desk never uses
        ("which forklift brand is the most reliable", "abstain"),
        ("can i do forklift?", "enroll"),  # asks for the offering
        ("what about forklift then?", "enroll"),  # no word the desk never uses
    ],
)
def test_a_question_for_a_fact_no_topic_holds_asks_for_no_offering(pack: DomainPack, text: str, route: str) -> None:
    assert understand(text, pack).route == route


def test_without_a_fact_pattern_a_question_naming_an_offering_fills_the_frame(pack: DomainPack) -> None:
    rules = pack.spec.understanding
    spec = pack.spec.model_copy(
        update={
            "understanding": rules.model_copy(
                update={"questions": rules.questions.model_copy(update={"fact_pattern": None})}
            )
        }
    )
    plain = DomainPack(spec=spec, handbook=pack.handbook)
    assert understand("how much is a forklift truck to buy second hand", plain).route == "enroll"


@pytest.mark.parametrize(
    ("text", "route", "topic"),
    [
        # The uncovered topic's words come before a question that points back at nothing, or after the question.
        ("I'm on Universal Credit and skint after the rent, so will I have to pay anything at all?", "inform", "fees"),
        ("data support - what time does it finish? last bus is 9.20", "inform", "schedule"),
        # The question points back at the uncovered topic, or names it itself: still not the desk's to answer.
        ("I want to park my car, how much is it?", "abstain", "parking"),
        ("my bus pass expired, is it free?", "abstain", "transport"),
        ("What is the parking fee?", "abstain", "parking"),
    ],
)
def test_an_uncovered_topic_named_outside_the_question_yields_to_the_one_it_asks(
    pack: DomainPack, text: str, route: str, topic: str
) -> None:
    read = understand(text, pack)
    assert (read.route, read.topic) == (route, topic)
