"""The staff desk: the people half of the design.

Two queues, each a partition of the table's sparse queue index (dialogue.aws.table.QUEUE_INDEX):

- review: every held reply once screened, and each reply shown as drafted that the desk's draw picked
  for a check (dialogue.human_checks; in the lesson profile, every generated reply). A person claims it,
  reads the draft, the handbook rows
  the prompt used, the screens that fired and the reply shown, then approves or rejects it with a
  reason code from the pack; a rejection may carry a correction, posted to the resident as a staff
  message. The turn's `human_review` becomes approved, rejected or corrected.
- handoff: every hand_off, abstain_hand_off and refuse turn. A person claims it, replies to the
  resident (a staff message) and closes it.

From an item of either queue, the person holding its claim may correct the conversation's record: set one
slot to one of its values (`corrected_record`). The change is a turn of its own, written with the state,
and the resident is sent the desk's fixed confirmation of the corrected record.

A claim is a lock with an expiry, taken with a conditional write: of two claimants one wins, the other
gets a 409 that names no one. Every claim, release, decision, reply, close and correction appends an audit
item (who, when, what, which turn), written once and never updated. Who may claim and act on an item, and
what each act changes and records in the audit, are dialogue.desk_rules; a store
(dialogue.ports.DeskStore) applies them. Staff text is kept only as staff messages, with their own
retention, and never in an audit item or a log line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from dialogue.actions import (
    CONTENT_SCREENS,
    STAFF_REJECTED,
    Action,
    HandoffStatus,
    HumanReview,
    ReplyScreen,
    Screen,
    ScreenProfile,
)
from dialogue.conversation import Message
from dialogue.desk_rules import DeskCounters as DeskCounters
from dialogue.desk_rules import StaffMember as StaffMember
from dialogue.errors import (
    MAX_STAFF_TEXT_CHARS,
    CorrectionRequired,
    InvalidDecision,
    NoDraftToSend,
    NotSignedIn,
    NotStaff,
    StaffTextTooLong,
    UnknownSlotValue,
)
from dialogue.pack import DomainPack
from dialogue.ports import SealedContact, StaffMessage
from dialogue.records import ConversationRecord, Draft, HandoffAsk, TurnRecord, desk_turn
from dialogue.replies import fixed_reply
from dialogue.state import DialogueState


class Passage(BaseModel):
    passage_id: str
    text: str


class Claim(BaseModel):
    """A claim as the staff see it: whether it is theirs, until when, and who holds it by the name their
    sign-in gives (never their subject; null where it gives none)."""

    mine: bool
    expires_at: datetime
    holder: str | None = None


class DeskItem(BaseModel):
    """What every queue item shows: the turn, its action and slots, its queue and its claim."""

    conversation_id: UUID
    turn_id: int
    action: Action
    slots: dict[str, str]
    # The handbook topic that decided an inform or an abstention (a pack name), else none.
    topic: str | None = None
    queued_at: datetime
    created_at: datetime
    claim: Claim | None = None
    # On one item's own view (never in a queue's page): what the resident was shown in this conversation,
    # in order: the desk's replies and the staff messages, the ones just sent included. Never their words.
    seen: list[Message] | None = None


class ReviewItem(DeskItem):
    passages: list[Passage]
    draft: str | None
    output_tokens: int | None
    ended_by_eos: bool | None
    hit_token_cap: bool | None
    screens_fired: list[Screen]
    reply_screen: ReplyScreen
    fallback_used: bool
    reply_shown: str | None
    human_review: HumanReview
    decision_reason: str | None = None
    decided_at: datetime | None = None
    finalized_at: datetime | None = None


class ContactLeft(BaseModel):
    """That the resident left a contact form on this conversation, without what it says: opening it is a
    separate, audited step (POST .../contact)."""

    channel: str
    has_detail: bool
    has_note: bool
    left_at: datetime
    expires_at: datetime


class ContactShown(ContactLeft):
    """What the resident wrote in the contact form, opened for one member of staff (the read is audited)."""

    detail: str | None
    note: str | None


class HandoffItem(DeskItem):
    intent: str
    injection_screen: bool
    privileged_request: bool
    handoff_status: HandoffStatus
    closed_at: datetime | None = None
    # Every turn of the conversation left to a person while this item was open, oldest first: the one that
    # opened it, then each that joined it (dialogue.handoffs). Why the resident waits, in names.
    asks: list[HandoffAsk]
    # The conversation's contact form, when the resident left one (shown on its hand-offs only, unopened).
    contact: ContactLeft | None = None


class DecisionRequest(BaseModel):
    """A staff decision on a reviewed reply."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    decision: Literal["approve", "reject"]
    reason: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    correction: Annotated[str, Field(min_length=1, max_length=MAX_STAFF_TEXT_CHARS)] | None = None


class StaffText(BaseModel):
    """A staff message to a resident (a hand-off reply)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    text: Annotated[str, Field(min_length=1, max_length=MAX_STAFF_TEXT_CHARS)]


class SlotCorrection(BaseModel):
    """A staff correction of the conversation's record: one slot of the desk's frame set to one of its values
    (names from the pack, as `/staff/desk` lists them)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    slot: Annotated[str, Field(min_length=1, max_length=64)]
    value: Annotated[str, Field(min_length=1, max_length=64)]


def decided_review(request: DecisionRequest, pack: DomainPack) -> HumanReview:
    """The review a decision gives, checked against the desk's rules: a rejection names a reason from the
    pack's list and may carry a correction (then the reply is corrected); an approval takes neither."""
    if request.decision == "approve":
        if request.reason is not None or request.correction is not None:
            raise InvalidDecision()
        return HumanReview.APPROVED
    if request.reason not in pack.spec.staff.reason_codes:
        raise InvalidDecision()
    return HumanReview.CORRECTED if request.correction is not None else HumanReview.REJECTED


def message_for_decision(
    review: HumanReview, correction: str | None, turn: TurnRecord, draft: Draft | None
) -> str | None:
    """What a decision sends the resident, so that no promise goes unkept.

    A correction is always sent. Where the resident was shown the fallback ("a staff member must examine
    the handbook fact before I reply"), an approval sends the approved draft (NoDraftToSend where none is
    left), and a rejection needs a correction (CorrectionRequired). Where the resident saw the reply
    itself, an approval or a bare rejection sends nothing more."""
    if correction is not None:
        return correction
    if not turn.fallback_used:
        return None
    if review is not HumanReview.APPROVED:
        raise CorrectionRequired()
    if draft is None or not draft.text.strip():
        raise NoDraftToSend()
    return draft.text


# --- correcting the record -------------------------------------------------------------------------------

STAFF_CORRECTION = "staff_correction"
"""The intent of the turn a member of staff writes when they correct the conversation's record."""


def checked_correction(request: SlotCorrection, pack: DomainPack) -> tuple[str, str]:
    """The slot and value of a correction, both the pack's; UnknownSlotValue (which names neither) when the
    frame has no such slot or the slot takes no such value."""
    spec = next((slot for slot in pack.frame.slots if slot.name == request.slot), None)
    if spec is None or request.value not in spec.values:
        raise UnknownSlotValue()
    return spec.name, request.value


def record_action(state: DialogueState, pack: DomainPack) -> Action:
    """What the desk tells the resident about a corrected record: its confirmation, or, while a slot the desk
    asks for is unknown (staff set it so, or it was never given), its question for the first such slot, as the
    policy would ask it. Never a confirmation that reads back "unknown"."""
    for slot in pack.frame.requested_slots:
        if not state.is_known(slot.name) and slot.request_action is not None:
            return slot.request_action
    return Action.CONFIRM


def corrected_record(
    before: ConversationRecord, slot: str, value: str, pack: DomainPack, staff: StaffMember, now: datetime
) -> tuple[DialogueState, TurnRecord]:
    """The conversation's state with `slot` set to `value` by a member of staff, and the turn that records the
    change and tells the resident.

    The state is the stored one read under today's pack (as a resident's turn reads it), with the one slot
    changed and `asked` set to the action below, so the resident's next turn meets a record the desk has just
    read back: a "yes" or "thanks" is not confirmed again, a short answer fills the slot just asked for. A
    question waiting for its program (`waiting_topic`) keeps waiting.

    The turn is the next one of the conversation (the caller writes it with the state, in one transaction
    conditional on the state's version, so it follows every resident turn committed before it and none is
    lost). It keeps what every turn keeps (slots, action, flags), its intent is STAFF_CORRECTION and
    `corrected_by` names the staff member, so the retained record shows who changed it. It counts as one of
    the conversation's turns, and is written at the turn limit too (staff's fix of the record matters more).

    Its action is the desk's confirmation of the corrected record (`record_action`: the request for a slot
    still unknown). A confirmation or a request is worded by the model at a resident's turn, but here it is a
    fixed-text turn: `reply_source` fixed and `status` final when written. So no model is called and nothing
    is dispatched (the table's stream carries pending TURN inserts only), and the resident's message list
    (dialogue.conversation.messages) shows, in its place after the turns before it, the pack's fixed text for
    that action filled from the turn's own slots (`correction_reply`, the same `fixed_reply` every fixed turn
    is rebuilt with): the confirmation of the corrected record. No text is kept for it, staff's or anyone's."""
    waiting = before.state.waiting_topic if pack.topic(before.state.waiting_topic) else None
    current, _ = DialogueState.read_stored(pack.frame, before.state.slots, waiting, before.state.asked)
    changed = current.with_updates({slot: value})
    action = record_action(changed, pack)
    state = changed.asking(str(action))
    turn = desk_turn(before, state, intent=STAFF_CORRECTION, action=action, now=now, corrected_by=staff.subject)
    return state, turn


def correction_reply(turn: TurnRecord, pack: DomainPack) -> str:
    """What the resident is shown for a correction's turn: the pack's fixed text for its action, from its
    slots (what dialogue.conversation rebuilds for every fixed-text turn)."""
    state, _ = DialogueState.read_stored(pack.frame, turn.slots)
    return fixed_reply(Action(turn.action), state, pack)


def next_staff_message(
    record: ConversationRecord, count: int, about_turn: int, text: str, now: datetime
) -> StaffMessage:
    """The staff message a reply or a decision posts, about item `about_turn`: after the conversation's last
    turn, numbered one past the `count` messages it has had, so the resident's list only grows at its end."""
    return StaffMessage(after_turn=record.turn_count, number=count + 1, about_turn=about_turn, text=text, at=now)


def checked_staff_text(text: str, pack: DomainPack) -> str:
    """Staff text within the desk's limit, or StaffTextTooLong."""
    if len(text) > pack.spec.staff.max_message_chars:
        raise StaffTextTooLong()
    return text


def claimed_groups(claims: Mapping[str, Any]) -> frozenset[str]:
    """The token's groups. API Gateway passes a JWT's claims as strings: a list claim such as
    `cognito:groups` arrives as "[desk-staff other]"; a test or another gateway may pass a real list."""
    groups = claims.get("cognito:groups")
    if isinstance(groups, list | tuple):
        return frozenset(str(group) for group in groups)
    if isinstance(groups, str):
        return frozenset(groups.strip().removeprefix("[").removesuffix("]").replace(",", " ").split())
    return frozenset()


def staff_member(claims: Mapping[str, Any] | None, group: str) -> StaffMember:
    """The staff member a verified token's claims name. The gateway has checked the token (signature,
    issuer, audience, expiry); the group is checked here, as the gateway's authorizer checks scopes only.
    No subject: NotSignedIn (401); not in the group: NotStaff (403)."""
    subject = (claims or {}).get("sub")
    if not isinstance(subject, str) or not 0 < len(subject) <= 128:
        raise NotSignedIn()
    if group not in claimed_groups(claims or {}):
        raise NotStaff()
    name = (claims or {}).get("username") or (claims or {}).get("cognito:username")
    return StaffMember(subject=subject, name=str(name)[:128] if name else None)


def claim_view(turn: TurnRecord, staff: StaffMember, now: datetime) -> Claim | None:
    if turn.claimed_by is None or turn.claim_expires_at is None or turn.claim_expires_at <= now:
        return None
    return Claim(mine=turn.claimed_by == staff.subject, expires_at=turn.claim_expires_at, holder=turn.claimed_by_name)


def _desk_fields(turn: TurnRecord, staff: StaffMember, now: datetime) -> dict[str, Any]:
    """What every queue item shows (DeskItem's fields)."""
    return {
        "conversation_id": turn.conversation_id,
        "turn_id": turn.turn_id,
        "action": turn.action,
        "slots": dict(turn.slots),
        "topic": turn.topic,
        "queued_at": turn.queued_at or turn.created_at,
        "created_at": turn.created_at,
        "claim": claim_view(turn, staff, now),
    }


def review_item(
    turn: TurnRecord, reply: str | None, draft: Draft | None, pack: DomainPack, staff: StaffMember, now: datetime
) -> ReviewItem:
    passage_ids = draft.passage_ids if draft is not None else ()
    return ReviewItem(
        **_desk_fields(turn, staff, now),
        passages=[Passage(passage_id=pid, text=pack.passages[pid].text) for pid in passage_ids if pid in pack.passages],
        draft=draft.text if draft is not None else None,
        output_tokens=draft.output_tokens if draft is not None else None,
        ended_by_eos=draft.ended_by_eos if draft is not None else None,
        hit_token_cap=draft.hit_token_cap if draft is not None else None,
        screens_fired=list(turn.screens_fired),
        reply_screen=turn.reply_screen,
        fallback_used=turn.fallback_used,
        reply_shown=reply,
        human_review=turn.human_review,
        decision_reason=turn.decision_reason,
        decided_at=turn.decided_at,
        finalized_at=turn.finalized_at,
    )


def handoff_item(
    turn: TurnRecord, staff: StaffMember, now: datetime, contact: SealedContact | None = None
) -> HandoffItem:
    left = None
    if contact is not None:
        left = ContactLeft(
            channel=contact.channel,
            has_detail=contact.has_detail,
            has_note=contact.has_note,
            left_at=contact.left_at,
            expires_at=contact.expires_at,
        )
    return HandoffItem(
        **_desk_fields(turn, staff, now),
        contact=left,
        intent=turn.intent,
        injection_screen=turn.injection_screen,
        privileged_request=turn.privileged_request,
        handoff_status=turn.handoff_status or HandoffStatus.OPEN,
        asks=[turn.as_ask(), *turn.joined],
        closed_at=turn.decided_at if turn.handoff_status is HandoffStatus.CLOSED else None,
    )


class ValueLabel(BaseModel):
    value: str
    label: str


class SlotLabels(BaseModel):
    """A frame slot as staff read it: its label and its values' labels, from the pack."""

    name: str
    label: str
    values: list[ValueLabel]
    # The request action that asks for it (a name from the pack), so a reply's item can say what it asked.
    request_action: str | None = None


class ScreenLabel(BaseModel):
    """A screen as staff read it: its name, its label, and the profile that adds it (null: every reply
    gets it)."""

    name: Screen
    label: str
    profile: ScreenProfile | None


class DeskInfo(BaseModel):
    """What a staff page needs to know about the desk and the signed-in person."""

    staff: StaffMember
    # The desk's name, from its pack: the console's title is the desk's, not any one desk's.
    desk: str
    reason_codes: list[str]
    max_message_chars: int
    claim_seconds: int
    # How the console shows slots and screens: words from the pack and from one table of screens.
    slots: list[SlotLabels]
    screens: list[ScreenLabel]
    # How the console writes dates and times: the desk's locale and time zone ([hours]; else the browser's).
    locale: str | None = None
    time_zone: str | None = None


def slot_labels(pack: DomainPack) -> list[SlotLabels]:
    """Each slot of `pack`'s frame with its label and its values' labels."""
    return [
        SlotLabels(
            name=spec.name,
            label=spec.label,
            values=[ValueLabel(value=value, label=pack.value_label(spec.name, value)) for value in spec.values],
            request_action=str(spec.request_action) if spec.request_action is not None else None,
        )
        for spec in pack.frame.slots
    ]


def screen_labels() -> list[ScreenLabel]:
    """Every screen with what staff call it and its profile: the Screen enum's own."""
    return [ScreenLabel(name=screen, label=screen.label, profile=screen.profile) for screen in Screen]


# --- statistics ------------------------------------------------------------------------------------
#
# The figures are read from counters, never from the items: each decision and each close adds 1 to named
# counters in the same transaction that records it (dialogue.aws.figures keeps them in a STATS partition: a
# TOTAL item since counting began, and one item per UTC day of decisions), and the open work is counted
# on the sparse open-queue index, which holds nothing else. So reading the figures costs the same with ten
# decided items as with ten million. `decision_counters` names what one decision adds to, `decision_adds`
# and `CLOSE_ADDS` where; `stats_from_counters` turns the counters into DeskStats.

WAIT_BUCKETS: tuple[int, ...] = (
    10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 43200,
    86400, 172800, 345600, 604800, 1209600, 2592000,
)  # fmt: skip
"""The seconds-to-decision histogram's buckets, by their upper bounds in seconds (each bound included):
10 s, 30 s, 1, 2, 5, 10, 15 and 30 min, 1, 2, 4, 8 and 12 h, 1, 2, 4, 7, 14 and 30 days; one more bucket
holds the waits longer than 30 days."""
OVERALL = "overall"
"""The counters' name for "any screen": a reply the screens held (reply_screen held) or passed."""
CLOSED = "closed"
SHOWN_AS_DRAFTED = "shown_as_drafted"
SHOWN_CHECKED = "shown_checked"
SHOWN_REJECTED = "shown_checked_rejected"
"""The checked sample of shown replies (decided, shown as drafted) and those of it staff rejected or corrected:
counted together from their first decision on, so the miss rate's two counts cover the same decisions."""
DECISION_OUTCOMES = (HumanReview.APPROVED, HumanReview.REJECTED, HumanReview.CORRECTED)
READABLE_SAMPLE = 30
"""The fewest decisions a share is read from: below it, the figures say the sample is too small."""
Z_95 = 1.959963984540054
"""The standard normal quantile for a two-sided 95% interval."""


def wait_counter(seconds: float) -> str:
    """The histogram counter a wait of `seconds` adds 1 to: `wait_le_<bound>`, or `wait_over_<last bound>`."""
    for bound in WAIT_BUCKETS:
        if seconds <= bound:
            return f"wait_le_{bound}"
    return f"wait_over_{WAIT_BUCKETS[-1]}"


def screen_counter(screen: str, held: bool, *, rejected: bool = False) -> str:
    """`<screen>.held`, `<screen>.passed`, and `.held_rejected`/`.passed_rejected`: the _agreement figures."""
    return f"{screen}.{'held' if held else 'passed'}{'_rejected' if rejected else ''}"


def decision_counters(turn: TurnRecord, review: HumanReview, decided_at: datetime) -> list[str]:
    """The counters one decision on `turn` adds 1 to: its outcome; whether the resident was shown the reply
    as drafted (then it is one of the checked sample of shown replies, and whether staff rejected it); for
    all screens together and for each content screen, whether it held or passed the reply and (for a
    rejection or correction) that staff rejected it; and the bucket of its seconds to decision (from queued
    to decided)."""
    rejected = review in STAFF_REJECTED
    names = [str(review)]
    if not turn.fallback_used:
        names += [SHOWN_AS_DRAFTED, SHOWN_CHECKED, *([SHOWN_REJECTED] if rejected else [])]
    held = {OVERALL: turn.reply_screen is ReplyScreen.HELD}
    held.update((str(screen), screen in turn.screens_fired) for screen in CONTENT_SCREENS)
    for screen, flag in held.items():
        names.append(screen_counter(screen, flag))
        if rejected:
            names.append(screen_counter(screen, flag, rejected=True))
    names.append(wait_counter((decided_at - (turn.queued_at or turn.created_at)).total_seconds()))
    return names


@dataclass(frozen=True)
class CounterAdds:
    """What one act adds to the desk's counters: 1 to each of `names` in the TOTAL counters and, where
    `day` is given, in that UTC day's counters too."""

    names: tuple[str, ...]
    day: date | None


def decision_adds(turn: TurnRecord, review: HumanReview, now: datetime) -> CounterAdds:
    """A decision adds to its counters (`decision_counters`) in TOTAL and in the day of `now` (UTC)."""
    return CounterAdds(tuple(decision_counters(turn, review, now)), now.astimezone(UTC).date())


CLOSE_ADDS = CounterAdds((CLOSED,), None)
"""A close adds 1 to `closed` in TOTAL only."""


class ScreenAgreement(BaseModel):
    """Of the decided replies a screen (or all screens) held, the share staff also rejected; of those it
    passed, the share staff rejected. None where there is nothing to count."""

    held: int
    held_rejected_share: float | None
    passed: int
    passed_rejected_share: float | None


class SampleShare(BaseModel):
    """A share estimated from a checked sample: `rejected` of `checked`, with its 95% Wilson score interval
    (`low`, `high`). `readable`: the sample holds at least READABLE_SAMPLE decisions; below that the share
    is too uncertain to read as a figure. None where nothing was checked."""

    checked: int
    rejected: int
    share: float | None
    low: float | None
    high: float | None
    readable: bool


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval for a proportion of `successes` in `trials` (at least 1): inside [0, 1]
    for any count, and not collapsed to one point at 0 or at every trial, as the normal approximation is."""
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError("the interval needs 0 <= successes <= trials and at least one trial")
    share, z2 = successes / trials, z * z
    middle = (share + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    # At 0 or at every trial one end is exactly 0 or 1, which rounding would miss by an ulp.
    low = 0.0 if successes == 0 else max(0.0, middle - half)
    high = 1.0 if successes == trials else min(1.0, middle + half)
    return low, high


def sample_share(rejected: int, checked: int) -> SampleShare:
    """`rejected` of `checked` as a SampleShare."""
    low, high = wilson_interval(rejected, checked) if checked else (None, None)
    return SampleShare(
        checked=checked,
        rejected=rejected,
        share=_share(rejected, checked),
        low=low,
        high=high,
        readable=checked >= READABLE_SAMPLE,
    )


class DayOfDecisions(BaseModel):
    """How many replies staff decided on one day (UTC), by outcome."""

    day: date
    approved: int = 0
    rejected: int = 0
    corrected: int = 0


class DeskStats(BaseModel):
    """The desk's figures. `reviews` and `handoffs`: the open work (pending, open) as the open-queue index
    holds it now, and the decisions (approved, rejected, corrected) and closes counted since counting began.
    `decisions_per_day`: the last 30 days that had decisions, oldest first. The median and p90 of the
    seconds to decision are bucket bounds: the upper bound of the WAIT_BUCKETS bucket that holds the
    nearest-rank median or 90th percentile (the last bound, 30 days, for a wait longer than that).
    `shown_as_drafted_share`: of the decided replies, the share the resident was shown as drafted.
    `screens_missed`: the screens' miss rate, estimated from the checked sample of shown replies (decided
    replies the resident saw as drafted): the share staff rejected or corrected, with its 95% interval.
    `shown_check_rate`: the chance a shown reply is drawn for a check (1 in the lesson profile), so the
    pending reviews are the held replies and about that share of the shown ones. `readable_sample`: the
    fewest decisions a share is read from (READABLE_SAMPLE); the console says "too few" below it."""

    reviews: dict[str, int]
    handoffs: dict[str, int]
    decided: int
    decisions_per_day: list[DayOfDecisions]
    seconds_to_decision_median: float | None
    seconds_to_decision_p90: float | None
    shown_as_drafted_share: float | None
    screens_overall: ScreenAgreement
    screens: dict[str, ScreenAgreement]
    screens_missed: SampleShare
    shown_check_rate: float
    readable_sample: int = READABLE_SAMPLE


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _agreement(counts: Mapping[str, int], screen: str) -> ScreenAgreement:
    held, passed = counts.get(screen_counter(screen, True), 0), counts.get(screen_counter(screen, False), 0)
    return ScreenAgreement(
        held=held,
        held_rejected_share=_share(counts.get(screen_counter(screen, True, rejected=True), 0), held),
        passed=passed,
        passed_rejected_share=_share(counts.get(screen_counter(screen, False, rejected=True), 0), passed),
    )


def _nearest_rank(count: int, fraction: float) -> int:
    """The nearest rank (from 1) of the `fraction` percentile of `count` values."""
    return int(max(1, -(-count * fraction // 1)))


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (for p90: the smallest value at or above 90% of them)."""
    return sorted(values)[_nearest_rank(len(values), fraction) - 1]


def bucket_percentile(counts: Mapping[str, int], fraction: float) -> float | None:
    """The upper bound of the WAIT_BUCKETS bucket holding the nearest-rank percentile of the histogram in
    `counts` (the last bound for the bucket beyond it); None for an empty histogram."""
    buckets = [(float(bound), counts.get(wait_counter(bound), 0)) for bound in WAIT_BUCKETS]
    buckets.append((float(WAIT_BUCKETS[-1]), counts.get(wait_counter(WAIT_BUCKETS[-1] + 1), 0)))
    total = sum(count for _, count in buckets)
    if not total:
        return None
    rank, seen = _nearest_rank(total, fraction), 0
    for bound, count in buckets:
        seen += count
        if seen >= rank:
            return bound
    raise AssertionError("unreachable: the rank is at most the total")


def stats_from_counters(counters: DeskCounters, shown_check_rate: float = 1.0) -> DeskStats:
    """The desk's figures from its counters (see DeskStats for what each means); `shown_check_rate`, the
    chance a shown reply is drawn for a check (dialogue.human_checks.shown_check_rate), is reported with them."""
    total = counters.total
    decided = sum(total.get(str(outcome), 0) for outcome in DECISION_OUTCOMES)
    reviews = {str(HumanReview.PENDING): counters.pending_reviews}
    reviews.update((str(outcome), total.get(str(outcome), 0)) for outcome in DECISION_OUTCOMES)
    return DeskStats(
        reviews=reviews,
        handoffs={str(HandoffStatus.OPEN): counters.open_handoffs, str(HandoffStatus.CLOSED): total.get(CLOSED, 0)},
        decided=decided,
        decisions_per_day=[
            DayOfDecisions(day=day, **{str(outcome): counts.get(str(outcome), 0) for outcome in DECISION_OUTCOMES})
            for day, counts in counters.days
            if any(counts.get(str(outcome), 0) for outcome in DECISION_OUTCOMES)
        ],
        seconds_to_decision_median=bucket_percentile(total, 0.5),
        seconds_to_decision_p90=bucket_percentile(total, 0.9),
        shown_as_drafted_share=_share(total.get(SHOWN_AS_DRAFTED, 0), decided),
        screens_overall=_agreement(total, OVERALL),
        screens={str(screen): _agreement(total, str(screen)) for screen in CONTENT_SCREENS},
        screens_missed=sample_share(total.get(SHOWN_REJECTED, 0), total.get(SHOWN_CHECKED, 0)),
        shown_check_rate=shown_check_rate,
    )
