"""Draw a desk's first `examples.toml` from its tuning sets and its own topic cases (run once per desk).

    python data/eval_build/draw_examples.py riverton

Topic questions come from the desk's `topic_cases.csv` (rows answered with `inform`) and from the
tuning parts of its chatbot sets (rows with an `expected_topic`); turns for a person from the tuning
parts of the person-request sets; injections and jailbreak prompts from the tuning parts of those sets;
asking to enrol from rows the desk takes up on its path (a request action among the expected ones: "I would
like to Enroll", "save seat"); everything else those tuning parts hold (other desks' questions, other
domains' requests, benign public text, "are you a bot?" look-alikes, statements about nothing the desk
does) is `other`. Conversation files (with a `conversation_id`) are not drawn from: their turns mean what
they mean in context. The
held-out parts (`*_heldout*.csv`) are read for one thing only: a tuning text that a held-out part also
holds (public sets repeat themselves) is left out, so that no held-out text is ever an example
(tests/unit/test_examples.py checks it). The slot-value
examples and the thresholds are written by hand in `WRITTEN` below and kept when the file is drawn again.

The file this writes is the desk's from then on: authors add to it by hand.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from dialogue.similarity import STOP_WORDS, WORD

DATA = Path(__file__).resolve().parents[1]

# The thresholds choose_thresholds.py's two-fold cross-validation on the tuning parts gave every desk.
CROSS_VALIDATED = {
    "min_score": 0.6,
    "min_margin": 0.08,
    "screen_min_score": 1.0,
    "inform_min_score": 0.0,
    "far_score": 0.0,
}

# Per desk: the hand-written part (thresholds, chosen by two-fold cross-validation on the tuning parts
# only, by choose_thresholds.py; slot values; which of the desk's intents are a person and the frame).
WRITTEN: dict[str, dict[str, object]] = {
    "riverton": {
        "thresholds": CROSS_VALIDATED,
        "person_intent": "human_request",
        "enroll_intent": "enrollment",
        "values": {
            "contact_channel": {
                "phone": ["give me a ring", "a call is best", "ring my mobile", "call my cell"],
                "email": ["drop me a line in my inbox", "send it to my inbox", "write to my e-mail address"],
            },
            "childcare_needed": {
                "yes": ["someone has to look after my toddler while i'm in class", "i have small kids at home"],
                "no": ["my kids are grown up", "i have no children"],
            },
        },
    },
    "harbourview_library": {
        "thresholds": CROSS_VALIDATED,
        "person_intent": "human_request",
        "enroll_intent": "request_service",
        "values": {
            "reply_channel": {
                "sms": ["message my mobile", "send me a message on my cell", "a text message is best"],
                "postal": ["send me a letter", "by post to my home address", "snail mail is fine"],
            },
        },
    },
    # A desk with no eval folder of its own draws its attacks, other domains' turns and requests for a
    # person from another desk's desk-independent public sets (`SHARED_SETS`), and its topics from its own
    # topic cases.
    "eastgate_bulky_waste": {
        "thresholds": CROSS_VALIDATED,
        "person_intent": "human_request",
        "enroll_intent": "request_collection",
        "values": {},
        "shared_from": "riverton",
    },
}

SHARED_SETS = (
    "injections",
    "jailbreaks_fresh",
    "out_of_scope",
    "other_domain_fresh",
    "person_requests",
    "person_fresh",
)
"""The public sets that are the same for every desk (SOURCES.md): what a desk without its own may draw."""

THRESHOLDS = ("min_score", "min_margin", "screen_min_score", "inform_min_score", "far_score")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


INJECTION_GROUPS = ("injection", "jailbreak", "harmful_request")
PERSON_GROUPS = ("person_request",)


def _held_out(root: Path) -> set[str]:
    """Every held-out text of the desk, whitespace-collapsed and case-folded."""
    paths = [*root.glob("*_heldout*.csv"), *(root / "eval").glob("*_heldout*.csv")]
    return {" ".join(row["text"].split()).casefold() for path in paths for row in _rows(path)}


def draw(desk: str) -> dict[str, object]:
    root = DATA / desk
    written = WRITTEN[desk]
    held_out = _held_out(root)
    topics: dict[str, list[str]] = {}
    person: list[str] = []
    enroll: list[str] = []
    injections: list[str] = []
    other: list[str] = []

    def add(bucket: list[str], text: str) -> None:
        text = " ".join(text.split())
        words = set(WORD.findall(text.casefold()))
        if (
            words - STOP_WORDS and text not in bucket and text.casefold() not in held_out
        ):  # "Yes please." matches nothing
            bucket.append(text)

    for row in _rows(root / "topic_cases.csv"):
        action = row["expected_action"]
        if action == "inform":
            add(topics.setdefault(row["topic"], []), row["text"])
        elif action.startswith("request") or action == "confirm":
            add(enroll, row["text"])
    shared = written.get("shared_from")
    tuning = (
        [DATA / str(shared) / "eval" / f"{name}_tune.csv" for name in SHARED_SETS]
        if shared
        else sorted((root / "eval").glob("*_tune.csv"))
    )
    if shared:
        held_out |= _held_out(DATA / str(shared))
    for path in tuning:
        rows = _rows(path)
        if rows and "conversation_id" in rows[0]:
            continue
        for row in rows:
            group, action, text = row.get("group", ""), row.get("expected_action", ""), row["text"]
            if group in INJECTION_GROUPS:
                add(injections, text)
            elif group in PERSON_GROUPS:
                add(person, text)
            elif action == "inform" and row.get("expected_topic"):
                add(topics.setdefault(row["expected_topic"], []), text)
            elif any(choice.startswith("request_") for choice in action.split("|")):
                add(enroll, text)  # "I would like to enrol", "time table": the desk's path, never `other`
            elif group != "injection_nonenglish":
                add(other, text)
    return {
        **written["thresholds"],  # type: ignore[dict-item]
        "topics": topics,
        "intents": {written["person_intent"]: person, written["enroll_intent"]: enroll},
        "screens": {"injection": injections},
        "values": {
            slot: {value: [t for t in texts if t.casefold() not in held_out] for value, texts in values.items()}
            for slot, values in written["values"].items()  # type: ignore[attr-defined]
        },
        "other": other,
    }


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string


def _toml_list(items: list[str]) -> str:
    return "[\n" + "".join(f"  {_toml_string(item)},\n" for item in items) + "]"


def render(desk: str, drawn: dict[str, object]) -> str:
    lines = [
        f"# {desk}: example utterances for the desk profile of understanding (see docs/DOMAIN_PACKS.md).",
        "# First drawn by data/eval_build/draw_examples.py from topic_cases.csv and the tuning parts of eval/",
        "# (sources and licenses in eval/SOURCES.md); never from the held-out parts. Edit by hand from here.",
        "",
    ]
    lines += [f"{key} = {drawn[key]}" for key in THRESHOLDS]
    lines.append("")
    lines.append(f"other = {_toml_list(drawn['other'])}")  # type: ignore[arg-type]
    for table in ("topics", "intents", "screens"):
        lines += ["", f"[{table}]"]
        for name, items in drawn[table].items():  # type: ignore[attr-defined]
            lines.append(f"{name} = {_toml_list(items)}")
    for slot, values in drawn["values"].items():  # type: ignore[attr-defined]
        lines += ["", f"[values.{slot}]"]
        for value, items in values.items():
            lines.append(f"{value} = {_toml_list(items)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    for name in sys.argv[1:] or list(WRITTEN):
        (DATA / name / "examples.toml").write_text(render(name, draw(name)), encoding="utf-8")
