"""Understanding a user turn: the injection and staff-only screens, the intent and slot updates.

The text is read here and nowhere else; what leaves is coarse: flags, rule names, an intent name,
slot values. Nothing here logs, stores or raises with the text.

Every pattern runs on `normalize(text)` (see `dialogue.normalize`). The patterns are the pack's;
this module knows only the mechanism:

- Screens: a turn is an injection when any `injection_rules` pattern matches, a staff-only request
  when any `staff_only_rules` pattern matches, except where every match of the rule lies inside a
  match of a benign exception the rule names (`unless`). A screened turn yields no slot updates.
- Mentions: every match of a slot rule is a mention of its value. Where two rules of one slot match
  overlapping text, the earlier rule in the pack wins.
- Negation: a mention is negated when a negation cue ends at most `window_words` words before it, or
  an after-cue starts at most that many words after it, with no scope break (punctuation, "but",
  ...) in between. A cue that is itself in the scope of an earlier cue cancels instead ("I can't
  come without childcare" needs it). A negated mention sets the rule's `negated_value` ("no
  childcare" → no), or nothing when the rule has none ("don't call me" need not choose another
  channel).
- Corrections: when a correction marker ("sorry, I meant", "actually", "scratch that") comes before
  some of a slot's mentions, only the mentions after the last such marker count.
- A slot is updated when its counting mentions agree on one value. Mentions that disagree (two
  programs at once) leave the slot as it was, so the policy asks rather than guesses.
- Questions and topics: a turn is a question when the pack's question pattern matches (a question
  mark, wh-words, "can I", "is there"...). A question's topic is the first topic the desk cannot
  answer whose pattern matches, else the first covered one, in pack order. A statement has no topic:
  it stays on the frame's path.
- The route, in the policy's order: a question on an uncovered topic is abstained on; an intent
  that asks for a person hands off; a question on a covered topic is informed; a question that
  matches no topic is abstained on, unless it mentions a value of a slot the policy asks for
  ("could you sign me up for ...?"); anything else fills the frame. A screened turn is refused and
  read as a statement. The intent recorded is the topic's (or the pack's unmatched-question intent)
  where a topic decides the route.
- Examples (the desk profile only, `pack.example_index`): after the rules, the turn's nearest example
  utterance (`dialogue.similarity`, labels from `examples.toml`) may amend their reading where it is
  sure (`min_score`, `min_margin`) and the rules were not exact: a hand-off or a topic the rules missed,
  a slot value no rule read, a handbook answer withdrawn when the turn is nearest other desks' turns.
  What the rules read exactly (a screen, a hand-off, a topic's rows, a slot value) stands. The
  lesson profile reads no examples. The index returns labels only; the text stays here.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right, insort
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from dialogue.normalize import normalize
from dialogue.pack import CompiledPatterns, DomainPack, ExampleSet, IntentRule, ScreenRule, Topic
from dialogue.pack.examples import INTENT, OTHER, SCREEN, TOPIC, VALUE
from dialogue.pack.schema import StatementRules
from dialogue.similarity import Match

Route = Literal["abstain", "hand_off", "inform", "enroll"]
"""Where a turn sends the policy: abstain, hand off, inform from a topic's rows, or fill the frame."""

_WORD = re.compile(r"\w+")


class Understanding(BaseModel):
    """What the rules read from one user turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    intent: str
    route: Route
    injection_screen: bool
    privileged_request: bool
    slot_updates: dict[str, str]
    # The names of the screen rules that fired (pack names, never user text).
    screens_fired: tuple[str, ...] = ()
    # Whether the turn is a question, and the pack topic it asks about, if any.
    question: bool = False
    topic: str | None = None
    # Whether the turn holds a correction marker ("sorry, I meant ...", "actually").
    correction: bool = False

    @property
    def must_refuse(self) -> bool:
        return self.injection_screen or self.privileged_request


@dataclass(frozen=True)
class Mention:
    """One match of a slot rule in normalized text; `value` is None when a negation blocks it."""

    slot: str
    value: str | None
    start: int
    end: int
    negated: bool


def _screens(
    text: str, rules: tuple[tuple[ScreenRule, re.Pattern[str]], ...], benign: Mapping[str, re.Pattern[str]]
) -> list[str]:
    return [rule.name for rule, pattern in rules if _fires(text, rule, pattern, benign)]


def _fires(
    text: str, rule: ScreenRule | IntentRule, pattern: re.Pattern[str], benign: Mapping[str, re.Pattern[str]]
) -> bool:
    """Whether the rule matches somewhere that none of its benign exceptions covers."""
    match = pattern.search(text)
    if match is None or not rule.unless:
        return match is not None
    covered = [span.span() for name in rule.unless for span in benign[name].finditer(text)]
    return any(
        not any(start <= found.start() and found.end() <= end for start, end in covered)
        for found in pattern.finditer(text)
    )


def _classify(text: str, pack: DomainPack) -> IntentRule:
    """The first intent whose pattern matches the normalized text (outside its benign exceptions),
    else the pack's default intent."""
    benign = pack.compiled.benign
    for rule, pattern in pack.compiled.intents:
        if pattern is None or _fires(text, rule, pattern, benign):
            return rule
    return pack.spec.understanding.default_intent


def _topic(text: str, pack: DomainPack) -> Topic | None:
    """The topic a question asks about: an uncovered one first (the desk must not answer half a
    question), else the first covered one, in pack order."""
    matched = [topic for topic, pattern in pack.compiled.topics if pattern.search(text)]
    return next((topic for topic in matched if not topic.covered), None) or next(iter(matched), None)


def _route(
    text: str, pack: DomainPack, *, mentions_values: bool, mentions_any: bool, screened: bool
) -> tuple[str, Route, bool, Topic | None]:
    """The intent to record, the route, whether the turn is a question, and its topic.

    A question that matches no topic but mentions a frame value ("could you sign me up for
    <program>?", "<program> or <program>?") is about the frame: it fills the frame. A screened turn is
    refused whatever it asks, so it is read as a statement and keeps its intent."""
    question = not screened and pack.compiled.question.search(text) is not None
    topic = _topic(text, pack) if question else None
    intent = _classify(text, pack)
    if topic is not None and not topic.covered:
        return topic.intent_name, "abstain", question, topic
    if intent.route == "hand_off":
        return intent.name, "hand_off", question, topic
    if topic is not None:
        return topic.intent_name, "inform", question, topic
    if question and not mentions_values:
        return pack.spec.understanding.questions.unmatched_intent, "abstain", question, None
    statements = pack.spec.understanding.statements
    on_the_frame = question or screened or mentions_any
    if statements is not None and not (on_the_frame or _on_the_frame(text, pack, statements)):
        return statements.unmatched_intent, "abstain", question, None
    return intent.name, "enroll", question, None


def _on_the_frame(text: str, pack: DomainPack, statements: StatementRules) -> bool:
    """Whether a statement that names no frame value still belongs on the frame's path: it asks to
    enrol, speaks of one of the desk's topics, corrects an earlier turn, or is small talk."""
    patterns = pack.compiled
    if len(_WORD.findall(text)) <= statements.small_talk_max_words:
        return True
    if patterns.frame_statement is not None and patterns.frame_statement.search(text):
        return True
    if patterns.correction_marker.search(text):
        return True
    return any(topic.covered and pattern.search(text) for topic, pattern in patterns.topics)


class _Scope:
    """Negation cues, after-cues, scope breaks, correction markers and words, found once in one text.

    Every list is in text order, so each question is a binary search, whatever the text's length.
    They are found on the first question: a turn that mentions no slot value asks none.
    """

    window: int
    cue_ends: list[int]
    after_cue_starts: list[int]
    break_starts: list[int]
    break_ends: list[int]
    marker_ends: list[int]
    word_starts: list[int]
    cue_live: list[bool]

    def __init__(self, text: str, patterns: CompiledPatterns, window: int) -> None:
        self.window = window
        self._text: str | None = text
        self._patterns = patterns

    def _find(self) -> None:
        text = self._text
        if text is None:
            return
        self._text = None
        patterns = self._patterns
        cues = [match.span() for match in patterns.negation_cue.finditer(text)]
        self.cue_ends = [end for _, end in cues]
        self.after_cue_starts = [match.start() for match in patterns.negation_after_cue.finditer(text)]
        breaks = [match.span() for match in patterns.scope_break.finditer(text)]
        self.break_starts = [start for start, _ in breaks]
        self.break_ends = [end for _, end in breaks]
        self.marker_ends = [match.end() for match in patterns.correction_marker.finditer(text)]
        self.word_starts = [match.start() for match in _WORD.finditer(text)]
        # A cue in the scope of an earlier live cue is itself negated and cancels: "can't come
        # without X" needs X. Cues are in text order, so one pass settles them all.
        self.cue_live = []
        for start, _ in cues:
            self.cue_live.append(not self._cue_in_scope(start))

    def _words(self, start: int, end: int) -> int:
        return bisect_left(self.word_starts, end) - bisect_left(self.word_starts, start)

    def _broken(self, start: int, end: int) -> bool:
        """Whether a scope break lies wholly inside text[start:end]."""
        index = bisect_left(self.break_starts, start)
        return index < len(self.break_starts) and self.break_ends[index] <= end

    def _in_scope(self, start: int, end: int) -> bool:
        return self._words(start, end) <= self.window and not self._broken(start, end)

    def _cue_in_scope(self, position: int) -> bool:
        """Whether `position` is negated by the cues before it.

        The nearest cue decides: a farther one has at least the same words and breaks between it
        and `position`, and if the nearest was cancelled by a farther one, the two cancel out.
        """
        index = bisect_right(self.cue_ends, position, hi=len(self.cue_live)) - 1
        return index >= 0 and self.cue_live[index] and self._in_scope(self.cue_ends[index], position)

    def negates(self, start: int, end: int) -> bool:
        """Whether the mention at text[start:end] has a live cue before it or an after-cue after it."""
        self._find()
        after = bisect_left(self.after_cue_starts, end)
        return self._cue_in_scope(start) or (
            after < len(self.after_cue_starts) and self._in_scope(end, self.after_cue_starts[after])
        )

    def last_marker_before(self, position: int) -> int | None:
        """The end of the last correction marker that ends at or before `position`."""
        self._find()
        index = bisect_right(self.marker_ends, position) - 1
        return self.marker_ends[index] if index >= 0 else None


def find_mentions(text: str, pack: DomainPack) -> list[Mention]:
    """Every slot-rule match in the normalized `text`, in text order, negation applied."""
    normalized = normalize(text)
    return _mentions(normalized, pack, _Scope(normalized, pack.compiled, _window(pack)))


def _window(pack: DomainPack) -> int:
    return pack.spec.understanding.negation.window_words


def _mentions(text: str, pack: DomainPack, scope: _Scope) -> list[Mention]:
    taken: dict[str, list[tuple[int, int]]] = {}  # per slot, the spans already mentioned, sorted
    mentions: list[Mention] = []
    for rule, pattern in pack.compiled.slot_rules:
        spans = taken.setdefault(rule.slot, [])
        for match in pattern.finditer(text):
            start, end = match.span()
            # Spans of one slot never overlap, so only the neighbours can overlap a new one.
            index = bisect_left(spans, (start, end))
            if (index > 0 and spans[index - 1][1] > start) or (index < len(spans) and spans[index][0] < end):
                continue  # an earlier rule of this slot already read this text
            insort(spans, (start, end))
            negated = scope.negates(start, end)
            value = rule.negated_value if negated else rule.value
            mentions.append(Mention(rule.slot, value, start, end, negated))
    return sorted(mentions, key=lambda mention: mention.start)


def _settle(mentions: list[Mention], scope: _Scope) -> str | None:
    """One slot's value: its mentions after the last correction marker that precedes any of them."""
    if not mentions:
        return None
    marker = scope.last_marker_before(mentions[-1].start)
    counting = mentions if marker is None else [mention for mention in mentions if mention.start >= marker]
    values = {mention.value for mention in counting if mention.value is not None}
    return values.pop() if len(values) == 1 else None


def extract_slot_updates(text: str, pack: DomainPack) -> dict[str, str]:
    """Per slot, the value its mentions agree on; slots with no such value are absent."""
    return _extract(normalize(text), pack)


def _extract(text: str, pack: DomainPack) -> dict[str, str]:
    return _read_slots(text, pack)[0]


def _read_slots(text: str, pack: DomainPack) -> tuple[dict[str, str], bool, bool]:
    """The slot updates; whether the text mentions a value of a slot the policy asks for (agreeing
    or not): a question that does is about the frame. A remembered-only slot ("last night", "my kid")
    does not make a question one; and whether it mentions any slot's value (a statement that does is
    on the frame's path)."""
    scope = _Scope(text, pack.compiled, _window(pack))
    mentions = _mentions(text, pack, scope)
    updates: dict[str, str] = {}
    for slot in pack.frame.slot_names:
        value = _settle([mention for mention in mentions if mention.slot == slot], scope)
        if value is not None:
            updates[slot] = value
    asked = {slot.name for slot in pack.frame.requested_slots}
    return updates, any(mention.slot in asked for mention in mentions), bool(mentions)


def understand(text: str, pack: DomainPack) -> Understanding:
    """Screen and read one turn. A screened turn yields no slot updates."""
    normalized = normalize(text)
    patterns = pack.compiled
    injection = _screens(normalized, patterns.injection, patterns.benign)
    staff_only = _screens(normalized, patterns.staff_only, patterns.benign)
    screened = bool(injection or staff_only)
    updates, mentions_values, mentions_any = ({}, False, False) if screened else _read_slots(normalized, pack)
    intent, route, question, topic = _route(
        normalized, pack, mentions_values=mentions_values, mentions_any=mentions_any, screened=screened
    )
    reading = _Reading(intent, route, question, topic, updates, injection, staff_only)
    if pack.example_index is not None and pack.examples is not None:
        reading = _by_examples(reading, pack.example_index.match(normalized), pack, pack.examples)
    if reading.route in ("abstain", "hand_off"):
        reading.updates = {}  # a turn the desk does not take up changes no slot
    return Understanding(
        intent=reading.intent,
        route=reading.route,
        injection_screen=bool(reading.injection),
        privileged_request=bool(reading.staff_only),
        slot_updates=reading.updates,
        screens_fired=(*reading.injection, *reading.staff_only),
        question=reading.question,
        topic=reading.topic.name if reading.topic else None,
        correction=not screened and patterns.correction_marker.search(normalized) is not None,
    )


@dataclass
class _Reading:
    """A turn as the rules read it, which the desk's examples may then amend."""

    intent: str
    route: Route
    question: bool
    topic: Topic | None
    updates: dict[str, str]
    injection: list[str]
    staff_only: list[str]


def _by_examples(reading: _Reading, found: Match | None, pack: DomainPack, examples: ExampleSet) -> _Reading:
    """The rules' reading, amended by the nearest example where it is sure (`min_score`, `min_margin`).

    The rules go first wherever they are exact: a screened turn stays refused, a hand-off stays one, a
    topic a rule found keeps its rows, a slot value a rule read keeps it. The examples add what the
    rules missed: a refusal (at `screen_min_score`), a hand-off, a topic for a question or statement no
    rule placed, a slot value no rule read. A handbook answer needs the turn to be like some example
    (`inform_min_score`), and is abstained on when the nearest examples are other desks' turns.
    """
    if reading.injection or reading.staff_only:
        return reading
    score = found.score if found else 0.0
    if reading.route == "inform" and score < examples.inform_min_score:
        return _abstain(reading, pack.spec.understanding.questions.unmatched_intent)
    if found is None or found.score < examples.min_score or found.margin < examples.min_margin:
        return reading
    kind, _, name = found.label.partition(":")
    if kind == SCREEN and found.score >= examples.screen_min_score:
        fired = [f"{name}_examples"]
        reading.updates = {}
        if name == "injection":
            reading.injection = fired
        else:
            reading.staff_only = fired
        return reading
    if reading.route == "hand_off":
        return reading
    if kind == INTENT:
        rule = next(rule for rule in pack.spec.understanding.intents if rule.name == name)
        if rule.route == "hand_off":
            reading.intent, reading.route, reading.topic = rule.name, "hand_off", None
        elif reading.route == "abstain" and reading.topic is None and not reading.question:
            reading.intent, reading.route = rule.name, "enroll"  # a statement about the frame after all
        return reading
    unplaced = reading.topic is None and (reading.route == "abstain" or not reading.updates)
    if kind == TOPIC and unplaced:
        topic = pack.topic(name)
        if topic is not None:
            reading.intent, reading.topic, reading.question = topic.intent_name, topic, True
            reading.route = "inform" if topic.covered else "abstain"
        return reading
    if kind == OTHER and reading.route == "inform":
        return _abstain(reading, pack.spec.understanding.questions.unmatched_intent)
    off_the_desk = reading.route == "abstain" and reading.topic is None
    if kind == VALUE and (reading.route == "enroll" or off_the_desk):
        slot, _, value = name.partition(":")
        reading.updates.setdefault(slot, value)
        if off_the_desk:  # a turn the rules placed nowhere gives a slot's value after all ("ring me?")
            reading.intent, reading.route = pack.spec.understanding.default_intent.name, "enroll"
    return reading


def _abstain(reading: _Reading, intent: str) -> _Reading:
    reading.intent, reading.route, reading.topic = intent, "abstain", None
    return reading
