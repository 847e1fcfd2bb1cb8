"""`devstack check-pack PATH`: every check the tests run on the desks under `data/`, on a pack anywhere.

Each check reads the pack's own files and says what it found in one line; a check that fails also
names every row, turn or text at fault (`Check.findings`, printed under the table), so that the author
knows what to mend. A file a check needs and the pack lacks is a failure where the check cannot do
without it (`scripted_turns.csv`) and a skip where the desk may go without it (held-out sets). The
tests of `data/*` call these same functions, so a pack that passes here passes there.

| check            | what must hold                                                                   |
| ---------------- | -------------------------------------------------------------------------------- |
| loads            | the pack loads in both understanding profiles (schema, placeholders, references); |
|                  | says the pack format it read and each table it defaulted (dialogue.pack.formats)  |
| texts            | every action's and topic's text renders for every state, in both profiles        |
| scripted turns   | `scripted_turns.csv` through the local stack: each turn matches, each gets a reply, |
|                  | and no generated reply is replaced by the fallback unless `expected_fallback` says |
| topic cases      | each `topic_cases*.csv` scores at least 95% (a file below names its misses);       |
|                  | `topic_cases.csv` covers every topic                                               |
| controls         | `screen_controls.csv` screens; rows with `expected_label` get that label          |
| seed floor       | the seed's two rules word for word; every turn of the desk's sets they flag is    |
|                  | refused or lies in a benign exception it names, and each exception is needed      |
| domain words     | no identifier or string of the shared code names this desk's words; the pack     |
|                  | names no other desk                                                              |
| examples         | no held-out text (`*_heldout*.csv`) is an example (where the desk has            |
|                  | examples.toml); each one that is, is named                                       |
"""

from __future__ import annotations

import ast
import itertools
import os
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dialogue.actions import Action
from dialogue.normalize import normalize
from dialogue.pack import (
    PACK_DIR_ENV,
    PROFILE_ENV,
    DomainPack,
    PackError,
    ScriptedTurn,
    forget_loaded_packs,
    load_pack,
)
from dialogue.pack.loader import read_csv_records
from dialogue.replies import fixed_reply, reply_fields
from dialogue.state import DialogueState
from dialogue.understanding import understand

if TYPE_CHECKING:
    from devstack.replay import ReplayedTurn

ROOT = Path(__file__).resolve().parents[1]
CODE_DIRS = ("layers", "functions", "realizer_container", "devstack")
STARTER_PATH = "devstack/starter"
STARTER_DIR = ROOT / STARTER_PATH
SIMULATION_MODULES = frozenset({
    "devstack/month.py", "devstack/faults.py", "devstack/history.py", "devstack/desk_walk.py",
    "devstack/verify_audit.py", "devstack/screenshots.py",
})  # fmt: skip
"""devstack's modules that make up a world to run the stack in, not code a desk runs on: a simulated
month (residents on weekdays and weekends, an outage), AWS faults on cue, a written history, a staff
member's scripted pass and session, the screenshots' chosen drafts. Their words are the simulation's:
a desk may use them."""
PLAIN_WORDS = frozenset({"unknown", "yes", "no"})
"""Slot values that are plain English and may appear in code (every slot's start, a yes/no slot's)."""
TOPIC_GOAL = 0.95
CASE_GROUPS = ("uncovered", "off_topic", "statement")
"""The groups a desk's topic_cases.csv holds besides its topics."""
SHIPPED_TOPIC_CASES = 80
SHIPPED_FLAGGED_TURNS = 20
"""The floors the tests set for a desk under data/; check-pack names them and passes a smaller start."""
SEED_INJECTION = r"\b(ignore|instruction|system prompt|developer message)\b"
SEED_STAFF_ONLY = r"\b(approved|approve|guaranteed|guarantee|skip staff|before staff check)\b"
SEED_RULES = {"injection_rules": SEED_INJECTION, "staff_only_rules": SEED_STAFF_ONLY}
"""The seed's two screening rules, as the lesson writes them: every desk carries them word for word."""


@dataclass(frozen=True)
class Check:
    """One check's verdict: passed, failed, or skipped (None) for a file the desk may go without."""

    name: str
    passed: bool | None
    detail: str
    findings: tuple[str, ...] = ()
    """Each row, turn or text at fault, in full, one a line (the detail names the first)."""


# --- texts -------------------------------------------------------------------------------------------


def render_every_text(pack: DomainPack) -> int:
    """Render every action's fixed and template text, and every topic's, for every state the frame
    allows; return how many were rendered. Raises AssertionError naming the first that does not render."""
    rendered = 0
    for values in itertools.product(*(slot.values for slot in pack.frame.slots)):
        state = DialogueState.from_slots(pack.frame, dict(zip(pack.frame.slot_names, values, strict=True)))
        for action in pack.actions:
            topics = [None, *(t.name for t in pack.spec.topics)] if action is Action.ABSTAIN_HAND_OFF else [None]
            texts = [fixed_reply(action, state, pack, topic) for topic in topics]
            if template := pack.action(action).template_text:
                texts.append(template.format_map(reply_fields(state.slots, pack, "facts")))
            for text in texts:
                if not text.strip() or set(text) & set("{}"):
                    raise AssertionError(f"{action} for {dict(zip(pack.frame.slot_names, values, strict=True))}")
                rendered += 1
    return rendered


# --- the seed's floor --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FloorReport:
    flagged: int
    wrong: list[str]
    unneeded: list[str]
    missing_rules: list[str]


def case_texts(desk: Path) -> list[tuple[str, str]]:
    """(where, text) for every turn of every test set of the desk: its own sets and those from outside
    (every CSV with a `text` or `user_utterance` column but the handbook, whose rows are no turns)."""
    found = []
    for path in sorted([*desk.glob("*.csv"), *desk.glob("eval/*.csv")]):
        if path.name == "handbook.csv":
            continue
        header, records = read_csv_records(path)
        column = next((name for name in ("text", "user_utterance") if name in header), None)
        if column is not None:
            found += [(f"{path.relative_to(desk)}:{line}", record[column]) for line, record in records]
    return found


def floor_rule_exceptions(pack: DomainPack, table: str) -> tuple[str, ...] | None:
    """The benign exceptions the desk's copy of the seed rule yields to; None when it has no copy."""
    rules = [rule for rule in getattr(pack.spec.understanding, table) if rule.pattern == SEED_RULES[table]]
    return rules[0].unless if len(rules) == 1 else None


def _covered(text: str, pattern: str, pack: DomainPack, exceptions: Sequence[str]) -> bool:
    spans = [match.span() for name in exceptions for match in pack.compiled.benign[name].finditer(text)]
    return all(
        any(start <= match.start() and match.end() <= end for start, end in spans)
        for match in re.finditer(pattern, text, re.IGNORECASE)
    )


def seed_floor(pack: DomainPack, desk: Path) -> FloorReport:
    """Every turn the seed's rules flag in the desk's sets is refused, unless every word they caught
    lies inside a benign exception the desk's copy names; every exception named is needed."""
    exceptions = {table: floor_rule_exceptions(pack, table) for table in SEED_RULES}
    missing = [table for table, named in exceptions.items() if named is None]
    if missing:
        return FloorReport(0, [], [], missing)
    used: Counter[str] = Counter()
    flagged, wrong = 0, []
    for where, text in case_texts(desk):
        normalized = normalize(text)
        for table, pattern in SEED_RULES.items():
            # The seed matched the raw text; the desk matches the normalized text, which sees through more.
            if not (re.search(pattern, text, re.IGNORECASE) or re.search(pattern, normalized, re.IGNORECASE)):
                continue
            flagged += 1
            if understand(text, pack).must_refuse:
                continue
            named = exceptions[table] or ()
            helped = [name for name in named if _covered(normalized, pattern, pack, (name,))]
            if helped or _covered(normalized, pattern, pack, named):
                used.update(helped or named)
            else:
                wrong.append(f"{where}: flagged by the seed's {table} but not refused")
    named_all = {name for named in exceptions.values() for name in named or ()}
    return FloorReport(flagged, wrong, sorted(named_all - set(used)), [])


# --- domain words ------------------------------------------------------------------------------------


def domain_words(pack: DomainPack, folder: str) -> set[str]:
    """A desk's own words: its folder's and desk's names, its programs' ids and names, its slot values
    (but the plain ones)."""
    words = {folder, pack.spec.domain.name}
    for program in pack.spec.programs:
        words |= {program.id, program.display_name}
    for slot in pack.frame.slots:
        words |= set(slot.values) - PLAIN_WORDS
    return words


def desk_names(pack: DomainPack, folder: str) -> set[str]:
    """The words that name a desk and no other: its folder, its name and its programs' display names."""
    return {folder, pack.spec.domain.name, *(program.display_name for program in pack.spec.programs)}


def word_pattern(words: set[str]) -> re.Pattern[str]:
    """Whole words, any case; an identifier's underscores also match spaces or hyphens ("front desk")."""
    alternatives = sorted((re.escape(word).replace("_", "[_ -]") for word in words), key=len, reverse=True)
    return re.compile(rf"(?<![\w-])(?:{'|'.join(alternatives)})(?![\w-])", re.IGNORECASE)


def code_files(root: Path = ROOT) -> list[Path]:
    """Every file of the shared code: the core, the functions, the realizer and devstack, but the
    starter pack (a pack's data, checked for other desks' names instead) and devstack's simulation
    (`SIMULATION_MODULES`)."""
    files = []
    for folder in CODE_DIRS:
        for path in sorted((root / folder).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix in {".pyc", ".png"}:
                continue
            where = path.relative_to(root).as_posix()
            if where.startswith(STARTER_PATH + "/") or where in SIMULATION_MODULES:
                continue
            files.append(path)
    return files


def find_words(pattern: re.Pattern[str], files: Sequence[Path], root: Path) -> list[str]:
    """`file:line: 'word'` for each line of `files` the pattern finds a word in (every line: for a
    pack's own files)."""
    found = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if match := pattern.search(line):
                found.append(f"{path.relative_to(root)}:{number}: {match.group(0)!r}")
    return found


_NAME_FIELDS = ("id", "attr", "name", "asname", "arg", "module", "rest")
"""The fields of Python's syntax tree that hold an identifier: a name, an attribute, a definition's
name, an import's names, an argument, a keyword, a pattern's capture."""


def code_fragments(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) for what a file of the shared code says: each identifier and string literal of a
    Python file, but its comments and its documentation (docstrings, and any other string standing
    alone as a statement); each line of another file (a Makefile, a Dockerfile, a requirements list)
    but its comment lines. A string spanning lines yields each of its lines."""
    source = path.read_text(encoding="utf-8", errors="replace")
    try:
        tree = ast.parse(source, filename=str(path)) if path.suffix == ".py" else None
    except SyntaxError:
        tree = None
    if tree is None:
        for number, text in enumerate(source.splitlines(), start=1):
            if not text.lstrip().startswith("#"):
                yield number, text
        return
    documentation = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }
    for node in ast.walk(tree):
        line: int = getattr(node, "lineno", 0)
        for field in _NAME_FIELDS:
            if isinstance(value := getattr(node, field, None), str):
                yield line, value
        if isinstance(node, ast.Global | ast.Nonlocal):
            yield from ((line, name) for name in node.names)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in documentation:
            yield from ((line + offset, part) for offset, part in enumerate(node.value.splitlines()))


def find_code_words(pattern: re.Pattern[str], files: Sequence[Path], root: Path) -> list[str]:
    """`file:line: 'word'` for each identifier or string of the shared code (`code_fragments`) that the
    pattern finds a word in; comments, docstrings and commented lines do not count."""
    found: dict[tuple[str, int, str], None] = {}
    for path in files:
        where = str(path.relative_to(root))
        for line, text in sorted(code_fragments(path)):
            for match in pattern.finditer(text):
                found[(where, line, match.group(0))] = None
    return [f"{where}:{line}: {word!r}" for where, line, word in found]


def other_desks(desk: Path, root: Path = ROOT) -> dict[str, DomainPack]:
    """The desks under the repository's data/, but `desk` itself."""
    found = {}
    for domain in sorted((root / "data").glob("*/domain.toml")):
        if domain.parent.resolve() != desk.resolve():
            found[domain.parent.name] = load_pack(domain.parent)
    return found


def pack_files(desk: Path) -> list[Path]:
    """The pack's own files: its tables, handbook and test sets (not `eval/`, which holds outside text)."""
    return sorted(path for path in desk.iterdir() if path.is_file() and path.suffix in {".toml", ".csv"})


# --- examples ----------------------------------------------------------------------------------------


def example_texts(pack: DomainPack) -> set[str]:
    examples = pack.examples
    if examples is None:
        return set()
    found = set(examples.other)
    for table in (examples.topics, examples.intents, examples.screens):
        for texts in table.values():
            found.update(texts)
    for values in examples.values.values():
        for texts in values.values():
            found.update(texts)
    return {normalize(text) for text in found}


HELD_OUT = "*_heldout*.csv"
"""A held-out set: scored, never tuned on, never drawn from (`topic_cases_heldout.csv`,
`topic_cases_heldout2.csv`, `eval/injections_heldout.csv`), in the pack's folder or its `eval/`."""
TUNING = "*_tune.csv"
"""A tuning part of an outside set (`eval/injections_tune.csv`): examples may be drawn from it."""
OWN_CASES = "topic_cases.csv"
"""The desk's own topic cases: examples may be drawn from them too."""


@dataclass(frozen=True)
class SetText:
    """One turn of a test set: its file and line (relative to the pack), and its text as written."""

    where: str
    text: str

    def __str__(self) -> str:
        return f"{self.where}: {' '.join(self.text.split())!r}"


def held_out_files(desk: Path) -> list[Path]:
    """The held-out sets (`*_heldout*.csv`) in the pack's folder and its `eval/`."""
    return sorted([*desk.glob(HELD_OUT), *(desk / "eval").glob(HELD_OUT)])


def drawn_from_files(desk: Path) -> list[Path]:
    """The sets examples may be drawn from: `topic_cases.csv` and the tuning parts (`*_tune.csv`)."""
    own = [desk / OWN_CASES] if (desk / OWN_CASES).is_file() else []
    return own + sorted([*desk.glob(TUNING), *(desk / "eval").glob(TUNING)])


def set_texts(paths: Sequence[Path], desk: Path) -> list[SetText]:
    """Every turn of `paths` (their `text` or `user_utterance` column), with its file and line."""
    found = []
    for path in paths:
        header, records = read_csv_records(path)
        column = next((name for name in ("text", "user_utterance") if name in header), None)
        if column is None:
            raise PackError(f"{path.relative_to(desk)}: the header needs a `text` column")
        found += [SetText(f"{path.relative_to(desk)}:{line}", record[column]) for line, record in records]
    return found


def _comparable(text: str) -> str:
    return normalize(" ".join(text.split()))


def leaked_examples(pack: DomainPack, desk: Path) -> tuple[int, list[SetText]]:
    """How many held-out texts the desk has, and those that are examples though neither its
    `topic_cases.csv` nor a tuning part holds them (a held-out row may repeat a tuning row word for
    word: public sets hold duplicates; the example was drawn from the other)."""
    held_out = set_texts(held_out_files(desk), desk)
    drawn_from = {_comparable(turn.text) for turn in set_texts(drawn_from_files(desk), desk)}
    examples = example_texts(pack)
    leaked = [turn for turn in held_out if (text := _comparable(turn.text)) in examples and text not in drawn_from]
    return len(held_out), leaked


def _first_of(items: Sequence[object]) -> str:
    """The first of `items`, and how many more the findings list under the table."""
    more = f" and {len(items) - 1} more (each listed below)" if len(items) > 1 else ""
    return f"{items[0]}{more}"


# --- the command -------------------------------------------------------------------------------------


@contextmanager
def _serving(desk: Path, profile: str | None) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in (PACK_DIR_ENV, PROFILE_ENV)}
    os.environ[PACK_DIR_ENV] = str(desk.resolve())
    if profile:
        os.environ[PROFILE_ENV] = profile
    forget_loaded_packs()
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        forget_loaded_packs()


def _scripted(pack: DomainPack, desk: Path, profile: str | None) -> Check:
    from devstack.replay import replay_conversation
    from devstack.stack import local_stack
    from dialogue.pack import read_scripted_turns, scripted_turns_by_conversation

    name = "scripted turns"
    path = desk / "scripted_turns.csv"
    if not path.exists():
        return Check(name, False, "scripted_turns.csv is missing: a desk needs sample conversations")
    turns = read_scripted_turns(path, pack.frame)
    rows: list[ReplayedTurn] = []
    wrong: list[str] = []
    silent: list[str] = []
    fell: list[tuple[str, ReplayedTurn]] = []
    findings: list[str] = []
    with _serving(desk, profile), local_stack() as stack:
        for conversation in scripted_turns_by_conversation(turns).values():
            replayed = replay_conversation(stack, conversation)
            rows += replayed
            for turn, row in zip(conversation, replayed, strict=True):
                where = f"{turn.conversation_id}/{turn.turn_id}"
                if row.matches is False:
                    wrong.append(where)
                    findings.append(f"{where} {turn.user_utterance!r}: {_turn_miss(turn, row)}")
                if row.status != "final" or not row.final_reply:
                    silent.append(where)
                    findings.append(f"{where}: no reply shown (status {row.status})")
                if row.fallback_used != bool(turn.expected_fallback):
                    fell.append((where, row))
                    findings.append(f"{where}: {_fallback_miss(row)}")
    generated, fallbacks = sum(row.uses_model for row in rows), sum(row.fallback_used for row in rows)
    detail = f"{len(rows) - len(wrong)} of {len(rows)} turns match"
    if wrong:
        detail += f"; not: {', '.join(wrong[:5])}"
    detail += "; every turn got a reply" if not silent else f"; no reply shown: {', '.join(silent[:5])}"
    if fell:
        unexpected = [where for where, row in fell if row.fallback_used]
        missing = [where for where, row in fell if not row.fallback_used]
        detail += f"; replaced by the fallback: {', '.join(unexpected[:5])}" if unexpected else ""
        detail += f"; shown, though expected_fallback is true: {', '.join(missing[:5])}" if missing else ""
    else:
        detail += f"; {generated} generated, {fallbacks or 'none'} replaced by the fallback"
        detail += " (as expected_fallback says)" if fallbacks else ""
    return Check(name, not wrong and not silent and not fell and bool(rows), detail, tuple(findings))


def _turn_miss(turn: ScriptedTurn, row: ReplayedTurn) -> str:
    """What a scripted turn expected that it did not get: the action, and each slot that differs."""
    parts = []
    if row.action_matches is False:
        parts.append(f"expected {turn.expected_action}, got {row.action}")
    parts += [
        f"expected {slot}={value}, got {row.slots[slot]}"
        for slot, value in turn.expected_slots.items()
        if row.slots[slot] != value
    ]
    return "; ".join(parts)


def _fallback_miss(row: ReplayedTurn) -> str:
    """Why a turn's fallback is a failure: the screens a generated reply failed, with its text (the
    pack's own, worded by the template realizer), or a reply shown where the file expects the fallback."""
    if not row.fallback_used:
        return f"expected_fallback is true, but the {row.action} reply was shown"
    screens = ", ".join(row.screens_fired) or "none"
    return (
        f"the {row.action} reply was replaced by the fixed fallback (screens fired: {screens}); "
        f"its text fails them: {row.raw_reply!r}"
    )


def _topic_cases(pack: DomainPack, desk: Path) -> Check:
    from devstack.evaluate import describe_miss, score_file

    name = "topic cases"
    files = sorted(desk.glob("topic_cases*.csv"))
    if not files:
        return Check(name, False, "topic_cases.csv is missing: a desk needs questions for its topics")
    parts, ok, misses = [], True, []
    for path in files:
        report = score_file(path, pack)
        ok &= (passed := report.share >= TOPIC_GOAL)
        parts.append(f"{path.name} {report.right} of {len(report.outcomes)} ({report.share:.0%})")
        if not passed:
            misses += [
                f"{path.name}:{miss.case.line} ({miss.case.group}) {' '.join(miss.case.text.split())!r}: "
                + describe_miss(miss)
                for miss in report.misses
            ]
    own = desk / "topic_cases.csv"
    if own.exists():
        outcomes = score_file(own, pack).outcomes
        if len(outcomes) < SHIPPED_TOPIC_CASES:
            parts.append(f"{len(outcomes)} rows (a desk under data/ needs {SHIPPED_TOPIC_CASES})")
        if untested := untested_groups(pack, {outcome.case.group for outcome in outcomes}):
            ok = False
            parts.append(f"no case for {', '.join(untested)}")
    else:
        ok = False
        parts.append("topic_cases.csv is missing")
    if unused := unnamed_rows(pack):
        ok = False
        parts.append(f"handbook rows no topic or fact_rows entry names: {', '.join(unused)}")
    if misses:
        parts.append(f"missed: {_first_of(misses)}")
    return Check(name, ok, f"goal {TOPIC_GOAL:.0%}: " + "; ".join(parts), tuple(misses))


def untested_groups(pack: DomainPack, groups: set[str]) -> list[str]:
    """What a desk's topic cases must cover and `groups` lacks: every covered topic, and the labels
    `uncovered`, `off_topic` and `statement`."""
    wanted = [topic.name for topic in pack.spec.topics if topic.covered] + list(CASE_GROUPS)
    return [name for name in wanted if name not in groups]


def unnamed_rows(pack: DomainPack) -> list[str]:
    """Handbook rows that no topic and no fact_rows entry names: rows no reply can ever use."""
    named = {passage_id for topic in pack.spec.topics for _, passage_id in topic.all_rows()}
    named |= {passage_id for rows in pack.spec.fact_rows for passage_id in rows.passage_ids}
    return sorted(set(pack.passages) - named)


def _controls(pack: DomainPack, desk: Path) -> Check:
    from devstack.controls import read_controls, screen_controls

    name = "controls"
    path = desk / "screen_controls.csv"
    if not path.exists():
        return Check(name, False, "screen_controls.csv is missing: a desk needs replies that test its screens")
    controls = read_controls(path, pack)
    results = screen_controls(controls, pack, pack.spec.screens.profile)
    expected = [(c, r) for c, r in zip(controls, results, strict=True) if c.expected_label is not None]
    wrong = [c.control_id for c, r in expected if r.screen_label != c.expected_label]
    detail = f"{len(results)} screened ({pack.spec.screens.profile} profile); {len(expected) - len(wrong)} of {len(expected)} as expected"  # noqa: E501
    if wrong:
        detail += f"; not: {', '.join(wrong)}"
    # A file written before check-pack (format 1's) has no expected_label: say where it goes.
    lacking = f" ({path.name}: add an expected_label column, the label each reply must get)"
    return Check(name, not wrong and bool(expected), detail if expected else detail + lacking)


def _floor(pack: DomainPack, desk: Path) -> Check:
    report = seed_floor(pack, desk)
    if report.missing_rules:
        add = [
            f"an entry to [[understanding.{table}]] with a name and pattern = '{SEED_RULES[table]}'"
            for table in report.missing_rules
        ]
        detail = f"the seed's rule is not carried word for word in {report.missing_rules}: domain.toml, add "
        return Check("seed floor", False, detail + " and ".join(add))
    problems = report.wrong[:3] + [f"exception no case needs: {name}" for name in report.unneeded]
    detail = f"{report.flagged} flagged turns, each refused or benign" if not problems else "; ".join(problems)
    if not problems and report.flagged < SHIPPED_FLAGGED_TURNS:
        detail += f" (a desk under data/ needs {SHIPPED_FLAGGED_TURNS})"
    return Check("seed floor", not problems, detail)


def _domain_words(pack: DomainPack, desk: Path, root: Path) -> Check:
    found = find_code_words(word_pattern(domain_words(pack, desk.name)), code_files(root), root)
    others = other_desks(desk, root)
    names = set().union(*(desk_names(other, folder) for folder, other in others.items())) if others else set()
    in_pack = find_words(word_pattern(names), pack_files(desk), desk) if names else []
    problems = [f"code names this desk: {hit}" for hit in found] + [f"names another desk: {hit}" for hit in in_pack]
    detail = f"no shared code names this desk; no file names any of {len(others)} other desks"
    return Check("domain words", not problems, _first_of(problems) if problems else detail, tuple(problems))


def _examples(pack: DomainPack, desk: Path) -> Check:
    if pack.examples is None:
        return Check("examples", None, "no examples.toml: the desk reads turns by its rules")
    held_out, leaked = leaked_examples(pack, desk)
    if not held_out:
        return Check("examples", None, f"no held-out sets ({HELD_OUT}, here or in eval/) to check the examples against")
    if not leaked:
        return Check("examples", True, f"none of {held_out} held-out texts is an example")
    detail = f"{len(leaked)} of {held_out} held-out texts are examples; take each out of examples.toml: "
    return Check("examples", False, detail + _first_of(leaked), tuple(map(str, leaked)))


def check_pack(
    desk: Path,
    *,
    profile: str | None = None,
    root: Path = ROOT,
    only: Collection[str] | None = None,
) -> list[Check]:
    """Run every check on the pack in `desk` (`only`: those named, after `loads`); `profile` overrides
    its understanding profile; `root` is the repository whose code and other desks the domain-word
    check reads."""
    try:
        pack = load_pack(desk, profile=profile)
        other = load_pack(desk, profile="desk" if pack.understanding_profile == "lesson" else "lesson")
    except PackError as error:
        return [Check("loads", False, str(error))]
    shape = f"{len(pack.frame.slots)} slots, {len(pack.spec.topics)} topics, {len(pack.actions)} actions"
    read = f"{shape}; reads turns by the {pack.understanding_profile} profile; {pack.pack_format}"
    checks = [Check("loads", True, read)]
    runs: list[tuple[str, Callable[[], Check]]] = [
        (
            "texts",
            lambda: Check(
                "texts", True, f"{render_every_text(pack) + render_every_text(other)} texts rendered in both profiles"
            ),
        ),
        ("scripted turns", lambda: _scripted(pack, desk, profile)),
        ("topic cases", lambda: _topic_cases(pack, desk)),
        ("controls", lambda: _controls(pack, desk)),
        ("seed floor", lambda: _floor(pack, desk)),
        ("domain words", lambda: _domain_words(pack, desk, root)),
        ("examples", lambda: _examples(pack, desk)),
    ]
    if only is not None and (unknown := set(only) - {name for name, _ in runs}):
        raise ValueError(f"no check is called {sorted(unknown)}")
    for name, run in runs:
        if only is not None and name not in only:
            continue
        try:
            checks.append(run())
        except (PackError, AssertionError, ValueError) as error:
            checks.append(Check(name, False, str(error) or type(error).__name__))
    return checks


def check_table(desk: Path, checks: Sequence[Check]) -> str:
    from devstack.replay import format_table

    verdict = {True: "pass", False: "FAIL", None: "skip"}
    return format_table(f"Checks of the pack in {desk}", ["Check", "Result", "Found"],
                        [[check.name, verdict[check.passed], check.detail] for check in checks])  # fmt: skip


def check_findings(checks: Sequence[Check]) -> str:
    """What each failed check found, in full, under its name: the lines to print under the table."""
    parts = [
        "\n".join([f"{check.name}: what failed", *(f"  {finding}" for finding in check.findings)])
        for check in checks
        if check.passed is False and check.findings
    ]
    return "\n\n".join(parts)


def new_pack(name: str, directory: Path) -> Path:
    """Write the starter pack for a desk called `name` into `directory` (which must not exist yet)."""
    if directory.exists():
        raise PackError(f"{directory} already exists: new-pack writes a new folder")
    title = name.replace("_", " ").strip()
    display = title[:1].upper() + title[1:] + ("" if title.endswith("desk") else " desk")
    directory.mkdir(parents=True)
    for source in sorted(STARTER_DIR.iterdir()):
        if source.is_file():
            text = source.read_text(encoding="utf-8").replace("__DESK_NAME__", display)
            (directory / source.name).write_text(text, encoding="utf-8")
    return directory


NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{1,39}$")
"""A new desk's name: its folder's, in lower case with underscores."""
