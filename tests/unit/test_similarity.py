"""dialogue.similarity: labelling a turn by its similarity to example utterances.

A fixture of 10 enrollment-desk labels x 8 examples stands for a desk whose author wrote examples
instead of regular expressions. The tests check what the scorer must see through (typos, word order,
case, Unicode disguises), that it abstains where it should (ambiguous or unrelated turns), that it is
deterministic and refuses a bad build clearly, that it needs nothing outside the standard library, and
that paraphrases no example has still get the right label.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from dialogue.similarity import ExampleIndex, Match

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "layers" / "dialogue" / "dialogue" / "similarity.py"

EXAMPLES: dict[str, list[str]] = {
    "hours": [
        "what are your opening hours",
        "when are you open",
        "what time does the office open",
        "what time do you close today",
        "are you open on saturday",
        "is the centre open on weekends",
        "when does the front desk close",
        "what are the office hours this week",
    ],
    "fees": [
        "how much does the course cost",
        "what is the enrolment fee",
        "are there any fees",
        "how much do i have to pay",
        "is the course free",
        "can i pay the fee in instalments",
        "what does it cost to sign up",
        "is there a discount on the tuition",
    ],
    "eligibility": [
        "am i eligible for the course",
        "who can enrol in the program",
        "do i qualify if i am over sixty",
        "are there any entry requirements",
        "can i join without a high school diploma",
        "is there an age limit",
        "do i need experience to apply",
        "can international students apply",
    ],
    "documents": [
        "what documents do i need to bring",
        "do i need a photo id",
        "which papers should i send with my application",
        "do you need proof of address",
        "what paperwork is required to enrol",
        "should i bring my certificates",
        "can i upload my documents online",
        "do you need a copy of my passport",
    ],
    "person_request": [
        "can i talk to a person",
        "i want to speak to someone",
        "let me talk to a human",
        "put me through to a staff member",
        "i would like to speak with an advisor",
        "is there a real person i can talk to",
        "connect me with somebody at the desk",
        "can someone call me back",
    ],
    "schedule": [
        "when does the course start",
        "what days are the classes",
        "how many weeks is the program",
        "are the classes in the evening",
        "what is the class timetable",
        "when is the next intake",
        "how long does the course run",
        "do classes meet twice a week",
    ],
    "child_care": [
        "is there child care during class",
        "can i bring my kids",
        "do you offer a creche",
        "i need someone to look after my children",
        "is there a babysitting service",
        "can my toddler stay in the nursery while i study",
        "do you have care for young children",
        "what do i do with my kids during lessons",
    ],
    "accessibility": [
        "is the building wheelchair accessible",
        "is there a lift to the classroom",
        "do you have disabled parking",
        "i use a wheelchair can i attend",
        "are there accessible toilets",
        "can you help with my hearing impairment",
        "do you provide large print materials",
        "is there step free access",
    ],
    "withdrawal": [
        "i want to withdraw from the course",
        "how do i cancel my enrolment",
        "i need to drop out",
        "can i quit the program",
        "please take me off the course",
        "i no longer want to attend",
        "can i get a refund if i leave",
        "how do i unenrol",
    ],
    "programs": [
        "what courses do you offer",
        "which programs are available",
        "tell me about your courses",
        "do you have any training programs",
        "what can i study here",
        "list the courses you run",
        "are there any new courses",
        "what kind of classes do you have",
    ],
}

# Paraphrases no example has (words, order and phrasing of their own), with the label each means.
PARAPHRASES: list[tuple[str, str]] = [
    ("At what time do you open in the morning?", "hours"),
    ("What's the price of the course?", "fees"),
    ("Do I meet the requirements to enrol?", "eligibility"),
    ("Which documents must I provide?", "documents"),
    ("I'd rather speak to a real human please", "person_request"),
    ("When do the classes start?", "schedule"),
    ("Who will look after my children while I'm in class?", "child_care"),
    ("Can I get into the building in a wheelchair?", "accessibility"),
    ("I want to cancel and leave the course", "withdrawal"),
    ("What courses are available?", "programs"),
]

SCORE = 0.2
MARGIN = 0.05


@pytest.fixture(scope="module")
def index() -> ExampleIndex:
    return ExampleIndex.build(EXAMPLES)


def test_an_example_itself_scores_one(index: ExampleIndex) -> None:
    found = index.match("what are your opening hours")
    assert found is not None
    assert found.label == "hours"
    # Not quite 1: function words count in the norms but have no index list (dialogue.similarity).
    assert found.score == pytest.approx(1.0, abs=0.03)
    assert found.example == 0


def test_typos_still_match(index: ExampleIndex) -> None:
    for text in ("openning hours?", "wat are your opning hours", "how much dose the cours cost"):
        found = index.match(text)
        assert found is not None, text
        assert found.label == ("fees" if "cost" in text else "hours"), (text, found)
        assert found.score >= SCORE, (text, found)


def test_word_order_and_case_do_not_matter_much(index: ExampleIndex) -> None:
    plain = index.match("what are your opening hours")
    for text in ("WHAT ARE YOUR OPENING HOURS", "your opening hours, what are they", "Hours: opening, what are they?"):
        found = index.match(text)
        assert found is not None and plain is not None
        assert found.label == "hours", text
    upper = index.match("WHAT ARE YOUR OPENING HOURS")
    assert upper == plain


def test_unicode_disguises_are_seen_through(index: ExampleIndex) -> None:
    plain = index.match("what are your opening hours")
    full_width = "".join(chr(ord(char) + 0xFEE0) if "a" <= char <= "z" else char for char in "opening hours")
    for text in (
        f"what are your {full_width}",  # full-width letters
        "what are your open\u200bing ho\u200curs",  # zero-width space and non-joiner
        "what are your \u043epening h\u043eurs",  # Cyrillic "o"
    ):
        assert index.match(text) == plain, ascii(text)


def sure(index: ExampleIndex, text: str) -> str | None:
    """The label understanding would take from the index (dialogue.understanding: its score and margin at
    least the thresholds), else None."""
    found = index.match(text)
    return found.label if found is not None and found.score >= SCORE and found.margin >= MARGIN else None


def test_an_ambiguous_turn_gets_a_small_margin_and_no_decision(index: ExampleIndex) -> None:
    # Each asks two things at once: neither label should win clearly.
    for text, labels in (
        ("when are you open and how much does it cost", {"hours", "fees"}),
        ("do i need documents to withdraw", {"documents", "withdrawal"}),
    ):
        found = index.match(text)
        assert found is not None
        assert {found.label, found.runner_up} == labels, found
        assert found.margin < MARGIN, found
        assert sure(index, text) is None
    # A clear turn passes the same thresholds.
    assert sure(index, "how much does the course cost") == "fees"


def test_an_unrelated_turn_scores_low(index: ExampleIndex) -> None:
    hours_and_fees = ExampleIndex.build({label: EXAMPLES[label] for label in ("hours", "fees")})
    found = hours_and_fees.match("how long do i boil eggs")
    assert found is None or found.score < SCORE, found
    assert sure(hours_and_fees, "how long do i boil eggs") is None
    for text in ("what's the weather like on mars", "recommend a good pizza topping", "can you write me a poem"):
        found = index.match(text)
        assert found is None or found.score < SCORE, (text, found)
        assert sure(index, text) is None, text


def test_empty_and_whitespace_text_match_nothing(index: ExampleIndex) -> None:
    for text in ("", "   ", "\t\n", "\u200b", "?!.", "xqzv"):
        assert index.match(text) is None, ascii(text)


def test_a_match_is_a_cosine_and_its_margin_the_lead_over_the_runner_up(index: ExampleIndex) -> None:
    found = index.match("when are you open and how much does it cost")
    assert found is not None
    assert {found.label, found.runner_up} == {"hours", "fees"}
    assert 0.0 < found.score <= 1.0 and 0.0 <= found.margin <= found.score


def test_same_build_same_scores() -> None:
    texts = [text for text, _ in PARAPHRASES] + ["openning hours?", "when are you open and how much does it cost"]
    first, second = ExampleIndex.build(EXAMPLES), ExampleIndex.build(dict(EXAMPLES))
    for text in texts:
        assert first.match(text) == second.match(text) == first.match(text), text


def test_a_label_without_examples_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="label 'withdrawal' has no examples"):
        ExampleIndex.build({"hours": ["when are you open"], "withdrawal": []})
    with pytest.raises(ValueError, match="no labels"):
        ExampleIndex.build({})
    with pytest.raises(ValueError, match=r"label 'hours', example 1: has no words"):
        ExampleIndex.build({"hours": ["when are you open", "  ?! "]})
    with pytest.raises(ValueError, match=r"label 'hours', example 0: has only function words"):
        ExampleIndex.build({"hours": ["can you do that for me"]})
    with pytest.raises(ValueError, match="label 'hours': examples must be a sequence"):
        ExampleIndex.build({"hours": "when are you open"})


def test_user_text_never_reaches_an_error_or_the_index() -> None:
    secret = "my card number is 4111 1111 1111 1111"
    index = ExampleIndex.build(EXAMPLES)
    before = repr(sorted(vars_of(index)))
    index.match(secret)
    assert repr(sorted(vars_of(index))) == before


def vars_of(index: ExampleIndex) -> list[str]:
    """Every string the index holds (its words, features and labels), to check nothing was added."""
    strings: list[str] = [*index.labels]
    for name in ExampleIndex.__slots__:
        value = getattr(index, name)
        if isinstance(value, dict):
            strings.extend(str(key) for key in value)
    return strings


def test_unseen_paraphrases_get_the_right_label(index: ExampleIndex, capsys: pytest.CaptureFixture[str]) -> None:
    example_texts = {text for texts in EXAMPLES.values() for text in texts}
    right = 0
    lines = []
    for text, label in PARAPHRASES:
        assert text.lower().strip("?") not in example_texts
        found = index.match(text)
        ok = found is not None and found.label == label
        right += ok
        shown = f"{found.label} {found.score:.2f} (margin {found.margin:.2f})" if found else "none"
        lines.append(f"{'ok ' if ok else 'BAD'} {text!r}: {shown}; want {label}")
    with capsys.disabled():
        print(f"\nparaphrases labelled right: {right}/{len(PARAPHRASES)}", *lines, sep="\n  ")
    assert right >= 8, "\n".join(lines)


def test_the_module_needs_only_the_standard_library_and_normalize() -> None:
    tree = ast.parse(MODULE.read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports"
            assert node.module is not None
            imported.add(node.module)
    outside = {name for name in imported if name.split(".")[0] not in sys.stdlib_module_names}
    assert outside == {"dialogue.normalize"}, outside


def test_match_is_a_plain_record() -> None:
    found = Match(label="hours", score=0.5, runner_up=None, margin=0.5, example=3)
    with pytest.raises(AttributeError):
        found.label = "fees"  # type: ignore[misc]


# --- the index kept between processes (ExampleIndex.kept; devstack's commands keep it) ---------------

KEPT_TEXTS = [text for text, _ in PARAPHRASES] + ["openning hours?", "when are you open and how much does it cost"]


def test_a_kept_index_is_read_back_and_matches_as_the_built_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = ExampleIndex.kept(EXAMPLES, tmp_path)
    (kept,) = tmp_path.glob("example-index-*.marshal")
    # The next process reads it: no build at all
    monkeypatch.setattr(ExampleIndex, "build", classmethod(lambda cls, *a, **k: pytest.fail("built again")))
    read = ExampleIndex.kept(EXAMPLES, tmp_path)
    assert read is not built and len(read) == len(built) and read.labels == built.labels
    for text in KEPT_TEXTS:
        assert read.match(text) == built.match(text), text
    assert list(tmp_path.iterdir()) == [kept]


def test_other_examples_are_another_file_and_a_damaged_file_is_built_over(tmp_path: Path) -> None:
    ExampleIndex.kept(EXAMPLES, tmp_path)
    fewer = {label: texts[:-1] or texts for label, texts in EXAMPLES.items()}
    other = ExampleIndex.kept(fewer, tmp_path)
    assert len(list(tmp_path.glob("example-index-*.marshal"))) == 2
    assert len(other) < len(ExampleIndex.build(EXAMPLES))
    for damaged in tmp_path.glob("example-index-*.marshal"):
        damaged.write_bytes(damaged.read_bytes()[:1000])
    again = ExampleIndex.kept(EXAMPLES, tmp_path)
    fresh = ExampleIndex.build(EXAMPLES)
    assert [again.match(text) for text in KEPT_TEXTS] == [fresh.match(text) for text in KEPT_TEXTS]
    assert not list(tmp_path.glob("*.part"))


def test_a_folder_that_cannot_be_written_keeps_nothing_and_bad_examples_still_raise(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    index = ExampleIndex.kept(EXAMPLES, blocked / "index")
    text = "what are your opening hours"
    assert index.match(text) == ExampleIndex.build(EXAMPLES).match(text)
    with pytest.raises(ValueError, match="label 'withdrawal' has no examples"):
        ExampleIndex.kept({"hours": ["when are you open"], "withdrawal": []}, tmp_path)
    assert list(tmp_path.iterdir()) == [blocked]


def test_only_the_newest_kept_indexes_stay(tmp_path: Path) -> None:
    from dialogue.similarity import KEPT_INDEXES

    for n in range(KEPT_INDEXES + 3):
        ExampleIndex.kept({**EXAMPLES, "extra": [f"question number {n} about parking"]}, tmp_path)
    assert len(list(tmp_path.glob("example-index-*.marshal"))) == KEPT_INDEXES


def test_a_desk_keeps_its_index_only_where_the_setting_names_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dialogue.pack import load_pack
    from dialogue.pack.examples import INDEX_CACHE_ENV

    desk = ROOT / "data" / "harbourview_library"
    for setting in (None, "off", ""):
        if setting is None:
            monkeypatch.delenv(INDEX_CACHE_ENV, raising=False)
        else:
            monkeypatch.setenv(INDEX_CACHE_ENV, setting)
        assert load_pack(desk, profile="desk").example_index is not None
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(INDEX_CACHE_ENV, str(tmp_path / "kept"))
    kept = load_pack(desk, profile="desk").example_index
    assert kept is not None and len(list((tmp_path / "kept").glob("example-index-*.marshal"))) == 1
