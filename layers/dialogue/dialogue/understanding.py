"""Understanding a user turn: the injection and staff-only screens, the intent and slot updates.

The text is read here and nowhere else; what leaves is coarse: flags, rule names, an intent name,
slot values. Nothing here logs, stores or raises with the text.

Every pattern runs on `normalize(text)` (see `dialogue.normalize`). The patterns are the pack's;
this module knows only the mechanism:

- Screens: a turn is an injection when any `injection_rules` pattern matches, a staff-only request
  when any `staff_only_rules` pattern matches, except where every match of the rule lies inside a
  match of a benign exception the rule names (`unless`). A screened turn yields no slot updates.
- Mentions: every match of a slot rule is a mention of its value, unless it lies inside a match of a
  benign exception the rule names (`unless`: "my boyfriend's email account"). Where two rules of one
  slot match overlapping text, the earlier rule in the pack wins.
- Negation: a mention is negated when a negation cue ends at most `window_words` words before it, or
  an after-cue starts at most that many words after it, with no scope break (punctuation, "but",
  ...) in between. Negation is scoped, not cancelling: a second cue in the first one's scope negates
  too ("no, I don't need X"), unless it matches the pack's `double_negation_pattern`, which cancels
  ("I can't come without childcare" needs it). A negated mention sets the rule's `negated_value` ("no
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
- The route (the lesson profile), in the policy's order: a question on an uncovered topic is abstained on; an intent
  that asks for a person hands off; a question on a covered topic is informed; a question that
  matches no topic is abstained on, unless it mentions a value of a slot the policy asks for
  ("could you sign me up for ...?"); anything else fills the frame. A screened turn is refused and
  read as a statement. The intent recorded is the topic's (or the pack's unmatched-question intent)
  where a topic decides the route.
- The desk profile reads a turn once (`_read_at_desk`): the rules above as its floor, the question the
  desk asked last for short answers (`[understanding.answers]`, a value's own words from
  `dialogue.pack.lexicon`), and the turn's nearest example (`pack.example_index`, labels from
  `examples.toml`) for hand-off, topic and out of scope; no later step sets a value the rules read as
  negated or disagreeing. The lesson profile reads no examples and no short answers. The index returns
  labels only; the text stays here.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right, insort
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from dialogue.actions import Action
from dialogue.normalize import normalize
from dialogue.pack import CompiledPatterns, DomainPack, ExampleSet, IntentRule, ScreenRule, Topic, UnderstandingProfile
from dialogue.pack.examples import INTENT, OTHER, SCREEN, TOPIC, VALUE
from dialogue.pack.lexicon import allowed_edits, misspells, within
from dialogue.pack.schema import StatementRules
from dialogue.pack.spelling import names
from dialogue.similarity import STOP_WORDS, WORD, Match

Route = Literal["abstain", "hand_off", "inform", "enroll"]
"""Where a turn sends the policy: abstain, hand off, inform from a topic's rows, or fill the frame."""

Answer = Literal["yes", "no", "unsure"]
"""A short answer to the desk's last question: yes, no, or "either" / "not sure"."""

_WORD = re.compile(r"\w+")

CONTACT_TYPED = "contact_typed"
"""The intent of a turn that typed a contact detail into the chat ([contact] typed_pattern, dialogue.contact)."""


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
    # The desk profile: a short yes, no or "not sure" to the desk's last question, and "start over".
    answer: Answer | None = None
    restart: bool = False
    # The desk profile: "the other course" (`other_offering_pattern`), where no offering is named.
    other_offering: bool = False
    # The desk profile: a phone number or an email address typed into the chat ([contact] typed_pattern).
    # Nothing of the turn is kept; the desk points at the contact form, which is kept apart.
    contact_typed: bool = False

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
    return _matches_outside(text, pattern, _exception_spans(text, rule, benign))


def _exception_spans(
    text: str, rule: ScreenRule | IntentRule, benign: Mapping[str, re.Pattern[str]]
) -> list[tuple[int, int]]:
    """Where the rule's benign exceptions match the text."""
    return [span.span() for name in rule.unless for span in benign[name].finditer(text)]


def _inside(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    """Whether some span of `spans` wholly covers `start`..`end`."""
    return any(left <= start and end <= right for left, right in spans)


def _matches_outside(text: str, pattern: re.Pattern[str], spans: list[tuple[int, int]]) -> bool:
    """Whether `pattern` matches somewhere in `text` that no span of `spans` wholly covers."""
    return any(not _inside(found.start(), found.end(), spans) for found in pattern.finditer(text))


def _by_one_word(text: str, pack: DomainPack, intent: IntentRule, excepted: list[tuple[int, int]]) -> bool:
    """Whether the intent's rule reads the text only by single words outside its benign exceptions' spans
    `excepted` ("staff", "human"), never by a request in words ("talk to a person", "call me back")."""
    pattern = next((compiled for rule, compiled in pack.compiled.intents if rule.name == intent.name), None)
    if pattern is None:
        return False
    return all(
        len(found.group().split()) == 1
        for found in pattern.finditer(text)
        if not _inside(found.start(), found.end(), excepted)
    )


def _classify(text: str, pack: DomainPack) -> IntentRule:
    """The first intent whose pattern matches the normalized text (outside its benign exceptions),
    else the pack's default intent."""
    benign = pack.compiled.benign
    for rule, pattern in pack.compiled.intents:
        if pattern is None or _fires(text, rule, pattern, benign):
            return rule
    return pack.spec.understanding.default_intent


def _topic(text: str, pack: DomainPack, outside: list[tuple[int, int]] | None = None) -> Topic | None:
    """The topic a question asks about: an uncovered one first (the desk must not answer half a
    question), else the first covered one, in pack order; where no topic's pattern matches, the same
    over their weak patterns. With `outside`, only a topic whose rule matches somewhere none of those
    spans covers."""
    for topics in (pack.compiled.topics, pack.compiled.weak_topics):
        matched = [
            topic
            for topic, pattern in topics
            if (pattern.search(text) if outside is None else _matches_outside(text, pattern, outside))
        ]
        if matched:
            return next((topic for topic in matched if not topic.covered), matched[0])
    return None


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
    return any(topic.covered and pattern.search(text) for topic, pattern in (*patterns.topics, *patterns.weak_topics))


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
    any_cue: bool

    def __init__(self, text: str, patterns: CompiledPatterns, window: int) -> None:
        self.window = window
        self._text: str | None = text
        self._patterns = patterns
        self._whole = text
        self._exceptions: dict[str, list[tuple[int, int]]] = {}

    def excepted(self, names: tuple[str, ...], start: int, end: int) -> bool:
        """Whether text[start:end] lies wholly inside a match of one of the benign exceptions `names` (each
        exception's matches found once per text, whichever rule or word asks)."""
        for name in names:
            spans = self._exceptions.get(name)
            if spans is None:
                spans = self._exceptions[name] = [m.span() for m in self._patterns.benign[name].finditer(self._whole)]
            if any(low <= start and end <= high for low, high in spans):
                return True
        return False

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
        # A double-negation cue in the scope of an earlier live cue cancels it: "can't come without X"
        # needs X. Any other cue negates as the first does: "no, I don't need X" is no. Cues are in text
        # order, so one pass settles them all.
        double = patterns.double_negation
        self.cue_live = []
        for start, end in cues:
            cancels = double is not None and double.fullmatch(text, start, end) is not None
            self.cue_live.append(not (cancels and self._cue_in_scope(start)))
        self.any_cue = bool(cues) or bool(self.after_cue_starts)

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

    def has_negation(self) -> bool:
        """Whether the text holds any negation cue or after-cue at all."""
        self._find()
        return self.any_cue

    def last_marker_before(self, position: int) -> int | None:
        """The end of the last correction marker that ends at or before `position`."""
        self._find()
        index = bisect_right(self.marker_ends, position) - 1
        return self.marker_ends[index] if index >= 0 else None


def _window(pack: DomainPack) -> int:
    return pack.spec.understanding.negation.window_words


def _mentions(text: str, pack: DomainPack, scope: _Scope) -> list[Mention]:
    taken: dict[str, list[tuple[int, int]]] = {}  # per slot, the spans already mentioned, sorted
    mentions: list[Mention] = []
    for rule, pattern in pack.compiled.slot_rules:
        spans = taken.setdefault(rule.slot, [])
        for match in pattern.finditer(text):
            start, end = match.span()
            if rule.unless and scope.excepted(rule.unless, start, end):
                continue  # inside a benign exception: somebody else's, not a value said
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


def _read_slots(text: str, pack: DomainPack) -> tuple[dict[str, str], bool, bool]:
    """The slot updates; whether the text mentions a value of a slot the policy asks for (agreeing
    or not): a question that does is about the frame. A remembered-only slot ("last night", "my kid")
    does not make a question one; and whether it mentions any slot's value (a statement that does is
    on the frame's path)."""
    read = _slots(text, pack, _Scope(text, pack.compiled, _window(pack)))
    return read.updates, read.mentions_values, read.mentions_any


@dataclass(frozen=True)
class _Slots:
    """What one turn says of the slots."""

    updates: dict[str, str]
    mentions_values: bool  # a value of a slot the policy asks for is mentioned (agreeing or not)
    mentioned: frozenset[str]  # the slots mentioned at all, negated or disagreeing included
    stated: frozenset[str] = frozenset()  # the slots mentioned before the turn's questions (`questions` in `_slots`)

    @property
    def mentions_any(self) -> bool:
        """Any slot's value is mentioned."""
        return bool(self.mentioned)


def _slots(
    text: str,
    pack: DomainPack,
    scope: _Scope,
    words_for: frozenset[str] = frozenset(),
    skip: tuple[int, int] = (0, 0),
    *,
    follow_rules: bool = False,
    short: bool = False,
    answering: frozenset[str] = frozenset(),
    asked_about: list[tuple[int, int]] | None = None,
    questions: list[tuple[int, int]] | None = None,
) -> _Slots:
    """Per slot, the value its mentions agree on. `words_for` names the slots whose values' own words
    also count this turn ("the X one", a misspelt name), and with `follow_rules` so does every slot a rule
    mentions (every slot, in a `short` turn a rule placed on the frame), and a misspelling of a long word a
    rule reads anywhere ("i wnt 2 do forkift"); a mention inside `skip` (a bare yes or no read as an answer)
    does not count. `answering` holds the slot just asked (every slot in a short turn after the read-back): its
    values' words are read through a typo of four letters too ("emal", "phon"). A yes/no slot's "yes" inside one of
    the spans `asked_about` (a question's clause) is asked about, not said: "do you offer childcare?" states no
    need. The slots mentioned before the spans `questions` (a turn's question clauses) are stated before its
    question: "text me please, and what courses do you run?" chooses the channel ("do i need my own computer? i only
    have my phone" does not)."""
    mentions = [m for m in _mentions(text, pack, scope) if not (skip[0] <= m.start and m.end <= skip[1])]
    ruled = frozenset(mention.slot for mention in mentions) if follow_rules else frozenset()
    if ruled and short:  # a short turn a rule placed on the frame names its other values in its own words too
        words_for = frozenset(pack.value_words)
    # A value's own words (exact or misspelt) count for the slots asked of them, and for a slot a rule read,
    # even negated ("not the X one, the Y one"); elsewhere the rules' own wording (and exceptions) decide.
    chosen = words_for | ruled
    if chosen:
        found = _word_mentions(text, pack, scope, chosen, mentions, answering)
        mentions = sorted([*mentions, *found], key=lambda m: m.start)
    if follow_rules:  # a rule reads these words anywhere: so their misspellings count anywhere too
        rest = frozenset(pack.value_words) - chosen
        found = _word_mentions(text, pack, scope, rest, mentions, misspelt_ruled_only=True)
        mentions = sorted([*mentions, *found], key=lambda m: m.start)
    if asked_about:
        yes_no = {slot.name for slot in pack.frame.slots if {"yes", "no"} <= set(slot.values)}
        mentions = [
            m for m in mentions if not (m.slot in yes_no and m.value == "yes" and _inside(m.start, m.end, asked_about))
        ]
    updates: dict[str, str] = {}
    for slot in pack.frame.slot_names:
        value = _settle([mention for mention in mentions if mention.slot == slot], scope)
        if value is not None:
            updates[slot] = value
    mentioned = frozenset(mention.slot for mention in mentions)
    asked = {slot.name for slot in pack.frame.requested_slots}
    first_question = min(start for start, _ in questions) if questions else None
    stated = frozenset(m.slot for m in mentions if first_question is not None and m.end <= first_question)
    return _Slots(updates, bool(mentioned & asked), mentioned, stated)


_LETTERS = re.compile(r"[^\W\d_]+")


def _word_mentions(
    text: str,
    pack: DomainPack,
    scope: _Scope,
    slots: frozenset[str],
    taken: list[Mention],
    answering: frozenset[str] = frozenset(),
    *,
    misspelt_ruled_only: bool = False,
) -> list[Mention]:
    """Mentions of the values of `slots` by the words of their own names (`dialogue.pack.lexicon`), or by
    those words misspelt by a letter or two ("forklfit", "emial"), but not inflected ("messages" is no
    misspelt "message"). None where a rule of the slot already read that text or a benign exception its
    rules yield to covers it. For the slots `answering`, a four-letter token one letter short of a value's
    five-letter word counts ("emal", "phon"). With `misspelt_ruled_only`, only misspellings of the
    words of `LONG_WORD` letters or more that a rule of the slot reads alone count."""
    found: list[Mention] = []
    # The benign exceptions the slot's rules yield to hold for its values' words too ("dan's address").
    yields = {slot: tuple(name for rule, _ in pack.compiled.slot_rules if rule.slot == slot for name in rule.unless)
              for slot in slots}  # fmt: skip
    ruled = pack.value_words_ruled
    lexicon: Mapping[str, Mapping[str, str]] = pack.value_words
    starts: set[str] = set()
    if misspelt_ruled_only:
        long_ruled = {slot: {word for word in ruled[slot] if len(word) >= LONG_WORD} for slot in slots}
        lexicon = {slot: {word: lexicon[slot][word] for word in long_ruled[slot]} for slot in slots}
        starts = {word[0] for words in lexicon.values() for word in words}  # a misspelling keeps its first letter
    for match in _LETTERS.finditer(text):
        token, start, end = match.group(), match.start(), match.end()
        if misspelt_ruled_only and (len(token) < LONG_WORD - 1 or token[0] not in starts):
            continue
        for slot in slots:
            if token in ruled.get(slot, ()):
                continue  # a rule reads this word alone and did not here ("living room", "credit card")
            words = lexicon.get(slot)
            if not words or any(m.slot == slot and m.start < end and start < m.end for m in taken):
                continue
            if scope.excepted(yields[slot], start, end):
                continue
            value = None if misspelt_ruled_only else words.get(token)
            if value is None:
                near = {
                    v
                    for word, v in words.items()
                    if word[0] == token[0]  # every misspelling below keeps the first letter: skip the rest at once
                    and (
                        misspells(token, word, min(allowed_edits(token), allowed_edits(word)))
                        or (slot in answering and (_short_typo(token, word) or _answer_typo(token, word)))
                    )
                    and not _inflected(token, word)
                }
                value = near.pop() if len(near) == 1 else None
            if value is not None:
                negated = scope.negates(start, end)
                found.append(Mention(slot, None if negated else value, start, end, negated))
    return found


def _answer_typo(token: str, word: str) -> bool:
    """`token` misspells a value's `word` of `ANSWER_TYPO_LETTERS` letters or more by one edit more than a misspelling
    anywhere may hold ("forkflit"): the desk has just asked for that slot."""
    return len(word) >= ANSWER_TYPO_LETTERS and misspells(token, word, allowed_edits(word) + 1)


ANSWER_TYPO_LETTERS = 8


def _short_typo(token: str, word: str) -> bool:
    """A four-letter `token` that is a five-letter `word` one letter short, its first letter kept."""
    return len(token) == 4 and len(word) == 5 and token[0] == word[0] and within(token, word, 1)


def understand(
    text: str, pack: DomainPack, asked: str | None = None, *, answered_topic: str | None = None
) -> Understanding:
    """Screen and read one turn. A screened turn yields no slot updates.

    `asked` is what the desk asked last (`DialogueState.asked`: a request action's name or `confirm`);
    the desk profile reads a short answer as an answer to it. `answered_topic` is the topic the desk's last
    answer raised a slot with (`DialogueState.answered_topic`): the desk profile reads a short yes or no as an
    answer to that slot, and "it" as the topic's words where that reading sets the slot ("i'll need it" after
    the creche's answer). The lesson profile reads the turn alone."""
    normalized = normalize(text)
    patterns = pack.compiled
    injection = _screens(normalized, patterns.injection, patterns.benign)
    staff_only = _screens(normalized, patterns.staff_only, patterns.benign)
    screened = bool(injection or staff_only)
    if pack.understanding_profile is UnderstandingProfile.DESK:
        index = pack.example_index
        speller = pack.speller
        # The reading takes the turn with the desk's words spelt right; the screens above read it as typed.
        read = speller.correct(normalized, names(text)) if speller is not None else normalized
        found = index.match(read) if index is not None else None
        examples = pack.examples or _NO_EXAMPLES
        typed = patterns.contact_typed
        if not screened and typed is not None and typed.search(normalized) is not None:
            return Understanding(
                intent=CONTACT_TYPED,
                route="enroll",
                injection_screen=False,
                privileged_request=False,
                slot_updates={},
                contact_typed=True,
            )
        raised = pack.raising_topic(answered_topic)
        reading = _read_at_desk(patterns.expand(read), pack, found, examples, asked, injection, staff_only, raised)
        if screened or raised is None or raised.raises in reading.slot_updates:
            return reading
        return _read_as_raised(normalized, pack, raised, reading, asked) or reading
    updates, mentions_values, mentions_any = ({}, False, False) if screened else _read_slots(normalized, pack)
    intent, route, question, topic = _route(
        normalized, pack, mentions_values=mentions_values, mentions_any=mentions_any, screened=screened
    )
    if route in ("abstain", "hand_off"):
        updates = {}  # a turn the desk does not take up changes no slot
    return Understanding(
        intent=intent,
        route=route,
        injection_screen=bool(injection),
        privileged_request=bool(staff_only),
        slot_updates=updates,
        screens_fired=(*injection, *staff_only),
        question=question,
        topic=topic.name if topic else None,
        correction=not screened and patterns.correction_marker.search(normalized) is not None,
    )


def _read_as_raised(
    normalized: str, pack: DomainPack, raised: Topic, reading: Understanding, asked: str | None
) -> Understanding | None:
    """The turn read with its pronouns as the words of the topic just answered (`Topic.raised_as`), where that
    sets the slot the topic raises and keeps the turn's route and topic: "aye i'll need it for my wee one" after
    the creche's answer needs child care; "ok, is it free?" asks what it asked. Else none."""
    answers = pack.compiled.answers
    if raised.raised_as is None or answers is None or answers.pronoun is None:
        return None
    resolved = answers.pronoun.sub(raised.raised_as, normalized)
    if resolved == normalized:
        return None
    index = pack.example_index
    found = index.match(resolved) if index is not None else None
    examples = pack.examples or _NO_EXAMPLES
    again = _read_at_desk(pack.compiled.expand(resolved), pack, found, examples, asked, [], [], raised)
    if again.slot_updates.get(raised.raises or "") is None:
        return None
    kept = again.route == "enroll" or (again.route == reading.route and again.topic == reading.topic)
    return again if kept else None


@dataclass
class _Reading:
    """A turn as the desk reads it, built up by `_read_at_desk`."""

    intent: str
    route: Route
    question: bool
    topic: Topic | None
    updates: dict[str, str]
    injection: list[str]
    staff_only: list[str]
    answer: Answer | None = None
    restart: bool = False
    correction: bool = False  # a correction marker, in a turn not screened
    other_offering: bool = False  # "the other course", naming no offering


LONG_WORD = 6
"""A value's word this long is read through a misspelling anywhere; a shorter one only as an answer."""

SMALL_TALK_WORDS = 3
"""A statement this short that names a value ("by post pls", "the blue one") is taken at its word."""

HAND_OFF_NEAR = 0.5
HAND_OFF_MARGIN = 2.0
"""A turn nearest a hand-off intent's examples at `HAND_OFF_NEAR` times `min_score` or more, and ahead of every
other label by `HAND_OFF_MARGIN` times `min_margin`, is handed off though not sure (a misspelt request); both
chosen by 2-fold cross-validation on the tuning parts."""

_NO_EXAMPLES = ExampleSet(min_score=1.0, min_margin=1.0)
"""A desk without examples.toml: no example is ever sure, and nothing is out of scope by distance alone."""


def _sure(found: Match | None, examples: ExampleSet) -> tuple[str, str] | None:
    """The nearest example's label as (kind, name) when it is sure (`min_score`, `min_margin`), else None."""
    if found is None or found.score < examples.min_score or found.margin < examples.min_margin:
        return None
    kind, _, name = found.label.partition(":")
    return kind, name


def _read_at_desk(
    text: str,
    pack: DomainPack,
    found: Match | None,
    examples: ExampleSet,
    asked: str | None,
    injection: list[str],
    staff_only: list[str],
    raised: Topic | None = None,
) -> Understanding:
    """The desk profile's one reading of a turn: the rules as its floor, the desk's examples for intent,
    topic and out of scope, and the question the desk asked last for short answers (or, where it asked no
    yes/no question, the slot its last answer `raised`: "yes please" after the creche's answer).

    In order: a screen (a rule, or an example at `screen_min_score`, which 1.0 turns off) refuses and
    reads nothing else. "Start over" restarts. A hand-off rule hands off. A question on a topic the desk
    does not cover (by rule) is abstained on: the desk must not answer half of it. A short answer to the
    desk's last question answers it ("the blue one", "by post", "yes", "not sure"). Then the examples, when
    sure: a hand-off, a topic (for a question, or a statement that names no value), out of scope. Then a
    short statement typed as a search that the examples and the rules place on one topic ("hours of
    operation"); the rules' topic, unless it is a program's fact asked in words nearest other desks' turns
    and the desk never uses ("civil course syllabus?": abstained on, never "which program?"); a question
    nothing answers (abstained on), a turn that names values (the frame),
    an example's value, a turn the examples place with other desks or attacks (abstained on), a statement
    on the frame; anything else is about nothing the desk does and is abstained on. A long turn the
    examples do not place on the desk is handed to staff.

    Slots: what the rules read exactly binds: a value a rule read as negated or disagreeing is never set
    by a later step (an example's value needs a turn with no negation at all and no rule mention of that
    slot). A value's own words ("data", "forklfit") count for the slot just asked, in a correction, a
    statement on the frame, a short turn, or a statement that names an offering and is nearest the desk's own
    examples ("i want to do the data one"). A turn the desk does not take up changes no slot.
    """
    compiled = pack.compiled
    rules = pack.spec.understanding
    unmatched = rules.questions.unmatched_intent
    default = rules.default_intent.name
    answers = compiled.answers
    settings = rules.answers
    words = WORD.findall(text)  # as the examples' index reads words ("don't" is one)
    short = settings is not None and len(words) <= settings.max_words
    screen_examples = (
        found is not None
        and found.label.startswith(f"{SCREEN}:")
        and examples.screen_min_score < 1.0
        and found.score >= examples.screen_min_score
        and found.margin >= examples.min_margin
    )
    if not (injection or staff_only) and screen_examples:
        assert found is not None
        fired = [f"{found.label.partition(':')[2]}_examples"]
        injection, staff_only = (fired, []) if found.label == f"{SCREEN}:injection" else ([], fired)
    if injection or staff_only:
        return _understanding(_Reading(_classify(text, pack).name, "enroll", False, None, {}, injection, staff_only))

    sure = _sure(found, examples)
    kind, name = sure if sure is not None else ("", "")
    asked_slot = pack.frame.slot_asked_by(asked)
    asked_spec = pack.frame.slot(asked_slot) if asked_slot is not None else None
    yes_no_slot = asked_spec is not None and {"yes", "no"} <= set(asked_spec.values)
    question = compiled.question.search(text) is not None
    # Where each hand-off intent's benign exceptions match, found once: a question about the assistant or about staff
    # ("am I chatting with a computer program?") is no request for a person, and a topic's words inside it ask
    # nothing of the topic.
    named_spans = {
        rule.name: [(name, found.span()) for name in rule.unless for found in compiled.benign[name].finditer(text)]
        for rule, _ in compiled.intents
        if rule.route == "hand_off"
    }
    excepted = {intent: [span for _, span in found] for intent, found in named_spans.items()}
    about_the_assistant = [
        span for found in named_spans.values() for name, span in found if name in compiled.hides_topics
    ]
    rule_topic = _topic(text, pack, outside=about_the_assistant or None) if question else None
    if rule_topic is not None and not rule_topic.covered:
        rule_topic = _asked_topic(text, pack, rule_topic)
    model_topic = pack.topic(name) if kind == TOPIC else None
    intent = _classify(text, pack)

    answer: Answer | None = None
    skip = (0, 0)
    if answers is not None and short:
        for said, pattern in (("yes", answers.yes), ("no", answers.no)):
            if (match := pattern.search(text)) is not None:
                answer, skip = said, match.span()  # type: ignore[assignment]
                break
        # "I don't know yet" answering "which program?" is unsure, not a no: only a yes/no slot takes a no.
        if (
            (answer is None or (answer == "no" and not yes_no_slot))
            and asked_slot is not None
            and answers.unsure.search(text)
        ):
            answer = "unsure"
    restart = answers is not None and answers.restart.search(text) is not None
    other_pattern = answers.other_offering if answers is not None else None

    scope = _Scope(text, compiled, _window(pack))
    if rule_topic is not None and (negated := [(m.start, m.end) for m in _mentions(text, pack, scope) if m.negated]):
        # A topic read only inside a negated slot mention is not asked: "can i sign up for X, i dont need child care"
        # asks nothing about child care; "..., when is it?" still asks when.
        rule_topic = _topic(text, pack, outside=negated)
    on_a_topic = question and (rule_topic is not None or model_topic is not None)
    # "its right sorry" says yes to what the desk asked; it corrects nothing.
    correction = compiled.correction_marker.search(text) is not None and answer != "yes"
    framed = compiled.frame_statement is not None and compiled.frame_statement.search(text) is not None
    score = found.score if found is not None else 0.0
    off_desk = rules.statements.unmatched_intent if rules.statements else unmatched
    nearest = found.label.partition(":")[0] if found is not None else ""
    offering_words = _offering_words(text, pack)  # per offering named, the words of its name the turn uses
    names_an_offering = bool(offering_words)
    # A statement naming an offering by its own words ("i want to do the data one"), near the desk's own examples.
    # Or by two words of one offering's name, whatever it is near ("hi wanna do data suport").
    offered = not question and (
        (
            nearest not in (OTHER, SCREEN)
            and found is not None
            and found.score >= examples.far_score
            and names_an_offering
        )
        or any(len(named) >= 2 for named in offering_words.values())
    )
    # Which slots' values may be named by their own words this turn: the slot just asked; every slot in a
    # very short turn ("the data one"), a statement about the frame, a correction, a short turn once the desk
    # has asked something, or a statement naming an offering; the offering in a question on one offering's fact;
    # and (in `_slots`) every slot a rule read.
    frame_words = not on_a_topic and (
        len(words) <= SMALL_TALK_WORDS or correction or framed or (short and asked is not None) or offered
    )
    words_for = frozenset(pack.value_words) if frame_words else frozenset()
    if asked_slot is not None and not on_a_topic:
        words_for |= {asked_slot} & set(pack.value_words)
    asked_topic = rule_topic or model_topic
    if (
        on_a_topic
        and asked_topic is not None
        and asked_topic.program_rows
        and names_an_offering
        and not _unknown_words(words, pack)
        and nearest not in ("", OTHER, SCREEN)
    ):
        # A question on one offering's fact names the offering in its own words ("when does the data one meet?"), not
        # something else, in words the desk never uses or nearest other desks' turns ("how long does a driving licence
        # take to come").
        words_for |= {pack.program_slot}
    # The slot just asked is answered through a typo of four letters ("emal"); after the read-back, a short statement
    # may change any slot so ("actualy emal").
    answering = frozenset({asked_slot}) if asked_slot is not None else frozenset()
    if asked == Action.CONFIRM and short and not question:
        answering = frozenset(pack.value_words)
    # A yes/no slot's value named only inside a question about the desk is asked about, not said ("is there a creche?").
    clauses = _question_clauses(text, compiled.question) if question else None
    asked_about = _about_the_desk(text, clauses, answers.itself if answers else None) if clauses is not None else None
    slots = _slots(
        text,
        pack,
        scope,
        words_for,
        skip,
        follow_rules=True,
        short=short and not on_a_topic,
        answering=answering,
        asked_about=asked_about,
        questions=clauses,
    )
    updates = dict(slots.updates)
    other_offering = (
        other_pattern is not None
        and pack.program_slot not in slots.mentioned
        and other_pattern.search(text) is not None
    )
    if yes_no_slot and answer in ("yes", "no") and asked_slot not in slots.mentioned:
        assert asked_slot is not None
        updates[asked_slot] = answer  # type: ignore[assignment]
    raised_slot = raised.raises if raised is not None and not yes_no_slot else None
    # A yes or no to the slot the desk's last answer raised: "no thanks" after the creche's answer; a firm yes only
    # ("yes please", not "ok thanks").
    raised_answer = (
        raised_slot is not None
        and answers is not None
        and not question
        and raised_slot not in slots.mentioned
        and (answer == "no" or (answer == "yes" and (answers.raised_yes or answers.yes).search(text) is not None))
    )
    if raised_answer:
        assert raised_slot is not None
        updates[raised_slot] = answer  # type: ignore[assignment]
    if (
        asked_slot == pack.program_slot
        and short
        and not question
        and asked_slot not in slots.mentioned
        and answers is not None
        and (place := next((index for index, pattern in enumerate(answers.by_place) if pattern.search(text)), None))
        is not None
    ):
        updates[asked_slot] = pack.spec.programs[place].id  # "the first one", answering "which program?"

    def read_as(intent_name: str, route: Route, topic: Topic | None = None) -> Understanding:
        kept = updates
        if route == "inform":  # a question chooses its rows, not how to be asked the rest
            chosen = {pack.program_slot, asked_slot, *slots.stated}
            requested = {slot.name for slot in pack.frame.requested_slots}
            kept = {slot: value for slot, value in updates.items() if slot in chosen or slot not in requested}
        read = _Reading(intent_name, route, question, topic, kept, [], [], answer, restart, correction, other_offering)
        return _understanding(read)

    long_turn = settings is not None and len(words) > settings.long_turn_words
    if restart or not words:  # "start over"; a turn with no words at all is asked again
        return read_as(default, "enroll")
    if intent.route == "hand_off" and not (
        question
        and rule_topic is not None
        and rule_topic.covered
        and _by_one_word(text, pack, intent, excepted.get(intent.name, []))
    ):
        # A question on one of the desk's topics that names people by one word asks about them, not for them: "do the
        # staff at the front desk work on saturdays?" is the desk's hours.
        return read_as(intent.name, "hand_off", rule_topic)
    if compiled.greeting is not None and compiled.greeting.fullmatch(text) is not None:
        return _understanding(_Reading(default, "enroll", False, None, {}, [], []))  # "good morning": small talk
    if rule_topic is not None and not rule_topic.covered:
        return read_as(rule_topic.intent_name, "abstain", rule_topic)
    if long_turn and kind not in (TOPIC, INTENT, VALUE):
        return read_as(off_desk, "abstain")
    if (
        asked_slot != pack.program_slot
        and not names_an_offering
        and pack.program_slot not in slots.mentioned
        and _names_an_unrun_offering(text, pack)
    ):
        # "the mech course": one the desk does not run. Answering "which program?" it is asked again instead: a
        # resident may name the desk's own course in words it does not know ("the tech one").
        return read_as(unmatched if question else off_desk, "abstain")
    answered = asked_slot is not None and (asked_slot in updates or answer == "unsure")
    # The resident's own choice: a statement in their own words ("I'd prefer a letter"), or an answer naming a value of
    # the slot just asked ("an SMS would be fine", "and can you text me").
    # The slots the desk's last question asked for: the one requested, or after the read-back any it read back. A
    # statement of up to twice max_words naming a value of one answers it too ("text is fine for you lot though", "it's
    # the contact, text not email"), unless its words are nearest an attack's.
    asked_for = (
        {asked_slot}
        if asked_slot is not None
        else {slot.name for slot in pack.frame.requested_slots}
        if asked == Action.CONFIRM
        else set()
    )
    answers_asked = bool(asked_for & set(slots.updates)) and (
        short or (not question and nearest != SCREEN and settings is not None and len(words) <= 2 * settings.max_words)
    )
    speaks_for_self = answers is not None and answers.itself.search(text) is not None
    # "and can you text me": a short question asking the desk to reach the resident by a value it names.
    asked_to_reach = short and question and bool(slots.updates) and _ASKED_TO_CONTACT.search(text) is not None
    # A correction once the desk has asked something changes the resident's own choice ("make it a call instead").
    corrects_own = correction and asked is not None
    own_choice = (not question and (speaks_for_self or answers_asked or corrects_own)) or asked_to_reach
    elsewhere = kind in (OTHER, SCREEN)  # the examples are sure it is another desk's turn or an attack
    if (
        slots.mentions_any
        and nearest in (OTHER, SCREEN)
        and not on_a_topic
        and (
            # an answer of a few words, once the desk has asked, is the resident's, wherever its words are most used
            (elsewhere and not (kind == OTHER and asked is not None and len(words) <= SMALL_TALK_WORDS))
            or (not own_choice and (question or not (len(words) <= SMALL_TALK_WORDS or names_an_offering)))
        )
    ):
        # Nearest other desks' turns or attacks, and on none of the desk's topics: its values are about
        # something else ("how can I track my wife's tablet?", "set the living room lights"), unless it is a
        # short statement ("by post pls") or one of the resident's own ("I'd prefer a letter") that the examples
        # do not place elsewhere for sure.
        return read_as(off_desk, "abstain")
    if not on_a_topic and (answered or raised_answer or (asked == Action.CONFIRM and answer is not None)):
        return read_as(default, "enroll")
    hand_offs = {rule.name for rule in rules.intents if rule.route == "hand_off"}
    if kind == INTENT and name in hand_offs:
        return read_as(name, "hand_off")
    near_label, _, near_name = found.label.partition(":") if found is not None else ("", "", "")
    if (
        near_label == INTENT
        and near_name in hand_offs
        and found is not None
        and found.score >= HAND_OFF_NEAR * examples.min_score
        and found.margin >= HAND_OFF_MARGIN * examples.min_margin
        and not slots.mentions_any
        and not on_a_topic
        and not framed
        and not excepted.get(near_name)
    ):
        # Nearest a request for a person by a wide margin, though not sure by score: a misspelt request
        # ("can I talkk to someone", "speak with a eprson") shares most of its n-grams with the examples.
        return read_as(near_name, "hand_off")
    if (
        rule_topic is not None
        and rule_topic.covered
        and model_topic is not None
        and model_topic.name != rule_topic.name
        and score < TOPIC_OVERRULE
    ):
        model_topic = None  # the rules' topic stands, unless an example of another topic all but repeats the turn
    if model_topic is not None and (question or not slots.mentions_any):
        if not model_topic.covered:
            return read_as(model_topic.intent_name, "abstain", model_topic)
        if score >= examples.inform_min_score:
            return read_as(model_topic.intent_name, "inform", model_topic)
    search = len(words) <= SEARCH_WORDS and not (question or answer or correction)
    statement_topic = _topic(text, pack) if search else None  # the rules' topic of a statement, read once
    searched = _searched_topic(statement_topic, pack, found, examples, words) if search else None
    if statement_topic is not None and not statement_topic.covered and not slots.mentions_any:
        # Typed as a search for something the handbook does not cover ("food facility inside the campus"): abstained
        # on, and the topic kept for the staff who take it up.
        return read_as(statement_topic.intent_name, "abstain", statement_topic)
    if searched is not None and not slots.mentions_any:
        # Typed as a search ("hours of operation", "courses you offer"): a short statement that names no value,
        # nearest one of the desk's topics, which its rule reads too or which is clearly ahead of every other label.
        return read_as(searched.intent_name, "inform", searched)
    if (
        statement_topic is not None
        and statement_topic.covered
        and slots.mentioned == {pack.program_slot}
        and pack.program_slot in updates
    ):
        # A search for one offering's fact ("forklift hours pls", "data suport schedule"): its program and the topic
        # a rule reads in it.
        return read_as(statement_topic.intent_name, "inform", statement_topic)
    if rule_topic is not None:
        unknown = len(_unknown_words(words, pack)) if not (slots.mentions_any or names_an_offering) else 0
        nearest_elsewhere = (
            nearest == OTHER
            and score >= examples.far_score
            and found is not None
            and found.margin >= examples.min_margin
        )
        if (nearest_elsewhere and unknown >= (1 if rule_topic.program_rows else UNKNOWN_WORDS)) or (
            rule_topic.program_rows and kind != TOPIC and unknown >= UNKNOWN_WORDS
        ):
            # A topic's question in words the desk never uses, naming none of its values or offerings ("how long do i
            # boil eggs", "civil course syllabus?", "what if my exams are on different campuses at the same time?"):
            # not the desk's question, and never one for "which program?". One such word is enough where the turn is
            # nearest other desks' turns and asks a program's fact; two where it asks another topic's, or where a
            # program's fact is asked and no example is sure of the topic.
            return read_as(unmatched, "abstain")
        if kind == OTHER or score < examples.inform_min_score:
            return read_as(unmatched, "abstain")
        return read_as(rule_topic.intent_name, "inform", rule_topic)
    if kind == VALUE and not slots.mentions_any and not scope.has_negation():
        slot, _, value = name.partition(":")
        updates[slot] = value  # "give me a ring": no rule read a value, and nothing negates this one
        return read_as(default, "enroll")
    # Asking the desk for something of the frame whatever else the turn names: "and can you text me", "can i change to
    # the other course?", "can i sign up?".
    asks_for_the_frame = asked_to_reach or other_offering or _only_asks_to_enrol(text, pack)
    about_the_frame = (
        slots.mentioned & {pack.program_slot, asked_slot}
        or (asked is not None and slots.mentions_values)
        or asks_for_the_frame
        or (correction and asked is not None)  # "could I change something?" once the desk has asked
    )
    if (
        question
        and about_the_frame
        and not asks_for_the_frame
        and compiled.fact_question is not None
        and compiled.fact_question.search(text)
        and not (asked is not None and slots.mentions_values and not slots.mentioned & {pack.program_slot})
        and _unknown_words(words, pack)
    ):
        # A question for a fact that no topic holds, naming an offering only and in a word the desk never uses ("whats
        # the pass rate for forklift"): the desk cannot answer it, and it asks for no offering.
        return read_as(unmatched, "abstain")
    if question and not about_the_frame:
        # A question about none of the desk's topics is about the frame only when it names what the desk
        # offers, or a value of what the desk asks once it has asked ("could you sign me up for X?", "what
        # about by post?" after the confirmation); "can I get a new tablet?" at the start is not.
        return read_as(unmatched, "abstain")
    if slots.mentions_any:
        return read_as(intent.name, "enroll")
    if elsewhere:  # sure it is another desk's turn or an attack, and it names no value: never the frame's
        return read_as(off_desk, "abstain")
    if kind == INTENT or asked == Action.CONFIRM:  # after the confirmation, a statement is told what comes next
        return read_as(intent.name, "enroll")
    content = [word for word in words if word not in STOP_WORDS]
    # Far: less like every example than far_score, or sharing nothing with them in two words or more ("hmm"
    # is asked again). A desk without examples knows no distance.
    far = found.score < examples.far_score if found is not None else len(content) > 1 and pack.examples is not None
    # Small talk ("hiya mate", "cheers", "yes"), a correction ("sorry, I meant the other one": about an earlier
    # turn) and, once the desk has asked something, any short turn are asked again, never abstained on for
    # being below far_score: too few words of their own for a cosine to mean anything.
    chat = found is not None and (
        len(words) <= SMALL_TALK_WORDS or answer is not None or correction or (asked is not None and short)
    )
    if (
        asked is None
        and answer is None
        and not correction
        and len(words) <= SMALL_TALK_WORDS
        and content
        and not framed
        and pack.examples is not None
        and (
            found is None
            or found.score < examples.far_score
            or (nearest == OTHER and found.margin >= SHORT_OTHER_MARGIN * examples.min_margin)
        )
        and _all_unknown(content, pack)
    ):
        # A short first turn in words the desk never uses, far from every example or nearest other desks' turns, is no
        # small talk: "define economics", "lab manual", "coffee please", "qwertyuiop" are abstained on, never asked for
        # a slot.
        return read_as(off_desk, "abstain")
    if content and not framed and far and not chat:
        return read_as(off_desk, "abstain")  # far from everything the desk knows: out of scope
    if (
        content
        and not framed
        and answer is None
        and nearest == OTHER
        and found is not None
        and found.margin >= examples.min_margin
    ):
        # Nearest another desk's turn by a clear margin ("mute the music"); never a yes, a no or "either" ("yeah go
        # on").
        return read_as(off_desk, "abstain")
    statements = rules.statements
    if statements is None or _on_the_frame(text, pack, statements):
        return read_as(intent.name, "enroll")
    return read_as(statements.unmatched_intent, "abstain")


SHORT_OTHER_MARGIN = 0.25
"""A short first turn in words the desk never uses is abstained on when it is nearest other desks' turns by this share
of `min_margin` (chosen by 2-fold cross-validation: 0, 0.125, 0.25, 0.5 scored 2316, 2315, 2315, 2313 Riverton rows)."""

TOPIC_OVERRULE = 0.9
"""A covered topic the rules read in a question stands against a nearest example of another topic unless the example
scores this much ("how do i apply for the X course?" is the enrolment process, not the course's schedule)."""

UNKNOWN_WORDS = 2
"""A question with this many words the desk never uses is not the desk's: on any topic when nearest other desks'
turns, on a program's fact when no example is sure of its topic."""

SEARCH_WORDS = 4
"""A statement this short that names no value may be typed as a search ("hours of operation", "fees for first year")."""

SEARCH_NEAR = 0.8
SEARCH_MARGIN = 2.0
"""A short statement nearest a covered topic's examples at `SEARCH_NEAR` times `min_score` and `SEARCH_MARGIN` times
`min_margin` ahead of every other label, or nearest the topic its rule reads (at `far_score` or more), asks about it."""


def _searched_topic(
    ruled: Topic | None, pack: DomainPack, found: Match | None, examples: ExampleSet, words: list[str]
) -> Topic | None:
    """The covered topic a short statement typed as a search asks about, if the examples and the rules (their
    reading `ruled`) agree."""
    if found is None or not found.label.startswith(f"{TOPIC}:"):
        # No example of a topic is near: the rules' covered topic stands, where no example elsewhere is sure and every
        # word is one the desk uses ("office working hours"; not "hours of starbucks").
        sure_elsewhere = found is not None and found.score >= examples.min_score
        trusted = ruled is not None and ruled.covered and not sure_elsewhere and not _unknown_words(words, pack)
        return ruled if trusted else None
    near = pack.topic(found.label.partition(":")[2])
    if near is None or not near.covered or found.score < examples.far_score:
        return None
    if ruled is not None and ruled.name == near.name:
        return near
    clear = found.score >= SEARCH_NEAR * examples.min_score and found.margin >= SEARCH_MARGIN * examples.min_margin
    return near if clear and ruled is None else None


def _only_asks_to_enrol(text: str, pack: DomainPack) -> bool:
    """Whether the turn asks to enrol (`enrol_question_pattern`) in words the desk uses outside the pattern's match
    ("hiya can i enrol?"; not "can i enrol at the university?")."""
    pattern = pack.compiled.enrol_question
    found = pattern.search(text) if pattern is not None else None
    if found is None:
        return False
    return not _unknown_words(WORD.findall(f"{text[: found.start()]} {text[found.end() :]}"), pack)


def _unknown_words(words: list[str], pack: DomainPack) -> list[str]:
    """The turn's content words that the desk never uses, nor misspells ("boil", "civil", "flight")."""
    known = pack.desk_words
    return [
        word
        for word in words
        if word not in STOP_WORDS
        and word.isalpha()
        and len(word) >= 3
        and word not in known
        and word.removesuffix("s") not in known
        and not any(word[:letters] in known for letters in range(STEM_LETTERS, len(word)))  # "applying": "apply"
        and not pack.desk_words_misspelt(word)
    ]


STEM_LETTERS = 4
"""A word that begins with a word or stem of this many letters that the desk uses is the desk's too ("applying",
"eligibility")."""


def _names_an_unrun_offering(text: str, pack: DomainPack) -> bool:
    """Whether the turn names offerings (`unrun_offering_pattern`) only by words the desk never uses: two letters
    or more ("ug course", "eee course", "courses for nursing"), none a stop word."""
    pattern = pack.compiled.unrun_offering
    if pattern is None:
        return False
    # The word is in the group `name`, or one named `name2`, `name3`... where the pattern has several branches.
    names = [
        word
        for found in pattern.finditer(text)
        for group, word in found.groupdict().items()
        if group.startswith("name") and word
    ]
    names = [name for name in names if name not in STOP_WORDS]
    return bool(names) and all(
        name not in pack.desk_words and (len(name) < 3 or _unknown_words([name], pack)) for name in names
    )


def _all_unknown(content: list[str], pack: DomainPack) -> bool:
    """Whether the turn has words the desk never uses (`_unknown_words`) and no other word of three letters or more."""
    unknown = _unknown_words(content, pack)
    return bool(unknown) and len(unknown) == sum(1 for word in content if word.isalpha() and len(word) >= 3)


def _inflected(token: str, word: str) -> bool:
    """Whether `token` is `word` with a plain English ending ("messages", "replied" is not)."""
    return token.startswith(word) and token[len(word) :] in ("s", "es", "d", "ed", "ing", "er", "ers")


def _offering_words(text: str, pack: DomainPack) -> dict[str, set[str]]:
    """Per offering the text names, the words of its own name it uses, or misspells when long ("forklfit"). A turn
    that names an offering is about this desk, whatever else it is near; one that uses two words of one name
    ("data suport") names it for sure."""
    words = pack.value_words.get(pack.program_slot, {})
    named: dict[str, set[str]] = {}
    for token in _LETTERS.findall(text):
        for word, value in words.items():
            if token == word or (
                len(word) >= LONG_WORD and token[0] == word[0] and misspells(token, word, allowed_edits(word))
            ):
                named.setdefault(value, set()).add(word)
    return named


_ASKED_TO_CONTACT = re.compile(r"\b(?:you|u)\s+(?:\w+\s+){0,2}?(?:me|instead)\b")
"""A question asking the desk to reach the resident some way ("can you text me", "could u please write to me", "can
you call instead")."""
_SENTENCE_END = re.compile(r"[.!?]")
_CLAUSE_START = re.compile(r"[.!?,;]")


def _asked_topic(text: str, pack: DomainPack, uncovered: Topic) -> Topic:
    """The topic of a turn whose words name `uncovered` (a topic the desk does not answer) only outside its questions,
    where its questions ask a covered one: the covered one where the uncovered words come after the questions ("what
    time does it finish? last bus is 9.20"), or before them in questions that point back at nothing ("i'm skint after
    the rent, will i have to pay anything at all?"); else `uncovered` ("i want to park my car, how much is it?"). What
    points back is the pack's pronoun (`answers.pronoun_pattern`); without one, only an afterthought yields."""
    clauses = _question_clauses(text, pack.compiled.question)
    if not clauses:
        return uncovered
    answers = pack.compiled.answers
    pronoun = answers.pronoun if answers is not None else None
    asked = [text[start:end] for start, end in clauses]
    covered = _topic(" ".join(asked), pack)
    pattern = next((compiled for topic, compiled in pack.compiled.topics if topic is uncovered), None)
    if covered is None or not covered.covered or pattern is None:
        return uncovered
    named = [found.start() for found in pattern.finditer(text)]
    if any(start <= at < end for at in named for start, end in clauses):
        return uncovered  # the question itself names it
    after = all(at >= clauses[-1][1] for at in named)
    if after or (pronoun is not None and not any(pronoun.search(question) for question in asked)):
        return covered
    return uncovered


def _question_clauses(text: str, question: re.Pattern[str]) -> list[tuple[int, int]]:
    """The spans of a turn's questions: from a question word to the end of its sentence ("do you offer childcare?"),
    or for a bare question mark, from the clause it closes ("i'll need the creche, is it free?": "is it free?")."""
    spans: list[tuple[int, int]] = []
    for match in question.finditer(text):
        if match.group().endswith("?") and match.end() - match.start() == 1:
            before = [m.end() for m in _CLAUSE_START.finditer(text, 0, match.start())]
            spans.append((before[-1] if before else 0, match.end()))
        else:
            end = _SENTENCE_END.search(text, match.end())
            spans.append((match.start(), end.end() if end else len(text)))
    return spans


def _about_the_desk(text: str, clauses: list[tuple[int, int]], itself: re.Pattern[str] | None) -> list[tuple[int, int]]:
    """The question `clauses` about the desk: not one in which the resident speaks of themselves (`itself`: "can I
    bring my kid?")."""
    return [(a, b) for a, b in clauses if itself is None or itself.search(text, a, b) is None]


def _understanding(reading: _Reading) -> Understanding:
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
        correction=reading.correction,
        answer=reading.answer,
        restart=reading.restart,
        other_offering=reading.other_offering and reading.route == "enroll",
    )
