"""Draw a desk's first `examples.toml` from its tuning sets and its own topic cases (run once per desk).

    python data/eval_build/draw_examples.py riverton

Topic questions come from the desk's `topic_cases.csv` (rows answered with `inform`) and from the
tuning part of its chatbot set (rows with an `expected_topic`); turns for a person from the tuning part
of the person-request set; injections from the tuning part of the injection set; everything else those
tuning parts hold (other desks' questions, benign public text, "are you a bot?" look-alikes, statements
about nothing the desk does) is `other`. The held-out parts (`*_heldout.csv`) are never read, and
tests/unit/test_examples.py checks that none of their text is in an examples file. The slot-value
examples and the thresholds are written by hand in `WRITTEN` below and kept when the file is drawn again.

The file this writes is the desk's from then on: authors add to it by hand.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1]

# Per desk: the hand-written part (thresholds, chosen by two-fold cross-validation on the tuning parts
# only, by choose_thresholds.py; slot values; which of the desk's intents are a person and the frame).
WRITTEN: dict[str, dict[str, object]] = {
    "riverton": {
        "thresholds": {"min_score": 0.6, "min_margin": 0.08, "screen_min_score": 1.0, "inform_min_score": 0.0},
        "person_intent": "human_request",
        "enroll_intent": "enrollment",
        "values": {
            "contact_channel": {
                "phone": ["ring me", "give me a ring", "a call is best", "ring my mobile", "call my cell"],
                "email": ["drop me a line in my inbox", "send it to my inbox", "write to my e-mail address"],
            },
            "childcare_needed": {
                "yes": ["someone has to look after my toddler while i'm in class", "i have small kids at home"],
                "no": ["my kids are grown up", "i have no children"],
            },
        },
    },
    "harbourview_library": {
        "thresholds": {"min_score": 0.6, "min_margin": 0.08, "screen_min_score": 1.0, "inform_min_score": 0.0},
        "person_intent": "human_request",
        "enroll_intent": "request_service",
        "values": {
            "reply_channel": {
                "sms": ["message my mobile", "send me a message on my cell", "a text message is best"],
                "postal": ["send me a letter", "by post to my home address", "snail mail is fine"],
            },
        },
    },
}

THRESHOLDS = ("min_score", "min_margin", "screen_min_score", "inform_min_score")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def draw(desk: str) -> dict[str, object]:
    root = DATA / desk
    written = WRITTEN[desk]
    topics: dict[str, list[str]] = {}
    person: list[str] = []
    enroll: list[str] = []
    injections: list[str] = []
    other: list[str] = []

    def add(bucket: list[str], text: str) -> None:
        text = " ".join(text.split())
        if text and text not in bucket:
            bucket.append(text)

    for row in _rows(root / "topic_cases.csv"):
        action = row["expected_action"]
        if action == "inform":
            add(topics.setdefault(row["topic"], []), row["text"])
        elif action.startswith("request") or action == "confirm":
            add(enroll, row["text"])
    for path in sorted((root / "eval").glob("*_tune.csv")):
        for row in _rows(path):
            group, action, text = row.get("group", ""), row.get("expected_action", ""), row["text"]
            if group == "injection":
                add(injections, text)
            elif group == "person_request":
                add(person, text)
            elif action == "inform" and row.get("expected_topic"):
                add(topics.setdefault(row["expected_topic"], []), text)
            elif group != "injection_nonenglish":
                add(other, text)
    return {
        **written["thresholds"],  # type: ignore[dict-item]
        "topics": topics,
        "intents": {written["person_intent"]: person, written["enroll_intent"]: enroll},
        "screens": {"injection": injections},
        "values": written["values"],
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
