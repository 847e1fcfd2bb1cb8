"""The staff desk: the people half of the design.

Two queues, each a partition of the table's sparse queue index (dialogue.store.QUEUE_INDEX):

- review: every generated reply once screened. A person claims it, reads the draft, the handbook rows
  the prompt used, the screens that fired and the reply shown, then approves or rejects it with a
  reason code from the pack; a rejection may carry a correction, posted to the resident as a staff
  message. The turn's `human_review` becomes approved, rejected or corrected.
- handoff: every hand_off, abstain_hand_off and refuse turn. A person claims it, replies to the
  resident (a staff message) and closes it.

A claim is a lock with an expiry, taken with a conditional write: of two claimants one wins, the other
gets a 409 that names no one. Every claim, release, decision, reply and close appends an audit item
(who, when, what, which turn), written once and never updated. Staff text is kept only as staff
messages, with their own retention, and never in an audit item or a log line.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from dialogue.actions import (
    CONTENT_SCREENS,
    SCREEN_LABELS,
    STAFF_REJECTED,
    Action,
    HandoffStatus,
    HumanReview,
    ReplyScreen,
    Screen,
)
from dialogue.errors import (
    CorrectionRequired,
    InvalidDecision,
    NoDraftToSend,
    NotSignedIn,
    NotStaff,
    StaffTextTooLong,
)
from dialogue.pack import DomainPack
from dialogue.records import Draft, TurnRecord


class StaffMember(BaseModel):
    """Who acts: the token's subject (kept in claims and audit items) and, for display, a name."""

    model_config = ConfigDict(frozen=True)

    subject: Annotated[str, Field(min_length=1, max_length=128)]
    name: str | None = None


class Passage(BaseModel):
    passage_id: str
    text: str


class Claim(BaseModel):
    """A claim as the staff see it: whether it is theirs, and until when. Never who else holds it."""

    mine: bool
    expires_at: datetime


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


class HandoffItem(DeskItem):
    intent: str
    injection_screen: bool
    privileged_request: bool
    handoff_status: HandoffStatus
    closed_at: datetime | None = None


class DecisionRequest(BaseModel):
    """A staff decision on a reviewed reply."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    decision: Literal["approve", "reject"]
    reason: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    correction: Annotated[str, Field(min_length=1, max_length=4000)] | None = None


class StaffText(BaseModel):
    """A staff message to a resident (a hand-off reply)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    text: Annotated[str, Field(min_length=1, max_length=4000)]


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
    return Claim(mine=turn.claimed_by == staff.subject, expires_at=turn.claim_expires_at)


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


def handoff_item(turn: TurnRecord, staff: StaffMember, now: datetime) -> HandoffItem:
    return HandoffItem(
        **_desk_fields(turn, staff, now),
        intent=turn.intent,
        injection_screen=turn.injection_screen,
        privileged_request=turn.privileged_request,
        handoff_status=turn.handoff_status or HandoffStatus.OPEN,
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


class ScreenLabel(BaseModel):
    name: str
    label: str


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


def slot_labels(pack: DomainPack) -> list[SlotLabels]:
    """Each slot of `pack`'s frame with its label and its values' labels."""
    return [
        SlotLabels(
            name=spec.name,
            label=spec.label,
            values=[ValueLabel(value=value, label=pack.value_label(spec.name, value)) for value in spec.values],
        )
        for spec in pack.frame.slots
    ]


def screen_labels() -> list[ScreenLabel]:
    """Every screen with what staff call it."""
    return [ScreenLabel(name=str(screen), label=label) for screen, label in SCREEN_LABELS.items()]


# --- statistics ------------------------------------------------------------------------------------


class ScreenAgreement(BaseModel):
    """Of the decided replies a screen (or all screens) held, the share staff also rejected; of those it
    passed, the share staff rejected. None where there is nothing to count."""

    held: int
    held_rejected_share: float | None
    passed: int
    passed_rejected_share: float | None


class DayOfDecisions(BaseModel):
    """How many replies staff decided on one day (UTC), by outcome."""

    day: date
    approved: int = 0
    rejected: int = 0
    corrected: int = 0


class DeskStats(BaseModel):
    reviews: dict[str, int]
    handoffs: dict[str, int]
    decided: int
    decisions_per_day: list[DayOfDecisions]
    seconds_to_decision_median: float | None
    seconds_to_decision_p90: float | None
    shown_as_drafted_share: float | None
    screens_overall: ScreenAgreement
    screens: dict[str, ScreenAgreement]


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _agreement(decided: Sequence[TurnRecord], held: Iterable[bool]) -> ScreenAgreement:
    flags = list(held)
    held_turns = [turn for turn, flag in zip(decided, flags, strict=True) if flag]
    passed_turns = [turn for turn, flag in zip(decided, flags, strict=True) if not flag]
    rejected = STAFF_REJECTED
    return ScreenAgreement(
        held=len(held_turns),
        held_rejected_share=_share(sum(t.human_review in rejected for t in held_turns), len(held_turns)),
        passed=len(passed_turns),
        passed_rejected_share=_share(sum(t.human_review in rejected for t in passed_turns), len(passed_turns)),
    )


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (for p90: the smallest value at or above 90% of them)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * fraction // 1))
    return ordered[int(rank) - 1]


def desk_stats(reviews: Sequence[TurnRecord], handoffs: Sequence[TurnRecord]) -> DeskStats:
    """The desk's figures from every review and hand-off item."""
    decided = [turn for turn in reviews if turn.human_review not in (HumanReview.PENDING, HumanReview.NOT_APPLICABLE)]
    waits = [
        (turn.decided_at - (turn.queued_at or turn.created_at)).total_seconds()
        for turn in decided
        if turn.decided_at is not None
    ]
    review_counts = {str(status): 0 for status in HumanReview if status is not HumanReview.NOT_APPLICABLE}
    for turn in reviews:
        review_counts[str(turn.human_review)] = review_counts.get(str(turn.human_review), 0) + 1
    handoff_counts = {str(status): 0 for status in HandoffStatus}
    for turn in handoffs:
        status = turn.handoff_status or HandoffStatus.OPEN
        handoff_counts[str(status)] += 1
    days: dict[date, DayOfDecisions] = {}
    for turn in decided:
        if turn.decided_at is not None:
            day = turn.decided_at.astimezone(UTC).date()
            counts = days.setdefault(day, DayOfDecisions(day=day))
            outcome = str(turn.human_review)
            setattr(counts, outcome, getattr(counts, outcome) + 1)
    return DeskStats(
        reviews=review_counts,
        handoffs=handoff_counts,
        decided=len(decided),
        decisions_per_day=[days[day] for day in sorted(days)],
        seconds_to_decision_median=statistics.median(waits) if waits else None,
        seconds_to_decision_p90=percentile(waits, 0.9) if waits else None,
        shown_as_drafted_share=_share(sum(not turn.fallback_used for turn in reviews), len(reviews)),
        screens_overall=_agreement(decided, (turn.reply_screen is ReplyScreen.HELD for turn in decided)),
        screens={
            str(screen): _agreement(decided, (screen in turn.screens_fired for turn in decided))
            for screen in CONTENT_SCREENS
        },
    )
