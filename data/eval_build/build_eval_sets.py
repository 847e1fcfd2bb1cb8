"""Build the public-source evaluation sets under data/<pack>/eval/ (run once; kept as the record).

Inputs are the fetched snapshots of public GitHub repositories under /work/.mirror/<owner>+<name>/repo
(bare git directories; read with `git show <commit>:<path>`), pinned to the commits named in SOURCES.
It was run once, with a throwaway virtual environment that had pyarrow and PyYAML
(`/tmp/evalvenv/bin/python data/eval_build/build_eval_sets.py`); nothing in the project imports it.

Labels come from the handbooks (data/<pack>/handbook.csv) and the topic table's `rows` /
`program_rows` / `covered = false` entries only: each source intent (tag) is mapped by hand to what the
right answer is according to the handbook (TAG tables below), with per-text overrides where a pattern
inside a tag asks something else. The system was not run on any of this text.

Split: a row is held out when int(sha256(text).hexdigest(), 16) % 5 < 3 (60 %), else tuning.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

MIRROR = Path("/work/.mirror")
ROOT = Path(__file__).resolve().parents[2]
OUT = {"riverton": ROOT / "data/riverton/eval", "harbourview_library": ROOT / "data/harbourview_library/eval"}
SLOT = {"riverton": "program", "harbourview_library": "service"}

# repository -> (commit, license as read from the snapshot)
SOURCES = {
    "harshilkhara/College-Chatbot": "70f23c543c9e0ed4832b07a26eb8f3a6cd63cf63",
    "akarshjoice/ChatBot-Using-Rasa-and-Python": "fd7769d8f916de408fea061ffd3da9e1ba4851c9",
    "abhik-b/college-enquiry-chatbot": "8dd662c750e9881f7c1f5a8eaa8cfc7ba61a9530",
    "1shweta3/Chatbot-for-College-website": "5a64b02e0b4fc6cd77ee0d572eb51f54e308ba21",
    "harshgupta1806/College-Chatbot": None,  # newest snapshot; commit recorded at run time
    "hdilab/library-chatbot": "d2befd4b9a5dd9f1757ca2b9056b530b468c8633",
    "BZU-Library-Chatbot/Rasa": "62a7bb5b9a34f6b61a675cebd884754e4c7e8a8a",
    "sinanw/llm-security-prompt-injection": "c8af0b015a9a4f3380f9e20214828c2dbeadc72c",
    "clinc/oos-eval": "828f8093932c8fe6ca7936c3d2e52903b1c523de",
    "RasaHQ/rasa-demo": "6935627237436726aeb16e44add8d9fab6e43a82",
}


def git_dir(repo: str) -> Path:
    return MIRROR / repo.replace("/", "+") / "repo"


def commit_of(repo: str) -> str:
    pinned = SOURCES[repo]
    if pinned:
        return pinned
    out = subprocess.run(["git", "-C", str(git_dir(repo)), "rev-parse", "HEAD"], capture_output=True, check=True)
    return out.stdout.decode().strip()


def show(repo: str, path: str) -> bytes:
    spec = f"{commit_of(repo)}:{path}"
    return subprocess.run(["git", "-C", str(git_dir(repo)), "show", spec], capture_output=True, check=True).stdout


# ---------------------------------------------------------------- parsing

MARKUP = [re.compile(r"\[([^\]]+)\]\([^)]*\)"), re.compile(r"\[([^\]]+)\]\{[^}]*\}")]


def strip_markup(text: str) -> str:
    """Rasa entity markup `[value](entity)` / `[value]{...}` -> the words the user typed."""
    for pattern in MARKUP:
        text = pattern.sub(r"\1", text)
    return text.strip()


def rasa_md(raw: str, strip=strip_markup, *, headings_end_intents: bool = False) -> list[tuple[str, str]]:
    """(intent, text) pairs from a Rasa 1.x markdown NLU file, each text through `strip`.
    `headings_end_intents` (the fresh sets' sources): HTML comments are skipped, and any other `#` line
    ends the intent it follows."""
    if headings_end_intents:
        raw = re.sub(r"<!--.*?-->", "", raw, flags=re.S)
    pairs, intent = [], None
    for line in raw.splitlines():
        head = re.match(r"\s*##\s*(intent|synonym|lookup|regex)\s*:\s*(.*)", line)
        if head:
            intent = head.group(2).strip() if head.group(1) == "intent" else None
            continue
        if headings_end_intents and line.startswith("#"):
            intent = None
            continue
        item = re.match(r"\s*-\s+(.*)", line)
        if intent and item:
            pairs.append((intent, strip(item.group(1))))
    return pairs


def rasa_yaml(raw: str, strip=strip_markup) -> list[tuple[str, str]]:
    """(intent, text) pairs from a Rasa 2+ YAML NLU file, each text through `strip`."""
    import yaml

    pairs = []
    for block in yaml.safe_load(raw).get("nlu", []):
        if "intent" not in block:
            continue
        for line in (block.get("examples") or "").splitlines():
            item = re.match(r"\s*-\s+(.*)", line)
            if item:
                pairs.append((block["intent"], strip(item.group(1))))
    return pairs


def intents_json(raw: str) -> list[tuple[str, str]]:
    data = json.loads(raw)
    return [(intent["tag"], pattern.strip()) for intent in data["intents"] for pattern in intent["patterns"]]


def intents_json_tolerant(raw: str) -> list[tuple[str, str]]:
    """harshgupta1806's intents.json is not valid JSON (missing commas, a nested block): take each
    `"tag"` and every quoted string of the `"patterns": [...]` list that follows it; two adjacent
    strings with no comma between them are kept as two patterns."""
    pairs = []
    for match in re.finditer(r'"tag"\s*:\s*"([^"]*)"\s*,\s*"patterns"\s*:\s*\[(.*?)\]', raw, re.S):
        for text in re.findall(r'"((?:[^"\\]|\\.)*)"', match.group(2)):
            pairs.append((match.group(1), text.strip()))
    return pairs


# ---------------------------------------------------------------- labels
# A label is (expected_action, expected_topic, expected_passage_ids, group); None = not included.

UNCOVERED = ("abstain_hand_off|hand_off", "", "", "uncovered")
OOS = ("abstain_hand_off|hand_off", "", "", "out_of_scope")


def inform(topic: str, rows: str) -> tuple[str, str, str, str]:
    return ("inform", topic, rows, topic)


def uncovered_topic(topic: str) -> tuple[str, str, str, str]:
    return ("abstain_hand_off|hand_off", topic, "", "uncovered")


def either(actions: str, group: str) -> tuple[str, str, str, str]:
    """Several acceptable actions: no topic or rows are demanded (they would fail the alternatives)."""
    return (actions, "", "", group)


SKIP = None

# --- Riverton (college enquiry chatbots) ---------------------------------------------------------
RIVERTON_TAGS = {
    "harshilkhara/College-Chatbot": {
        "greet": SKIP,
        "goodbye": SKIP,
        "thanks": SKIP,
        "student_affirm": SKIP,
        "parent_affirm": SKIP,
        "deny": SKIP,
        "mood_great": SKIP,
        "mood_unhappy": SKIP,
        "name_entry": SKIP,
        "number_entry": SKIP,
        "branch_entry": SKIP,
        "current_student": SKIP,
        "bot_challenge": SKIP,  # bot_challenge -> person set
        "working_hours": inform("centre_hours", "H01"),
        "courses": inform("programs_offered", "H02"),
        "intake": UNCOVERED,
        "office_number": UNCOVERED,
        "principal": UNCOVERED,
        "affiliation": UNCOVERED,
        "time_table": ("request_program", "", "", "schedule"),
        "events": UNCOVERED,
        "gym_girls": UNCOVERED,
        "gym": UNCOVERED,
        "results": UNCOVERED,
        "itprof": UNCOVERED,
        "fees1": inform("fees", "H05"),
        "fees2": inform("fees", "H05"),
        "fees3": inform("fees", "H05"),
        "fees4": inform("fees", "H05"),
        "register": UNCOVERED,  # admission dates: the handbook gives none
        "contact": UNCOVERED,
        "address": UNCOVERED,
    },
    "akarshjoice/ChatBot-Using-Rasa-and-Python": {
        "greet": SKIP,
        "goodbye": SKIP,
        "facultyname": SKIP,
        "intro": SKIP,  # intro -> person set
        "About": UNCOVERED,
        "time": OOS,
        "new_admissionBtech": UNCOVERED,
        "new_admissionMtech": UNCOVERED,
        "new_Mtechseats": UNCOVERED,
        "placement": uncovered_topic("jobs"),
        "facultyd": UNCOVERED,
    },
    "abhik-b/college-enquiry-chatbot": {
        "greeting": SKIP,
        "goodbye": SKIP,
        "thanks": SKIP,
        "holidays": UNCOVERED,
        "faculty": UNCOVERED,
        "courses": UNCOVERED,  # BCA / BTECH / MTECH / MCA: not programs the centre runs
        "funny": OOS,
        "result": UNCOVERED,
    },
    "1shweta3/Chatbot-for-College-website": {
        "greetings": SKIP,
        "Basic info": either("inform|abstain_hand_off|hand_off", "programs_offered"),
        "campus life": UNCOVERED,
        "Clubs": UNCOVERED,
        "Accomodation": UNCOVERED,
        "Instrumentation academics": UNCOVERED,
        "Chemical academics": UNCOVERED,
        "mechanical academics": UNCOVERED,
        "ENTC academics": UNCOVERED,
        "IT academics": UNCOVERED,
        "computer academics": UNCOVERED,
        "first year academics": UNCOVERED,
        "placement": uncovered_topic("jobs"),
        "address": UNCOVERED,
        "contact": UNCOVERED,
        "timing": inform("centre_hours", "H01"),
    },
    "harshgupta1806/College-Chatbot": {
        "greeting": SKIP,
        "goodbye": SKIP,
        "thanks": SKIP,
        "noanswer": SKIP,
        "Suggestion and feedback": SKIP,  # thanks / praise
        "Library": UNCOVERED,
        "Transport": uncovered_topic("transport"),
        "Canteen and Mess": uncovered_topic("food"),
        "Address": UNCOVERED,
        "Scholarship": either("abstain_hand_off|hand_off|inform", "fees"),
        "Fees Submission": either("inform|abstain_hand_off|hand_off", "fees"),
        "teacher deatils": UNCOVERED,
        "notice ": UNCOVERED,
        "CMS": UNCOVERED,
        "Exams": either("request_program|abstain_hand_off|hand_off", "assessment"),
        "scheme and syllabus ": either("request_program|abstain_hand_off|hand_off", "content"),
        "NOTES": UNCOVERED,
        "bot not working or responding": UNCOVERED,
        "joke": OOS,
        "MPONLINE": UNCOVERED,
        "Photocopy and stationery": UNCOVERED,
    },
}
RIVERTON_TEXT = {  # per-text overrides (any source)
    "tt": either("request_program|abstain_hand_off|hand_off", "schedule"),
    "what are the courses and how frequently are they updated": inform("programs_offered", "H02"),
    "college timings?": either("inform|request_program", "centre_hours"),
    "What hours does nitc work?": either("abstain_hand_off|hand_off|inform", "centre_hours"),
    "Which Courses are offered here": inform("programs_offered", "H02"),
    "Are there any medical course ?": inform("programs_offered", "H02"),
    "which Course are best here ?": either("inform|abstain_hand_off|hand_off", "programs_offered"),
    "what about the fees Stucture ?": inform("fees", "H05"),
    "how many time will take to complete those course ?": ("request_program", "", "", "schedule"),
    "Fees": inform("fees", "H05"),
    "books": either("abstain_hand_off|hand_off|inform", "uncovered"),
    "topics": either("request_program|abstain_hand_off|hand_off", "content"),
    "notes": UNCOVERED,
    "where to see result": UNCOVERED,
    "bus": uncovered_topic("transport"),
}

# --- Harbourview library (library chatbots) -------------------------------------------------------
PRINT_WORDS = re.compile(r"print|plotter", re.I)
LIBRARY_TAGS = {
    "hdilab/library-chatbot": {
        "affirm": SKIP,
        "deny": SKIP,
        "goodbye": SKIP,
        "greet": SKIP,
        "thanks": SKIP,
        "acknowledge": SKIP,
        "insult": SKIP,
        "other": SKIP,
        "class_writing_assignment": SKIP,
        "research_project": SKIP,
        "add_money_to_print_quota": "printing",
        "colors_and_sizes_of_poster": "printing",
        "cost_to_print_the_plotter": "printing",
        "file_type_to_print_poster": "printing",
        "pay_for_the_poster": "printing",
        "plotter_printer_location": "printing",
        "poster_pickup_location": "printing",
        "submit_poster_order_online": "printing",
        "time_to_print_poster": "printing",
        "library_printing": "printing",
        "printing_personal_machine": "printing",
        "guest_visitor_alumni_library_access": either("abstain_hand_off|hand_off|inform", "eligibility"),
        "reserve_study_room": either("request_program|abstain_hand_off|hand_off", "how_to_apply"),
        "check_out_book": inform("loans", "L06"),
        "libraries_hours": either("abstain_hand_off|hand_off|inform", "library_hours"),
        "*": UNCOVERED,  # every other intent: university-library services the handbook does not cover
    },
    "BZU-Library-Chatbot/Rasa": {
        "ask_joke_en": OOS,
        "ask_book_by_title_en": UNCOVERED,
        "ask_book_by_author_en": UNCOVERED,
        "ask_book_by_subject_en": UNCOVERED,
        "ask_book_by_language_en": UNCOVERED,
        "request_book_recommendation_en": UNCOVERED,
        # Arabic intents, greetings, thanks, affirm/deny, stop, chit-chat, "more"; bot_challenge -> person set
        "*": SKIP,
    },
}
LIBRARY_TEXT = {
    "What is the hour of Central Library?": inform("library_hours", "L01"),
    "Is central library still open?": inform("library_hours", "L01"),
    "How can i book an interview room": either("request_program|abstain_hand_off|hand_off", "how_to_apply"),
    "are there rooms I can book for an interview.": either("request_program|abstain_hand_off|hand_off", "how_to_apply"),
}


def label_riverton(repo: str, tag: str, text: str):
    if text in RIVERTON_TEXT:
        return RIVERTON_TEXT[text]
    table = RIVERTON_TAGS[repo]
    if tag.strip() in table:
        return table[tag.strip()]
    if tag in table:
        return table[tag]
    raise KeyError(f"{repo}: no label for tag {tag!r}")


def label_library(repo: str, tag: str, text: str):
    if text in LIBRARY_TEXT:
        return LIBRARY_TEXT[text]
    table = LIBRARY_TAGS[repo]
    label = table.get(tag, table["*"])
    if label == "printing":
        return uncovered_topic("printing") if PRINT_WORDS.search(text) else UNCOVERED
    return label


# ---------------------------------------------------------------- injections (deepset)

EN_WORDS = {
    "the",
    "a",
    "an",
    "and",
    "or",
    "is",
    "are",
    "you",
    "your",
    "i",
    "me",
    "my",
    "to",
    "of",
    "in",
    "on",
    "for",
    "with",
    "what",
    "how",
    "why",
    "who",
    "this",
    "that",
    "it",
    "be",
    "do",
    "can",
    "not",
}
NON_EN_WORDS = {
    "und",
    "der",
    "die",
    "das",
    "ist",
    "ich",
    "nicht",
    "sie",
    "ein",
    "eine",
    "mit",
    "für",
    "auf",
    "zu",
    "wie",
    "was",
    "wir",
    "es",
    "du",
    "den",
    "dem",
    "des",
    "sich",
    "auch",
    "bitte",
    "oder",
    "aber",
    "sind",
    "bin",
    "habe",
    "hat",
    "werden",
    "wird",
    "kann",
    "können",
    "über",
    "ihre",
    "ihr",
    "mein",
    "meine",
    "el",
    "la",
    "los",
    "las",
    "que",
    "por",
    "para",
    "una",
    "con",
    "del",
    "y",
    "se",
    "lo",
    "como",
    "más",
    "le",
    "les",
    "est",
    "et",
    "une",
    "pour",
    "pas",
    "sur",
    "vous",
    "je",
}


def non_english(text: str) -> bool:
    """A heuristic (no language model): non-Latin script, or at least as many German/Spanish/French
    function words as English ones, or (with no English function word) German-looking word endings."""
    letters = [ch for ch in text if ch.isalpha()]
    if (
        letters
        and sum(not ("a" <= ch.lower() <= "z" or "\u00c0" <= ch <= "\u017f") for ch in letters) > len(letters) / 3
    ):
        return True
    words = re.findall(r"[a-zäöüßéèàçñ]+", text.lower())
    en = sum(word in EN_WORDS for word in words)
    other = sum(word in NON_EN_WORDS for word in words)
    if other and other >= en:
        return True
    german_look = re.search(r"[äöüß]", text.lower()) or any(
        word.endswith(("ung", "keit", "heit", "lich", "isch", "schaft")) for word in words
    )
    return en == 0 and bool(german_look)


def deepset_rows():
    import pyarrow as pa
    import pyarrow.parquet as pq

    repo = "sinanw/llm-security-prompt-injection"
    rows = []
    for name in ("train-00000-of-00001-9564e8b05b4757ab", "test-00000-of-00001-701d16158af87368"):
        table = pq.read_table(pa.BufferReader(show(repo, f"data/raw/{name}.parquet")))
        for record in table.to_pylist():
            text, label = record["text"], int(record["label"])
            suffix = "_nonenglish" if non_english(text) else ""
            if label == 1:
                rows.append(("deepset_pi", text, ("refuse|hand_off|abstain_hand_off", "", "", "injection" + suffix)))
            else:
                rows.append(("deepset_pi", text, ("!refuse", "", "", "benign" + suffix)))
    return rows


# ---------------------------------------------------------------- CLINC150

CLINC_OTHER_DOMAIN = [  # in-scope CLINC intents that neither desk's handbook touches
    "balance",
    "bill_due",
    "transfer",
    "interest_rate",
    "routing",
    "credit_score",
    "book_flight",
    "flight_status",
    "exchange_rate",
    "international_visa",
    "lost_luggage",
    "carry_on",
    "vaccines",
    "plug_type",
    "travel_alert",
    "recipe",
    "cook_time",
    "calories",
    "ingredient_substitution",
    "gas_type",
    "oil_change_how",
    "tire_pressure",
    "mpg",
    "jump_start",
    "weather",
    "definition",
    "spelling",
    "measurement_conversion",
    "translate",
    "tell_joke",
    "meaning_of_life",
    "fun_fact",
    "insurance",
    "payday",
    "rollover_401k",
    "taxes",
    "w2",
    "play_music",
    "roll_dice",
    "flip_coin",
    "smart_home",
    "timer",
    "alarm",
]
# oos texts read by hand after selection and dropped because a desk's handbook does answer them
# or they read as a request for a person (none needed so far; listed here if any).
CLINC_DROP: set[str] = set()
# oos texts a desk could fairly answer in part (read by hand after selection).
CLINC_TEXT = {
    "find available letter writing classes at the local community college": either(
        "abstain_hand_off|hand_off|inform", "out_of_scope"
    ),
}


def sha(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


def clinc_rows(n_oos: int = 150, n_in: int = 150):
    data = json.loads(show("clinc/oos-eval", "data/data_full.json"))
    oos = sorted(
        {text for text, _ in data["oos_val"] + data["oos_test"]} - CLINC_DROP, key=lambda t: (sha("oos" + t), t)
    )[:n_oos]
    allowed = set(CLINC_OTHER_DOMAIN)
    in_scope = sorted({text for text, intent in data["test"] if intent in allowed}, key=lambda t: (sha("in" + t), t))[
        :n_in
    ]
    return [("clinc150_oos", text, CLINC_TEXT.get(text, OOS)) for text in oos] + [
        ("clinc150_inscope", text, OOS) for text in in_scope
    ]


# ---------------------------------------------------------------- person requests

PERSON = ("hand_off", "", "", "person_request")
LOOKALIKE = ("!hand_off", "", "", "person_lookalike")
PERSON_TEXT = {
    "are there also humans working for your company?": ("hand_off|abstain_hand_off", "", "", "person_request"),
    "do you have human support ?": ("hand_off|abstain_hand_off", "", "", "person_request"),
    "talking to a bot is stupid": ("hand_off|abstain_hand_off", "", "", "person_request"),
}


def person_rows(max_lookalikes: int = 50):
    rows = []
    demo = rasa_yaml(show("RasaHQ/rasa-demo", "data/nlu/nlu.yml").decode())
    rows += [("rasa_demo", text, PERSON_TEXT.get(text, PERSON)) for intent, text in demo if intent == "human_handoff"]
    looks = []
    chit = rasa_yaml(show("RasaHQ/rasa-demo", "data/nlu/chitchat.yml").decode())
    looks += [("rasa_demo", t) for i, t in chit if i in ("chitchat/ask_isbot", "chitchat/ask_ishuman")]
    looks += [
        ("harshilkhara_college", t)
        for i, t in rasa_md(show("harshilkhara/College-Chatbot", "data/nlu.md").decode())
        if i == "bot_challenge"
    ]
    looks += [
        ("akarshjoice_nitc", t)
        for i, t in rasa_md(show("akarshjoice/ChatBot-Using-Rasa-and-Python", "Rasa/data/nlu.md").decode())
        if i == "intro"
    ]
    looks += [
        ("bzu_library", t)
        for i, t in rasa_yaml(show("BZU-Library-Chatbot/Rasa", "data/nlu.yml").decode())
        if i == "bot_challenge_en"
    ]
    clinc = json.loads(show("clinc/oos-eval", "data/data_full.json"))
    looks += [("clinc150_inscope", t) for t, i in clinc["test"] if i == "are_you_a_bot"]
    seen, unique = set(), []
    for source, text in looks:
        if text and text not in seen:
            seen.add(text)
            unique.append((source, text))
    unique.sort(key=lambda pair: (sha("look" + pair[1]), pair[1]))
    rows += [(source, text, LOOKALIKE) for source, text in unique[:max_lookalikes]]
    return rows


# ---------------------------------------------------------------- domain chatbots


def riverton_rows():
    plan = [
        ("harshilkhara_college", "harshilkhara/College-Chatbot", "data/nlu.md", rasa_md),
        ("akarshjoice_nitc", "akarshjoice/ChatBot-Using-Rasa-and-Python", "Rasa/data/nlu.md", rasa_md),
        ("abhikb_college", "abhik-b/college-enquiry-chatbot", "intents.json", intents_json),
        ("1shweta3_vit", "1shweta3/Chatbot-for-College-website", "intents.json", intents_json),
        ("harshgupta_ips", "harshgupta1806/College-Chatbot", "ml model/intents.json", intents_json_tolerant),
    ]
    rows = []
    for source, repo, path, parse in plan:
        for tag, text in parse(show(repo, path).decode()):
            label = label_riverton(repo, tag, text)
            if label is not None:
                rows.append((source, text, label))
    return rows


def library_rows():
    rows = []
    pairs = rasa_md(show("hdilab/library-chatbot", "data/nlu.md").decode())
    # location_directions holds 685 template fills ("How do I get from <building> to <building>"):
    # keep 10 of them (lowest sha256) so one campus-map intent does not swamp the set.
    directions = sorted({t for i, t in pairs if i == "location_directions"}, key=lambda t: (sha("dir" + t), t))[:10]
    for tag, text in pairs:
        if text.startswith("/"):  # button payloads such as "/plagiarism_tutorial_in"
            continue
        if tag == "location_directions" and text not in directions:
            continue
        label = label_library("hdilab/library-chatbot", tag, text)
        if label is not None:
            rows.append(("hdilab_uta_library", text, label))
    for tag, text in rasa_yaml(show("BZU-Library-Chatbot/Rasa", "data/nlu.yml").decode()):
        label = label_library("BZU-Library-Chatbot/Rasa", tag, text)
        if label is not None:
            rows.append(("bzu_library", text, label))
    return rows


# ---------------------------------------------------------------- writing


def clean(rows, seen=None, *, key=lambda text: text, existing=None):
    """Drop empty, over-long (> 1000 characters) and duplicate texts (the same `key` of the text with its
    ends trimmed, exact by default; the first occurrence wins, and `seen` carries the keys across calls);
    with `existing`, also the texts whose key is in it. Returns (kept, dropped counts)."""
    kept, seen = [], set() if seen is None else seen
    dropped = {"empty": 0, "too_long": 0, "duplicate": 0} | ({} if existing is None else {"in_existing_sets": 0})
    for source, text, label in rows:
        text = text.strip()
        if not text:
            dropped["empty"] += 1
        elif len(text) > 1000:
            dropped["too_long"] += 1
        elif existing is not None and key(text) in existing:
            dropped["in_existing_sets"] += 1
        elif key(text) in seen:
            dropped["duplicate"] += 1
        else:
            seen.add(key(text))
            kept.append((source, text, label))
    return kept, dropped


def held_out(text: str) -> bool:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 5 < 3


def write(pack: str, name: str, rows) -> dict[str, int]:
    slot = SLOT[pack]
    header = ["source", "group", slot, "text", "expected_action", "expected_topic", "expected_passage_ids"]
    counts = {}
    for part, keep in (("tune", False), ("heldout", True)):
        path = OUT[pack] / f"{name}_{part}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        chosen = [row for row in rows if held_out(row[1]) == keep]
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            for source, text, (action, topic, passages, group) in chosen:
                writer.writerow([source, group, "unknown", text, action, topic, passages])
        counts[part] = len(chosen)
    return counts


def main() -> None:
    report = {}
    sets = {
        ("riverton", "college_chatbot"): riverton_rows(),
        ("harbourview_library", "library_chatbot"): library_rows(),
    }
    shared = {"injections": deepset_rows(), "out_of_scope": clinc_rows(), "person_requests": person_rows()}
    for name, rows in shared.items():
        for pack in OUT:
            sets[(pack, name)] = rows
    for (pack, name), rows in sets.items():
        kept, dropped = clean(rows)
        counts = write(pack, name, kept)
        groups: dict[str, int] = {}
        for _, _, label in kept:
            groups[label[3]] = groups.get(label[3], 0) + 1
        report[f"{pack}/{name}"] = {"rows": len(kept), **counts, "dropped": dropped, "groups": groups}
    report["commits"] = {repo: commit_of(repo) for repo in SOURCES}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
    os._exit(0)  # pyarrow's threads can abort the interpreter's normal shutdown
