"""`python -m devstack month`: a desk's first month, simulated on the local stack.

Time moves only through the stack's clock (devstack.stack.QueueClock, which the handlers read through
dialogue.clock and moto's SQS reads for delays and visibility): nothing sleeps, and a month runs in
minutes. Each simulated day:

- DynamoDB's TTL runs at midnight: every item whose `expires_at` has passed is deleted;
- residents open the chat through the day (fewer at weekends) and send two or three turns each, most of
  them generated; each reads its messages as the chat page does, from its cursor;
- on weekdays, staff open the console twice a day: each tab's first page is read as the console asks for
  it, and checked against the table's open items; most items are decided or answered (a claim released
  now and then), and the rest wait, as everything does over a weekend;
- the stream, the queues, the worker and the sweeper run as they would in AWS (`LocalStack.run_for`).

And on three days something goes wrong: the realizer is down for an hour; the dispatch function fails
for seventy minutes, past the stream mapping's hour, so its oldest records go to the failure queue and
no deadline is ever sent for them; and the pack changes (a program's id is renamed, so stored slots name
a value the new pack does not have) while replies are in flight.

Afterwards it checks what a desk needs to hold after a month: every turn is final; every chat shows
every reply and staff message; each console tab's first page lists every open item; the statistics
equal the decisions made; no draft was gone before its decision; the review queue holds every held reply
and only the shown replies drawn for a check, about the desk's rate of them (the draw's source is seeded
from the plan, so a run repeats); and the audit verifies. It prints the figures. Nothing here is tuned
to pass: a check that fails is a finding.
"""

from __future__ import annotations

import csv
import math
import random
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from devstack.stack import AUDIT_BUCKET, TABLE_NAME, LocalStack, local_stack
from dialogue.human_checks import use_draws
from dialogue.pack import get_pack
from dialogue.pack.schema import UNKNOWN

STAFF = ("desk-ana", "desk-ben")
CORRECTION = "A staff member checked this reply: the desk will contact you by the channel you chose."
HANDOFF_REPLY = "Hello from the desk: a member of staff will follow this up with you."


def resident_scripts(pack_dir: Path) -> list[tuple[str, ...]]:
    """What residents say, as whole conversations: the desk's scripted conversations (generated turns,
    a refusal, a hand-off, a question the handbook does not answer) and its example questions, one turn
    each. The desk's own data: the code names no desk."""
    conversations: dict[str, list[str]] = {}
    with (pack_dir / "scripted_turns.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            conversations.setdefault(row["conversation_id"], []).append(row["user_utterance"])
    scripts = [tuple(turns) for turns in conversations.values()]
    scripts += [(example,) for example in get_pack(pack_dir).spec.domain.examples]
    return scripts


def renamed_value(pack_dir: Path) -> tuple[str, str, tuple[str, ...]]:
    """The pack change: the program slot's first value gets a new id in a new version of the pack. Its
    slot, the value, and a scripted conversation whose first turn sets it (for residents mid-way)."""
    spec = get_pack(pack_dir).spec
    slot = spec.domain.program_slot
    value = next(v for v in spec.frame.slot(slot).values if v != UNKNOWN)
    with (pack_dir / "scripted_turns.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    first = next((r for r in rows if r["turn_id"] == "1" and r.get(f"expected_{slot}") == value), rows[0])
    script = tuple(r["user_utterance"] for r in rows if r["conversation_id"] == first["conversation_id"])
    return slot, value, script


@dataclass(frozen=True)
class MonthPlan:
    """How many days, how busy, and on which days (0-based) the outage, the dispatch failure and the
    pack change fall. `start` is a Monday."""

    days: int = 30
    residents_weekday: int = 10
    residents_weekend: int = 3
    outage_day: int = 8
    dispatch_failure_day: int = 15
    pack_change_day: int = 19
    staff_share: float = 0.8
    start: datetime = datetime(2026, 11, 2, tzinfo=UTC)
    seed: int = 24

    @classmethod
    def small(cls) -> MonthPlan:
        """Nine days (a weekend inside), a few residents a day, every fault: what `make test` runs."""
        return cls(
            days=9, residents_weekday=3, residents_weekend=1, outage_day=1, dispatch_failure_day=2, pack_change_day=3
        )


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class MonthReport:
    plan: MonthPlan
    figures: dict[str, int | float | str] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def render(self) -> str:
        lines = [f"A desk's month: {self.plan.days} simulated days from {self.plan.start:%Y-%m-%d} (a Monday)", ""]
        width = max(len(name) for name in self.figures)
        lines += [f"  {name:<{width}}  {value}" for name, value in self.figures.items()]
        lines += ["", "Afterwards:"]
        lines += [f"  [{'ok' if c.ok else 'FAILED'}] {c.name}: {c.detail}" for c in self.checks]
        return "\n".join(lines)


@dataclass
class _Chat:
    """A resident's chat page: its conversation, its cursor and what it has shown."""

    conversation_id: str
    day: int
    turns: int = 0
    after: int = 0
    shown: list[dict[str, Any]] = field(default_factory=list)


class _Month:
    def __init__(self, stack: LocalStack, plan: MonthPlan, pack_dir: Path) -> None:
        self.stack = stack
        self.plan = plan
        self.rng = random.Random(plan.seed)
        self.pack_dir = pack_dir
        self.counts: Counter[str] = Counter()
        self.chats: list[_Chat] = []
        self.staff_messages: Counter[str] = Counter()  # conversation id -> staff messages posted
        self.decisions: Counter[str] = Counter()  # human_review -> count
        self.closed = 0
        self.problems: dict[str, list[str]] = {
            "tabs": [],
            "chats": [],
            "drafts": [],
            "api": [],
        }
        self.realizer_up = True
        self.paused: list[tuple[_Chat, tuple[str, ...]]] = []
        self.scripts = resident_scripts(pack_dir)
        self.slot, self.renamed, self.change_script = renamed_value(pack_dir)

    # --- time ---------------------------------------------------------------------------------------

    def now(self) -> datetime:
        return self.stack.clock.now()

    def run_until(self, moment: datetime, step: float = 300) -> None:
        seconds = (moment - self.now()).total_seconds()
        if seconds > 0:
            self.stack.run_for(seconds, step=min(step, seconds), realizer=self.realizer_up)

    def expire_items(self) -> None:
        """DynamoDB's TTL: delete every item whose `expires_at` has passed."""
        epoch = int(self.now().timestamp())
        for item in self.stack.table_items():
            expires = item.get("expires_at", {}).get("N")
            if expires is not None and int(expires) <= epoch:
                self.stack.dynamodb.delete_item(TableName=TABLE_NAME, Key={"pk": item["pk"], "sk": item["sk"]})
                self.counts["items expired by TTL"] += 1

    # --- residents -----------------------------------------------------------------------------------

    def resident(self, day: int, script: tuple[str, ...] | None = None, *, pause_after: int | None = None) -> None:
        """A resident opens the chat and says `script` (a random conversation by default), reading the
        replies between turns; with `pause_after`, they stop after that many turns and come back later
        (`come_back`)."""
        created = self.stack.call_api("POST", "/conversations")
        if created.status != 201:
            self.problems["api"].append(f"POST /conversations answered {created.status}")
            return
        chat = _Chat(conversation_id=created.body["conversation_id"], day=day)
        self.chats.append(chat)
        self.counts["conversations"] += 1
        script = script or self.rng.choice(self.scripts)
        self.say(chat, script[:pause_after])
        if pause_after is not None:
            self.paused.append((chat, script[pause_after:]))

    def come_back(self) -> None:
        """The residents who paused say the rest of what they meant to."""
        paused, self.paused = self.paused, []
        for chat, rest in paused:
            self.say(chat, rest)

    def say(self, chat: _Chat, utterances: tuple[str, ...]) -> None:
        for text in utterances:
            answer = self.stack.call_api("POST", f"/conversations/{chat.conversation_id}/turns", {"text": text})
            if answer.status not in (200, 202):
                self.problems["api"].append(f"a turn answered {answer.status}")
                return
            chat.turns += 1
            self.counts["turns"] += 1
            self.counts["generated turns" if answer.status == 202 else "fixed-text turns"] += 1
            self.stack.run_for(15, step=15, realizer=self.realizer_up)
            self.poll(chat)

    def poll(self, chat: _Chat) -> dict[str, Any]:
        """What the chat page does: read the messages after its cursor, and show them."""
        page = self.stack.call_api(
            "GET", f"/conversations/{chat.conversation_id}/messages", query=f"after={chat.after}"
        )
        self.counts["message polls"] += 1
        if page.status != 200:
            self.problems["api"].append(f"GET messages answered {page.status}")
            return {}
        chat.shown.extend(page.body["messages"])
        chat.after = page.body["next_after"]
        return dict(page.body)

    def check_chat(self, chat: _Chat, when: str) -> None:
        """The chat shows a reply to every turn and every staff message, in order, none twice, none
        still awaited; read from its cursor and read whole, the same."""
        self.poll(chat)
        whole = self.stack.call_api("GET", f"/conversations/{chat.conversation_id}/messages", query="after=0").body
        expected = chat.turns + self.staff_messages[chat.conversation_id]
        indexes = [m["index"] for m in chat.shown]
        replies = [m for m in whole["messages"] if m["source"] == "assistant"]
        if whole["waiting"] or len(whole["messages"]) != expected or indexes != list(range(1, len(indexes) + 1)):
            self.problems["chats"].append(
                f"{when}: a chat shows {len(whole['messages'])} of {expected} messages (waiting {whole['waiting']})"
            )
        elif [m["index"] for m in whole["messages"]] != indexes or len(replies) != chat.turns:
            self.problems["chats"].append(f"{when}: a chat read from its cursor differs from the chat read whole")

    # --- staff ---------------------------------------------------------------------------------------

    def staff_api(self, method: str, path: str, body: Any = None, *, staff: str, query: str = "") -> Any:
        response = self.stack.call_staff_api(method, path, body, staff=staff, query=query)
        self.counts["staff requests"] += 1
        if response.status != 200:
            self.problems["api"].append(f"{method} {path.split('/')[2]} answered {response.status}")
            return None
        return response.body

    def open_items(self) -> dict[str, set[tuple[str, int]]]:
        """The table's open items per console tab: the truth a tab's first page is checked against."""
        tabs: dict[str, set[tuple[str, int]]] = {"held": set(), "drafted": set(), "handoffs": set()}
        for item in self.stack.table_items():
            sort_key = item["sk"]["S"]
            if (
                not item["pk"]["S"].startswith("CONV#")
                or not sort_key.startswith("TURN#")
                or sort_key.endswith("#REPLY")
            ):
                continue
            key = (item["pk"]["S"].removeprefix("CONV#"), int(sort_key.removeprefix("TURN#")))
            if item.get("human_review", {}).get("S") == "pending" and item.get("queue", {}).get("S") == "review":
                tabs["drafted" if not item["fallback_used"]["BOOL"] else "held"].add(key)
            if item.get("handoff_status", {}).get("S") == "open":
                tabs["handoffs"].add(key)
        return tabs

    def console_tabs(self, staff: str, when: str) -> dict[str, list[dict[str, Any]]]:
        """Each tab's first page as the console asks for it (web/assets/console.js), against the table."""
        queries = {
            "held": ("/staff/reviews", "drafted=false&review=pending&order=oldest&limit=100"),
            "drafted": ("/staff/reviews", "drafted=true&review=pending&order=oldest&limit=100"),
            "handoffs": ("/staff/handoffs", "status=open&order=newest&limit=100"),
        }
        truth = self.open_items()
        pages: dict[str, list[dict[str, Any]]] = {}
        for tab, (path, query) in queries.items():
            page = self.staff_api("GET", path, staff=staff, query=query) or {"items": []}
            pages[tab] = page["items"]
            listed = {(item["conversation_id"], item["turn_id"]) for item in page["items"]}
            self.counts["open items listed"] += len(listed)
            if listed != truth[tab]:
                self.problems["tabs"].append(
                    f"{when}: the {tab} tab's first page lists {len(listed)} items;"
                    f" the table has {len(truth[tab])} open"
                )
        return pages

    def staff_session(self, day: int, hour: int) -> None:
        staff = STAFF[hour % 2]
        pages = self.console_tabs(staff, f"day {day + 1} {hour}:00")
        for item in [*pages["held"], *pages["drafted"]]:
            if self.rng.random() > self.plan.staff_share:
                continue
            where = f"/staff/reviews/{item['conversation_id']}/{item['turn_id']}"
            detail = self.staff_api("GET", where, staff=staff)
            if detail is None:
                continue
            if detail["draft"] is None:
                self.problems["drafts"].append(f"day {day + 1}: a review item's draft is gone before its decision")
            if self.staff_api("POST", f"{where}/claim", staff=staff) is None:
                continue
            if self.rng.random() < 0.05:  # looked, and left it for someone else
                self.staff_api("POST", f"{where}/release", staff=staff)
                self.counts["claims released"] += 1
                continue
            if detail["fallback_used"]:
                decision: dict[str, Any] = {"decision": "reject", "reason": "other", "correction": CORRECTION}
            elif self.rng.random() < 0.85:
                decision = {"decision": "approve"}
            else:
                decision = {"decision": "reject", "reason": "other"}
            decided = self.staff_api("POST", f"{where}/decision", decision, staff=staff)
            if decided is not None:
                self.decisions[decided["item"]["human_review"]] += 1
                if decided.get("message") is not None:
                    self.staff_messages[item["conversation_id"]] += 1
        for item in pages["handoffs"]:
            if self.rng.random() > self.plan.staff_share:
                continue
            where = f"/staff/handoffs/{item['conversation_id']}/{item['turn_id']}"
            if self.staff_api("POST", f"{where}/claim", staff=staff) is None:
                continue
            if self.staff_api("POST", f"{where}/reply", {"text": HANDOFF_REPLY}, staff=staff) is not None:
                self.staff_messages[item["conversation_id"]] += 1
            if self.staff_api("POST", f"{where}/close", staff=staff) is not None:
                self.closed += 1

    # --- the faults --------------------------------------------------------------------------------------

    def dispatch_failure(self, minutes: int) -> Callable[[], None]:
        """The dispatch function fails every invocation (a bad deploy) until the returned callable ends it."""
        working = self.stack.stream.handler

        def failing(event: dict[str, Any]) -> dict[str, Any]:
            raise RuntimeError("the dispatch function is failing (simulated)")

        self.stack.stream.handler = failing
        self.counts["dispatch failure minutes"] += minutes

        def restore() -> None:
            self.stack.stream.handler = working

        return restore

    def change_pack(self) -> None:
        """A new version of the pack: one program's id renamed in every file (its names unchanged)."""
        import os

        from dialogue.aws.factory import reset_caches

        old, new = self.renamed, f"{self.renamed}_2027"
        for path in self.pack_dir.rglob("*"):
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                if old in text:
                    path.write_text(text.replace(old, new), encoding="utf-8")
        os.environ["DOMAIN_PACK_DIR"] = str(self.pack_dir)
        reset_caches()
        self.counts["pack changes"] += 1

    # --- a day ------------------------------------------------------------------------------------------

    def day(self, day: int) -> None:
        plan = self.plan
        midnight = plan.start + timedelta(days=day)
        self.run_until(midnight, step=3600)
        self.expire_items()
        weekend = midnight.weekday() >= 5
        residents = plan.residents_weekend if weekend else plan.residents_weekday
        events: list[tuple[datetime, str]] = [
            (midnight + timedelta(hours=9, minutes=self.rng.randrange(8 * 60)), "resident") for _ in range(residents)
        ]
        if not weekend:
            events += [(midnight + timedelta(hours=11), "staff"), (midnight + timedelta(hours=16), "staff")]
        if day == plan.outage_day:
            events += [
                (midnight + timedelta(hours=10), "outage starts"),
                (midnight + timedelta(hours=11), "outage ends"),
            ]
            events += [(midnight + timedelta(hours=10, minutes=m), "resident") for m in (5, 25, 45)]
        if day == plan.dispatch_failure_day:
            events += [(midnight + timedelta(hours=13), "dispatch fails")]
            events += [(midnight + timedelta(hours=14, minutes=10), "dispatch recovers")]
            # The first resident's first turn is worded by the model, so its stream record outlives the hour.
            events += [(midnight + timedelta(hours=13, minutes=2), "resident, worded at once")]
            events += [(midnight + timedelta(hours=13, minutes=m), "resident") for m in (20, 50)]
        if day == plan.pack_change_day:
            # Replies in flight across the change: the realizer pauses, residents talk, the pack changes.
            # Two residents are mid-conversation about the program whose id the change renames.
            events += [(midnight + timedelta(hours=11, minutes=50), "outage starts")]
            events += [(midnight + timedelta(hours=11, minutes=m), "resident before the change") for m in (52, 55)]
            events += [(midnight + timedelta(hours=11, minutes=58), "pack changes")]
            events += [(midnight + timedelta(hours=11, minutes=59), "outage ends")]
            events += [(midnight + timedelta(hours=12, minutes=5), "residents come back")]
        restore: Callable[[], None] | None = None
        for moment, what in sorted(events):
            self.run_until(moment, step=60 if not self.realizer_up or restore else 300)
            if what == "resident":
                self.resident(day)
            elif what == "resident, worded at once":
                self.resident(day, self.change_script)
            elif what == "resident before the change":
                self.resident(day, self.change_script, pause_after=1)
            elif what == "residents come back":
                self.come_back()
            elif what == "staff":
                self.staff_session(day, moment.hour)
            elif what == "outage starts":
                self.realizer_up = False
                self.counts["realizer outage minutes"] += 60 if day == plan.outage_day else 9
            elif what == "outage ends":
                self.realizer_up = True
            elif what == "dispatch fails":
                restore = self.dispatch_failure(70)
            elif what == "dispatch recovers" and restore is not None:
                restore()
                restore = None
            elif what == "pack changes":
                self.change_pack()
        # The day's chats, read at its end: every reply there, whatever went wrong during the day.
        self.run_until(midnight + timedelta(hours=23, minutes=30), step=300)
        for chat in self.chats:
            if chat.day == day:
                self.check_chat(chat, f"day {day + 1}")


def simulate_month(
    plan: MonthPlan, pack: Path | None = None, progress: Callable[[str], None] | None = None, engine: Any = None
) -> MonthReport:
    """Run the plan on a fresh local stack with a copy of the desk `pack` (default: data/packs.toml's),
    which the pack change edits, and the realizer `engine` (default: the template's); the figures and the
    checks."""
    import logging
    import os

    from dialogue.pack import default_pack_dir

    began = time.perf_counter()
    report = MonthReport(plan=plan)
    # The dispatch failure fails hundreds of stream batches on purpose: the figures count them.
    logging.getLogger("devstack.streams").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="devstack-month-") as scratch:
        source = pack if pack is not None else default_pack_dir()
        pack_dir = Path(scratch) / source.name
        shutil.copytree(source, pack_dir)
        saved = os.environ.get("DOMAIN_PACK_DIR")
        os.environ["DOMAIN_PACK_DIR"] = str(pack_dir)
        try:
            # The desk's draw of shown replies for a check, from its own seeded source: the residents' and
            # staff's choices (self.rng) are the same whatever it draws.
            draws = random.Random(f"checks-{plan.seed}")
            with local_stack(start=plan.start, engine=engine) as stack, use_draws(draws.random):
                month = _Month(stack, plan, pack_dir)
                first_reads = None
                for day in range(plan.days):
                    month.day(day)
                    if progress is not None:
                        progress(
                            f"day {day + 1}: {month.counts['turns']} turns, {round(time.perf_counter() - began)} s"
                        )
                    if day == 0:
                        first_reads = count_reads(stack, month.chats[-1].conversation_id, STAFF[0])
                month.run_until(plan.start + timedelta(days=plan.days), step=3600)
                last_reads = count_reads(stack, month.chats[-1].conversation_id, STAFF[0])
                _afterwards(month, report, first_reads or {}, last_reads)
        finally:
            if saved is None:
                os.environ.pop("DOMAIN_PACK_DIR", None)
            else:
                os.environ["DOMAIN_PACK_DIR"] = saved
    report.figures["wall seconds"] = round(time.perf_counter() - began, 1)
    return report


def count_reads(stack: LocalStack, conversation_id: str, staff: str) -> dict[str, int]:
    """The DynamoDB items read by one console list (the drafted tab's first page), one stats call and one
    idle messages poll (a chat that has shown everything), as devstack.reads counts them."""
    calls: dict[str, Callable[[], Any]] = {
        "console list": lambda: stack.call_staff_api(
            "GET", "/staff/reviews", staff=staff, query="drafted=true&review=pending&order=oldest&limit=100"
        ),
        "stats call": lambda: stack.call_staff_api("GET", "/staff/stats", staff=staff),
    }
    path = f"/conversations/{conversation_id}/messages"
    seen = stack.call_api("GET", path, query="after=0").body["next_after"]
    calls["idle messages poll"] = lambda: stack.call_api("GET", path, query=f"after={seen}")
    read: dict[str, int] = {}
    for name, call in calls.items():
        with stack.reads.counting() as count:
            call()
        read[name] = count.items
    return read


def _total(stack: LocalStack, name: str) -> int:
    return int(stack.metric_total(name))


@dataclass(frozen=True)
class ReviewDraw:
    """The screened replies the table holds, as the review queue sees them: `held` (shown the fallback by a
    screen or a generation check), `shown` (shown as drafted) and of those `drawn` for a check; `queued`,
    the turns in the review queue; `misplaced`, turns whose queue disagrees with their human check (a held
    or drawn reply out of the queue, or a reply not drawn in it)."""

    held: int
    shown: int
    drawn: int
    queued: int
    misplaced: int

    def about_the_rate(self, rate: float) -> bool:
        """Whether `drawn` is within four standard deviations (and one) of `rate` x `shown`: a binomial
        draw's bound, which a queue that takes every shown reply, or none, fails."""
        spread = math.sqrt(self.shown * rate * (1 - rate))
        return abs(self.drawn - rate * self.shown) <= 4 * spread + 1


def review_draw(stack: LocalStack) -> ReviewDraw:
    """Count the table's final generated turns by how they were shown and whether they wait to be checked."""
    held = shown = drawn = queued = misplaced = 0
    for item in stack.table_items():
        sort_key = item["sk"]["S"]
        if not item["pk"]["S"].startswith("CONV#") or not sort_key.startswith("TURN#") or sort_key.endswith("#REPLY"):
            continue
        review = item.get("human_review", {}).get("S")
        if item["reply_source"]["S"] != "model" or item["status"]["S"] != "final" or review == "not applicable":
            continue  # fixed text, a turn still pending, or a deadline's fallback: no draft to check
        in_queue = item.get("queue", {}).get("S") == "review"
        queued += in_queue
        if item["fallback_used"]["BOOL"]:
            held += 1
            misplaced += not in_queue
        else:
            shown += 1
            drawn += review != "not drawn"
            misplaced += in_queue != (review != "not drawn")
    return ReviewDraw(held=held, shown=shown, drawn=drawn, queued=queued, misplaced=misplaced)


def _afterwards(month: _Month, report: MonthReport, first_reads: dict[str, int], last_reads: dict[str, int]) -> None:
    from dialogue.aws.audit import verify_table_audit

    stack, counts = month.stack, month.counts
    pending = stack.pending_turns()
    for chat in month.chats:
        month.check_chat(chat, "month end")
    stats = month.staff_api("GET", "/staff/stats", staff=STAFF[0]) or {}
    decided = {status: count for status, count in (stats.get("reviews") or {}).items() if status != "pending"}
    made = {status: month.decisions.get(status, 0) for status in decided}
    closed = (stats.get("handoffs") or {}).get("closed")
    month.console_tabs(STAFF[0], "month end")
    draw, rate = review_draw(stack), stats.get("shown_check_rate", 1.0)
    # The table's chains and their WORM copies in the bucket, at the simulation's time (TTL has run on it).
    audit_problems = verify_table_audit(stack.dynamodb, TABLE_NAME, stack.s3, AUDIT_BUCKET, now=month.now().timestamp())
    audit_links = sum(1 for item in stack.table_items() if item["pk"]["S"].startswith("AUDIT#"))
    fig = report.figures
    fig.update(
        {
            "conversations": counts["conversations"],
            "turns": counts["turns"],
            "generated turns": counts["generated turns"],
            "fixed-text turns": counts["fixed-text turns"],
            "replies screened": _total(stack, "RepliesScreened"),
            "deadline fallbacks": _total(stack, "DeadlineFallbacks"),
            "stuck turns finalized by the sweeper": _total(stack, "StuckTurnsFinalized"),
            "stream records given up (failure queue)": stack.stream.given_up,
            "failure queue messages cleared": _total(stack, "DispatchFailuresCleared"),
            "stored values unreadable after the pack change": _total(stack, "StoredValuesUnreadable"),
            "realizer outage minutes": counts["realizer outage minutes"],
            "dispatch failure minutes": counts["dispatch failure minutes"],
            "replies held (the fallback shown)": draw.held,
            "replies shown as drafted": draw.shown,
            "  drawn for a check": draw.drawn,
            "reviews awaiting a check at the end": (stats.get("reviews") or {}).get("pending", -1),
            "reviews decided": sum(month.decisions.values()),
            **{f"  {status}": count for status, count in sorted(month.decisions.items())},
            "hand-offs closed": month.closed,
            "claims released": counts["claims released"],
            "staff messages posted": sum(month.staff_messages.values()),
            "open items at the end": sum(len(v) for v in month.open_items().values()),
            "items expired by TTL": counts["items expired by TTL"],
            "message polls": counts["message polls"],
            "staff requests": counts["staff requests"],
            "audit links": audit_links,
            **{f"items read, day 1: {name}": value for name, value in first_reads.items()},
            **{f"items read, day {month.plan.days}: {name}": value for name, value in last_reads.items()},
        }
    )
    checks = report.checks
    checks.append(Check("every turn is final", not pending, f"{len(pending)} pending of {counts['turns']}"))
    chat_problems = month.problems["chats"]
    checks.append(
        Check(
            "every chat shows every reply and staff message",
            not chat_problems,
            f"{len(month.chats)} chats checked at the end of their day and at the month's end"
            + (f"; {len(chat_problems)} problems, first: {chat_problems[0]}" if chat_problems else ""),
        )
    )
    tab_problems = month.problems["tabs"]
    checks.append(
        Check(
            "each console tab lists every open item on its first page",
            not tab_problems,
            f"{counts['open items listed']} open items listed across every session's tabs"
            + (f"; first problem: {tab_problems[0]}" if tab_problems else ""),
        )
    )
    checks.append(
        Check(
            "the stats equal the decisions",
            bool(stats) and decided == made and closed == month.closed,
            f"stats {decided}, closed {closed}; made {made}, closed {month.closed}",
        )
    )
    checks.append(
        Check(
            "the review queue holds every held reply and the shown replies drawn for a check",
            not draw.misplaced and draw.queued == draw.held + draw.drawn and draw.about_the_rate(rate),
            f"{draw.queued} queued of {draw.held} held and {draw.shown} shown, {draw.drawn} drawn at a rate of"
            f" {rate:g} (about {rate * draw.shown:.0f}); {draw.misplaced} misplaced",
        )
    )
    draft_problems = month.problems["drafts"]
    checks.append(
        Check(
            "no draft is gone before its decision",
            not draft_problems,
            f"{sum(month.decisions.values())} decisions, each read its draft first"
            + (f"; {len(draft_problems)} drafts gone" if draft_problems else ""),
        )
    )
    checks.append(
        Check(
            "the audit verifies",
            not audit_problems,
            f"{audit_links} links" + (f"; first problem: {audit_problems[0]}" if audit_problems else ""),
        )
    )
    api_problems = month.problems["api"]
    checks.append(
        Check(
            "every request a resident or staff member made was answered",
            not api_problems,
            "no 4xx or 5xx" if not api_problems else f"{len(api_problems)} failed, first: {api_problems[0]}",
        )
    )


def iter_report_lines(report: MonthReport) -> Iterator[str]:
    yield from report.render().splitlines()
