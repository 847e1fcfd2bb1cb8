"""`devstack eval`: score a labelled CSV of turns against a desk's understanding and policy.

A desk author's tool (and the tests'): it runs each turn through `understand` and the policy, exactly
as the turn function does, and compares what came out with what the file expects. No AWS, no model:
thousands of turns a second.

The file (UTF-8 CSV with a header) holds the turn's text in `text` (or `user_utterance`, so a
scripted-turns file scores as it is) and any of:

- `expected_action`: one action; alternatives joined by `|`, any of which is right (the first is the
  preferred one, used as the true class when none came out); or `!action`, anything but that one.
- `expected_topic`: the pack topic that must decide the turn (an inform's or an abstention's).
- `expected_passage_ids`: the handbook rows (`;`-joined) an inform's prompt must hold.
- `expected_<slot>`: the value a slot of the frame must hold after the turn.
- `<slot>`: the value a slot holds before the turn (the state the turn meets).
- `conversation_id` (and `turn_id`): rows of one conversation run in order on one state; without it
  every row is a single turn on a fresh state.
- `group` (or `topic`): what the row is about, for figures per group; `source`, `note`: kept, unread.
- `expected_fallback`: a scripted-turns file's column (whether the fixed fallback answers the turn);
  unread, since no reply is generated here.

A blank cell expects nothing. Any other column is an error naming it, so a typo never silently checks
nothing. A row is right when every expectation it states holds.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dialogue.actions import Action
from dialogue.pack import DomainPack, PackError
from dialogue.pack.loader import read_csv_records
from dialogue.policy import next_state, turn_topic
from dialogue.realize import passage_ids
from dialogue.state import DialogueState
from dialogue.understanding import understand

TEXT_COLUMNS = ("text", "user_utterance")
GROUP_COLUMNS = ("group", "topic")
FREE_COLUMNS = ("source", "note", "turn_id", "conversation_id", "expected_fallback")
EXPECTED = "expected_"
NONE = "-"
"""How the tables write "no topic" and the true class of a row that only forbids an action."""


class EvalError(PackError):
    """A labelled file that cannot be scored: its line and column say why."""


@dataclass(frozen=True)
class ExpectedAction:
    """What a row accepts: some actions (the first preferred), or anything but some."""

    accepted: tuple[Action, ...] = ()
    forbidden: frozenset[Action] = frozenset()

    @classmethod
    def parse(cls, cell: str) -> ExpectedAction | None:
        cell = cell.strip()
        if not cell:
            return None
        if cell.startswith("!"):
            return cls(forbidden=frozenset(Action(part.strip()) for part in cell[1:].split("|")))
        return cls(accepted=tuple(Action(part.strip()) for part in cell.split("|")))

    def allows(self, action: Action) -> bool:
        if self.accepted:
            return action in self.accepted
        return action not in self.forbidden

    def true_class(self, action: Action) -> str:
        """The row's class for precision and recall: what came out when it was right, else the
        preferred action (or `-` for a row that only forbids)."""
        if self.allows(action):
            return str(action)
        return str(self.accepted[0]) if self.accepted else NONE

    def __str__(self) -> str:
        if self.accepted:
            return "|".join(self.accepted)
        return "!" + "|".join(sorted(self.forbidden))


@dataclass(frozen=True)
class Case:
    """One labelled turn."""

    line: int
    conversation: str
    text: str
    group: str
    before: dict[str, str]
    action: ExpectedAction | None
    topic: str | None
    rows: tuple[str, ...] | None
    slots: dict[str, str]


@dataclass(frozen=True)
class Outcome:
    """What one turn got, and which of its expectations failed."""

    case: Case
    action: Action
    topic: str | None
    rows: tuple[str, ...]
    slots: dict[str, str]
    failed: tuple[str, ...]

    @property
    def right(self) -> bool:
        return not self.failed


def read_cases(path: Path, pack: DomainPack) -> list[Case]:
    """The labelled turns of `path`, checked against the pack's frame, actions and topics."""
    header, records = read_csv_records(path)
    slots = set(pack.frame.slot_names)
    text_column = next((name for name in TEXT_COLUMNS if name in header), None)
    if text_column is None:
        raise EvalError(f"{path}: the header needs a `text` (or `user_utterance`) column")
    known = {
        *TEXT_COLUMNS, *GROUP_COLUMNS, *FREE_COLUMNS, *slots,
        f"{EXPECTED}action", f"{EXPECTED}topic", f"{EXPECTED}passage_ids", *(EXPECTED + slot for slot in slots),
    }  # fmt: skip
    strange = [name for name in header if name not in known]
    if strange:
        raise EvalError(f"{path}: columns {strange} name nothing this desk's frame or the eval knows")
    group_column = next((name for name in GROUP_COLUMNS if name in header), None)
    topics = {topic.name for topic in pack.spec.topics}
    cases = []
    for line, record in records:
        where = f"{path}, row at line {line}"
        try:
            action = ExpectedAction.parse(record.get(f"{EXPECTED}action", ""))
        except ValueError:
            raise EvalError(f"{where}: expected_action names no action of the policy") from None
        topic = record.get(f"{EXPECTED}topic", "").strip() or None
        if topic is not None and topic not in topics:
            raise EvalError(f"{where}: expected_topic names no topic of the pack")
        rows_cell = record.get(f"{EXPECTED}passage_ids", "").strip()
        rows = tuple(filter(None, (part.strip() for part in rows_cell.split(";")))) if rows_cell else None
        if rows and (unknown := [row for row in rows if row not in pack.passages]):
            raise EvalError(f"{where}: expected_passage_ids names rows the handbook lacks: {unknown}")
        before = {slot: record[slot].strip() for slot in slots if record.get(slot, "").strip()}
        expected_slots = {
            slot: record[EXPECTED + slot].strip() for slot in slots if record.get(EXPECTED + slot, "").strip()
        }
        for slot, value in (*before.items(), *expected_slots.items()):
            if value not in pack.frame.slot(slot).values:
                raise EvalError(f"{where}: {slot} never holds that value")
        text = record[text_column]
        if not text.strip():
            raise EvalError(f"{where}: the {text_column} cell is empty")
        group = record.get(group_column, "").strip() if group_column else ""
        cases.append(
            Case(
                line=line,
                conversation=record.get("conversation_id", "").strip() or f"line {line}",
                text=text,
                group=group or (str(action.accepted[0]) if action and action.accepted else NONE),
                before=before,
                action=action,
                topic=topic,
                rows=rows,
                slots=expected_slots,
            )
        )
    return cases


def _conversations(cases: Sequence[Case]) -> list[list[Case]]:
    """Rows grouped by conversation in file order (a row with no conversation is its own)."""
    grouped: dict[str, list[Case]] = {}
    for case in cases:
        grouped.setdefault(case.conversation, []).append(case)
    return list(grouped.values())


def run_case(case: Case, state: DialogueState, pack: DomainPack) -> tuple[Outcome, DialogueState]:
    """One turn through understanding and the policy, as the turn function runs it."""
    state = state.with_updates(case.before)
    understood = understand(case.text, pack, state.asked, answered_topic=state.answered_topic)
    after, action = next_state(state, understood, pack)
    topic = turn_topic(understood, action, state)
    rows = passage_ids(action, after, pack, topic) if action.uses_model else ()
    failed = []
    if case.action is not None and not case.action.allows(action):
        failed.append("action")
    if case.topic is not None and topic != case.topic:
        failed.append("topic")
    if case.rows is not None and rows != case.rows:
        failed.append("rows")
    failed += [f"{slot}" for slot, value in case.slots.items() if after.get(slot) != value]
    return Outcome(case, action, topic, rows, dict(after.slots), tuple(failed)), after


def evaluate(cases: Sequence[Case], pack: DomainPack) -> list[Outcome]:
    outcomes = []
    for conversation in _conversations(cases):
        state = DialogueState.new(pack.frame)
        for case in conversation:
            outcome, state = run_case(case, state, pack)
            outcomes.append(outcome)
    return sorted(outcomes, key=lambda outcome: outcome.case.line)


@dataclass
class Report:
    """The figures of one scored file."""

    file: str
    pack: str
    outcomes: list[Outcome]
    groups: dict[str, tuple[int, int]] = field(init=False)
    actions: dict[str, dict[str, float | int]] = field(init=False)
    topics: dict[str, dict[str, float | int]] = field(init=False)
    action_confusion: dict[str, Counter[str]] = field(init=False)
    topic_confusion: dict[str, Counter[str]] = field(init=False)

    def __post_init__(self) -> None:
        by_group: dict[str, list[bool]] = defaultdict(list)
        for outcome in self.outcomes:
            by_group[outcome.case.group].append(outcome.right)
        self.groups = {group: (sum(marks), len(marks)) for group, marks in by_group.items()}
        scored = [outcome for outcome in self.outcomes if outcome.case.action is not None]
        pairs = [
            (outcome.case.action.true_class(outcome.action), str(outcome.action))
            for outcome in scored
            if outcome.case.action
        ]
        self.action_confusion = _confusion(pairs)
        self.actions = _precision_recall(pairs)
        topic_pairs = [
            (outcome.case.topic, outcome.topic or NONE) for outcome in self.outcomes if outcome.case.topic is not None
        ]
        self.topic_confusion = _confusion([(truth or NONE, got) for truth, got in topic_pairs])
        self.topics = _precision_recall([(truth or NONE, got) for truth, got in topic_pairs])

    @property
    def right(self) -> int:
        return sum(outcome.right for outcome in self.outcomes)

    @property
    def share(self) -> float:
        return self.right / len(self.outcomes) if self.outcomes else 0.0

    @property
    def misses(self) -> list[Outcome]:
        return [outcome for outcome in self.outcomes if not outcome.right]

    def json_record(self) -> dict[str, object]:
        return {
            "file": self.file,
            "pack": self.pack,
            "rows": len(self.outcomes),
            "right": self.right,
            "share": round(self.share, 4),
            "groups": {group: {"right": right, "rows": rows} for group, (right, rows) in self.groups.items()},
            "actions": self.actions,
            "topics": self.topics,
            "action_confusion": {truth: dict(row) for truth, row in self.action_confusion.items()},
            "topic_confusion": {truth: dict(row) for truth, row in self.topic_confusion.items()},
            "misses": [_miss_record(outcome) for outcome in self.misses],
        }


def _confusion(pairs: Iterable[tuple[str, str]]) -> dict[str, Counter[str]]:
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for truth, got in pairs:
        table[truth][got] += 1
    return dict(sorted(table.items()))


def _precision_recall(pairs: Sequence[tuple[str, str]]) -> dict[str, dict[str, float | int]]:
    classes = sorted({label for pair in pairs for label in pair})
    figures: dict[str, dict[str, float | int]] = {}
    for label in classes:
        predicted = sum(got == label for _, got in pairs)
        actual = sum(truth == label for truth, _ in pairs)
        hits = sum(truth == got == label for truth, got in pairs)
        figures[label] = {
            "precision": round(hits / predicted, 4) if predicted else 0.0,
            "recall": round(hits / actual, 4) if actual else 0.0,
            "support": actual,
        }
    return figures


def _miss_record(outcome: Outcome) -> dict[str, object]:
    case = outcome.case
    return {
        "line": case.line,
        "group": case.group,
        "text": case.text,
        "failed": list(outcome.failed),
        "action": str(outcome.action),
        "expected_action": str(case.action) if case.action else None,
        "topic": outcome.topic,
        "expected_topic": case.topic,
        "rows": list(outcome.rows),
        "expected_rows": list(case.rows) if case.rows is not None else None,
        "slots": {slot: outcome.slots[slot] for slot in case.slots},
        "expected_slots": case.slots,
    }


def score_file(path: Path, pack: DomainPack) -> Report:
    return Report(file=str(path), pack=pack.spec.domain.name, outcomes=evaluate(read_cases(path, pack), pack))


def _table(title: str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    body = [list(map(str, header)), *[[str(cell) for cell in row] for row in rows]]
    widths = [max(len(row[column]) for row in body) for column in range(len(header))]
    lines = [title] + [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in body
    ]
    return "\n".join(lines)


def _figures_table(title: str, figures: dict[str, dict[str, float | int]]) -> str:
    return _table(
        title,
        ("class", "precision", "recall", "support"),
        ((label, f"{f['precision']:.1%}", f"{f['recall']:.1%}", f["support"]) for label, f in figures.items()),
    )


def _confusion_table(title: str, table: dict[str, Counter[str]]) -> str:
    columns = sorted({got for row in table.values() for got in row})
    return _table(
        f"{title} (rows: expected, columns: got)",
        ("expected", *columns),
        ((truth, *(row.get(got, "") for got in columns)) for truth, row in table.items()),
    )


def _short(text: str, limit: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe_miss(outcome: Outcome) -> str:
    """What a missed row got and what it expected instead, for each expectation that failed:
    `got abstain_hand_off fees; expected action inform, rows H03`."""
    case = outcome.case
    expected = ", ".join(
        part
        for part in (
            f"action {case.action}" if "action" in outcome.failed else "",
            f"topic {case.topic}" if "topic" in outcome.failed else "",
            f"rows {';'.join(case.rows or ())}" if "rows" in outcome.failed else "",
            *(f"{slot}={case.slots[slot]}" for slot in outcome.failed if slot in case.slots),
        )
        if part
    )
    got = f"{outcome.action}" + (f" {outcome.topic}" if outcome.topic else "")
    got += f" [{';'.join(outcome.rows)}]" if outcome.rows else ""
    return f"got {got}; expected {expected}"


def render(report: Report, *, max_misses: int | None = 50) -> str:
    """The report as a person reads it: the share, figures per group, per action and per topic, the
    confusion tables and the misses."""
    parts = [
        f"{report.file} against {report.pack}: {report.right} of {len(report.outcomes)} right ({report.share:.1%})",
        _table(
            "by group",
            ("group", "right", "rows", "share"),
            ((group, right, rows, f"{right / rows:.1%}") for group, (right, rows) in sorted(report.groups.items())),
        ),
    ]
    if report.actions:
        parts += [_figures_table("actions", report.actions), _confusion_table("actions", report.action_confusion)]
    if report.topics:
        parts += [_figures_table("topics", report.topics), _confusion_table("topics", report.topic_confusion)]
    misses = report.misses
    if misses:
        shown = misses if max_misses is None else misses[:max_misses]
        lines = [f"misses ({len(misses)}{'' if len(shown) == len(misses) else f', first {len(shown)}'})"]
        for outcome in shown:
            case = outcome.case
            lines.append(f"  line {case.line} ({case.group}): {describe_miss(outcome)}: {_short(case.text)}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def dump_json(report: Report) -> str:
    return json.dumps(report.json_record(), ensure_ascii=False)
