"""The staff API Lambda: the desk's two queues (reviews of generated replies, hand-offs), claims,
decisions, staff messages, corrections of a conversation's record and the desk's figures.

Every route sits behind the HTTP API's JWT authorizer (signature, issuer, client, expiry); this function
also checks the staff group, which the authorizer cannot. Lists come from the table's sparse queue index,
never a Scan. Every claim, release, decision, reply, close, look at a contact form and correction of the
record appends an audit item: the next link of that turn's hash chain (dialogue.audit_chain: each link
holds the hash of the one before), in the same transaction as the change, then copied once to the WORM
audit bucket (S3 Object Lock; a failed copy is logged and counted as AuditCopyFailed, never the request's
failure; the sweeper repairs it). `GET /staff/audit` shows a turn's trail, oldest first, compared with
its write-once copies (the record: the staff role could overwrite a table link, never a copy), and says
what it checked; it is `verified` only against the copies.
Staff text is kept only as staff messages and never logged; resident text is never here at all.
"""

from __future__ import annotations

import functools
from datetime import datetime
from http import HTTPStatus
from typing import Annotated, Any, Literal
from uuid import UUID

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from dialogue import audit_chain, clock, contact, conversation, desk, human_checks
from dialogue.actions import Queue, ReplyScreen
from dialogue.aws.api import (
    BODY_UNREADABLE,
    ErrorCode,
    body_read_as_json,
    error_response,
    install_error_handlers,
    problem_at,
    refusal_response,
    unverified_origin,
)
from dialogue.aws.factory import get_desk_store, get_sealer
from dialogue.aws.observability import logger, metrics, tracer
from dialogue.aws.origin import forget_origin_values
from dialogue.desk import (
    DecisionRequest,
    DeskInfo,
    DeskStats,
    HandoffItem,
    ReviewItem,
    SlotCorrection,
    StaffMember,
    StaffText,
)
from dialogue.desk_rules import Decision, RecordCorrection
from dialogue.errors import DialogueError, NoContactLeft, SealUnavailable
from dialogue.pack import get_pack
from dialogue.ports import DeskStore, PageQuery, StaffMessage
from dialogue.realize import ModelAction
from dialogue.records import TurnRecord
from dialogue.settings import get_settings
from dialogue.snapstart import register_snapshot_hooks
from staff_models import (
    AuditChecked,
    AuditEntry,
    AuditTrail,
    ClaimReleased,
    ClaimTaken,
    Decided,
    HandoffPage,
    MessagePosted,
    RecordCorrected,
    ReviewPage,
    errors,
    success,
)

app = APIGatewayHttpResolver(enable_validation=True)

ConversationId = Annotated[UUID, Path(description="The conversation the turn belongs to.")]
TurnId = Annotated[int, Path(ge=1, le=999_999, description="The turn's number, from 1.")]
Order = Annotated[Literal["newest", "oldest"], Query(description="Newest or oldest queued first.")]
Limit = Annotated[int, Query(ge=1, le=100, description="At most this many items on the page.")]
Cursor = Annotated[str | None, Query(max_length=2048, description="The next_cursor of the previous page.")]
Held = Annotated[bool | None, Query(description="Only replies a screen held (true) or passed (false).")]
Drafted = Annotated[
    bool | None, Query(description="Only replies shown as the model drafted them (true) or replaced (false).")
]
GeneratedAction = Annotated[
    ModelAction | None, Query(description="Only replies for this action (a request_<slot>, confirm or inform).")
]
Review = Annotated[
    Literal["pending", "approved", "rejected", "corrected"] | None, Query(description="Only items with this review.")
]
HandedOffAction = Annotated[
    Literal["refuse", "abstain_hand_off", "hand_off"] | None, Query(description="Only hand-offs for this action.")
]
Status = Annotated[Literal["open", "closed"] | None, Query(description="Only open or closed hand-offs.")]
AuditConversation = Annotated[UUID, Query(description="The conversation the turn belongs to.")]
AuditTurn = Annotated[int, Query(ge=1, le=999_999, description="The turn's number, from 1.")]


def _now() -> datetime:
    return clock.now()


def _staff() -> StaffMember:
    staff: StaffMember = app.context["staff"]
    return staff


def _store() -> DeskStore:
    return get_desk_store()


# --- the queues ----------------------------------------------------------------------------------


@app.get(
    "/staff/reviews",
    responses={**success(HTTPStatus.OK, ReviewPage, "A page of the review queue."), **errors(400, 401, 403)},
)
def list_reviews(
    order: Order = "newest",
    held: Held = None,
    drafted: Drafted = None,
    action: GeneratedAction = None,
    review: Review = None,
    limit: Limit = 25,
    cursor: Cursor = None,
) -> ReviewPage:
    where: dict[str, str | bool] = {}
    if held is not None:
        where["reply_screen"] = str(ReplyScreen.HELD if held else ReplyScreen.NOT_FLAGGED)
    if drafted is not None:
        where["fallback_used"] = not drafted
    if action is not None:
        where["action"] = action
    if review is not None:
        where["human_review"] = review
    turns, next_cursor = _page(Queue.REVIEW, order, limit, cursor, where)
    metrics.add_metric(name="StaffReviewPagesRead", unit=MetricUnit.Count, value=1)
    return ReviewPage(items=_review_items(turns), next_cursor=next_cursor)


@app.get(
    "/staff/handoffs",
    responses={**success(HTTPStatus.OK, HandoffPage, "A page of the hand-off queue."), **errors(400, 401, 403)},
)
def list_handoffs(
    order: Order = "newest",
    status: Status = None,
    action: HandedOffAction = None,
    limit: Limit = 25,
    cursor: Cursor = None,
) -> HandoffPage:
    where: dict[str, str | bool] = {}
    if status is not None:
        where["handoff_status"] = status
    if action is not None:
        where["action"] = action
    turns, next_cursor = _page(Queue.HANDOFF, order, limit, cursor, where)
    metrics.add_metric(name="StaffHandoffPagesRead", unit=MetricUnit.Count, value=1)
    now = _now()
    return HandoffPage(items=[desk.handoff_item(turn, _staff(), now) for turn in turns], next_cursor=next_cursor)


def _page(
    queue: Queue, order: str, limit: int, cursor: str | None, where: dict[str, str | bool]
) -> tuple[list[TurnRecord], str | None]:
    try:
        return _store().queue_page(PageQuery(queue, order == "newest", limit, cursor, where))
    except ValueError:
        raise InvalidCursor() from None


class InvalidCursor(Exception):
    """A cursor this API did not give."""


@app.exception_handler(InvalidCursor)
def handle_invalid_cursor(_: InvalidCursor) -> Any:
    return error_response("invalid_cursor")


def _review_items(turns: list[TurnRecord]) -> list[ReviewItem]:
    replies = _store().drafts(turns)
    pack, staff, now = get_pack(), _staff(), _now()
    items = []
    for turn in turns:
        reply, draft = replies.get((turn.conversation_id, turn.turn_id), (None, None))
        items.append(desk.review_item(turn, reply, draft, pack, staff, now))
    return items


@app.get(
    "/staff/reviews/<conversation_id>/<turn_id>",
    responses={**success(HTTPStatus.OK, ReviewItem, "One generated reply, as reviewed."), **errors(400, 401, 403)},
)
def get_review(conversation_id: ConversationId, turn_id: TurnId) -> ReviewItem:
    turn = _store().queued_turn(conversation_id, turn_id, Queue.REVIEW)
    metrics.add_metric(name="StaffItemsRead", unit=MetricUnit.Count, value=1)
    return _review_items([turn])[0].model_copy(update={"seen": _seen(conversation_id)})


def _seen(conversation_id: UUID) -> list[conversation.Message]:
    """What the resident was shown in the conversation, in order (the chat's own /messages read)."""
    return conversation.messages(_store().conversations, get_pack(), conversation_id, 0).messages


@app.get(
    "/staff/handoffs/<conversation_id>/<turn_id>",
    responses={**success(HTTPStatus.OK, HandoffItem, "One hand-off."), **errors(400, 401, 403)},
)
def get_handoff(conversation_id: ConversationId, turn_id: TurnId) -> HandoffItem:
    store, now = _store(), _now()
    turn = store.queued_turn(conversation_id, turn_id, Queue.HANDOFF)
    metrics.add_metric(name="StaffItemsRead", unit=MetricUnit.Count, value=1)
    item = desk.handoff_item(turn, _staff(), now, store.read_contact(conversation_id, now))
    return item.model_copy(update={"seen": _seen(conversation_id)})


@app.post(
    "/staff/handoffs/<conversation_id>/<turn_id>/contact",
    responses={
        **success(
            HTTPStatus.OK,
            desk.ContactShown,
            "What the resident wrote in the contact form; the read is audited on this hand-off.",
        ),
        **errors(400, 401, 403, 404, 409, 503),
    },
)
def open_contact(conversation_id: ConversationId, turn_id: TurnId) -> desk.ContactShown:
    """Open the conversation's contact form for the staff member who holds this hand-off's claim. A POST:
    each read writes an audit link, and nothing caches it. Never logged."""
    store, now, staff = _store(), _now(), _staff()
    sealer = get_sealer()
    if sealer is None:
        raise SealUnavailable()
    sealed = store.contact_for_staff(conversation_id, turn_id, staff, now)
    if sealed is None:
        raise NoContactLeft()
    opened = contact.open_contact(sealed, conversation_id, sealer)
    _log("read_contact", Queue.HANDOFF, conversation_id, turn_id)
    metrics.add_metric(name="StaffContactReads", unit=MetricUnit.Count, value=1)
    return desk.ContactShown(
        channel=opened.channel,
        has_detail=sealed.has_detail,
        has_note=sealed.has_note,
        left_at=sealed.left_at,
        expires_at=sealed.expires_at,
        detail=opened.detail,
        note=opened.note,
    )


# --- claims --------------------------------------------------------------------------------------


def _claim(queue: Queue, conversation_id: UUID, turn_id: int) -> ClaimTaken:
    now = _now()
    expires = _store().claim(conversation_id, turn_id, queue, _staff(), now, get_settings().claim_lifetime)
    metrics.add_metric(name="StaffClaims", unit=MetricUnit.Count, value=1)
    _log("claim", queue, conversation_id, turn_id)
    return ClaimTaken(conversation_id=conversation_id, turn_id=turn_id, claim=desk.Claim(mine=True, expires_at=expires))


def _release(queue: Queue, conversation_id: UUID, turn_id: int) -> ClaimReleased:
    _store().release(conversation_id, turn_id, queue, _staff(), _now())
    metrics.add_metric(name="StaffReleases", unit=MetricUnit.Count, value=1)
    _log("release", queue, conversation_id, turn_id)
    return ClaimReleased(conversation_id=conversation_id, turn_id=turn_id)


_CLAIM_DOC = {
    **success(HTTPStatus.OK, ClaimTaken, "The claim is yours until it expires."),
    **errors(400, 401, 403, 409),
}
_RELEASE_DOC = {**success(HTTPStatus.OK, ClaimReleased, "The claim is released."), **errors(400, 401, 403, 409)}


@app.post("/staff/reviews/<conversation_id>/<turn_id>/claim", responses=_CLAIM_DOC)
def claim_review(conversation_id: ConversationId, turn_id: TurnId) -> ClaimTaken:
    return _claim(Queue.REVIEW, conversation_id, turn_id)


@app.post("/staff/handoffs/<conversation_id>/<turn_id>/claim", responses=_CLAIM_DOC)
def claim_handoff(conversation_id: ConversationId, turn_id: TurnId) -> ClaimTaken:
    return _claim(Queue.HANDOFF, conversation_id, turn_id)


@app.post("/staff/reviews/<conversation_id>/<turn_id>/release", responses=_RELEASE_DOC)
def release_review(conversation_id: ConversationId, turn_id: TurnId) -> ClaimReleased:
    return _release(Queue.REVIEW, conversation_id, turn_id)


@app.post("/staff/handoffs/<conversation_id>/<turn_id>/release", responses=_RELEASE_DOC)
def release_handoff(conversation_id: ConversationId, turn_id: TurnId) -> ClaimReleased:
    return _release(Queue.HANDOFF, conversation_id, turn_id)


# --- decisions, replies, closes ------------------------------------------------------------------


@app.post(
    "/staff/reviews/<conversation_id>/<turn_id>/decision",
    responses={
        **success(HTTPStatus.OK, Decided, "The decision is recorded; what it sends the resident is posted."),
        **errors(400, 401, 403, 409, 422),
    },
)
def decide(conversation_id: ConversationId, turn_id: TurnId, request: Annotated[DecisionRequest, Body()]) -> Decided:
    pack, store = get_pack(), _store()
    review = desk.decided_review(request, pack)
    correction = desk.checked_staff_text(request.correction, pack) if request.correction is not None else None
    turn = store.queued_turn(conversation_id, turn_id, Queue.REVIEW)
    reply, draft = store.drafts([turn]).get((conversation_id, turn_id), (None, None))
    message = desk.message_for_decision(review, correction, turn, draft)
    decision = Decision(turn, review, request.reason, message, reply_kept=reply is not None)
    posted = store.decide(decision, _staff(), _now())
    _log("decision", Queue.REVIEW, conversation_id, turn_id, outcome=str(review), reason=request.reason)
    metrics.add_metric(name=f"StaffDecision_{review}", unit=MetricUnit.Count, value=1)
    sent = _posted(conversation_id, posted)
    return Decided(
        item=get_review(conversation_id, turn_id), correction=sent if correction is not None else None, message=sent
    )


@app.post(
    "/staff/handoffs/<conversation_id>/<turn_id>/reply",
    responses={
        **success(HTTPStatus.OK, MessagePosted, "The staff message is posted to the resident's conversation."),
        **errors(400, 401, 403, 409, 422),
    },
)
def reply(conversation_id: ConversationId, turn_id: TurnId, request: Annotated[StaffText, Body()]) -> MessagePosted:
    text = desk.checked_staff_text(request.text, get_pack())
    posted = _store().reply(conversation_id, turn_id, _staff(), _now(), text)
    _log("reply", Queue.HANDOFF, conversation_id, turn_id, text_chars=len(text))
    metrics.add_metric(name="StaffReplies", unit=MetricUnit.Count, value=1)
    answer = _posted(conversation_id, posted)
    assert answer is not None
    return answer


@app.post(
    "/staff/handoffs/<conversation_id>/<turn_id>/close",
    responses={**success(HTTPStatus.OK, HandoffItem, "The hand-off is closed."), **errors(400, 401, 403, 409)},
)
def close(conversation_id: ConversationId, turn_id: TurnId) -> HandoffItem:
    _store().close(conversation_id, turn_id, _staff(), _now())
    _log("close", Queue.HANDOFF, conversation_id, turn_id)
    metrics.add_metric(name="StaffHandoffsClosed", unit=MetricUnit.Count, value=1)
    return get_handoff(conversation_id, turn_id)


# --- correcting the record -----------------------------------------------------------------------------

_CORRECT_DOC = {
    **success(
        HTTPStatus.OK,
        RecordCorrected,
        "The slot is set; the change is a turn of its own, and the resident is sent the desk's fixed "
        "confirmation of the corrected record.",
    ),
    **errors(400, 401, 403, 404, 409, 422),
}


def _correct_record(queue: Queue, conversation_id: UUID, turn_id: int, request: SlotCorrection) -> RecordCorrected:
    """Set one slot of the conversation's record from an item of `queue` whose claim the caller holds: the
    STATE item (versioned), a turn recording the change and the item's audit link, in one transaction
    (dialogue.desk.corrected_record, dialogue.ports.DeskStore). Slot and value are the pack's names, so they
    may be logged."""
    pack, store, staff, now = get_pack(), _store(), _staff(), _now()
    slot, value = desk.checked_correction(request, pack)
    correct = functools.partial(desk.corrected_record, slot=slot, value=value, pack=pack, staff=staff, now=now)
    turn = store.correct_record(RecordCorrection(conversation_id, turn_id, queue, slot, value, correct), staff, now)
    _log("correct_record", queue, conversation_id, turn_id, slot=slot, value=value, written_turn=turn.turn_id)
    metrics.add_metric(name="StaffRecordCorrections", unit=MetricUnit.Count, value=1)
    return RecordCorrected(
        conversation_id=conversation_id,
        turn_id=turn_id,
        correction_turn_id=turn.turn_id,
        slots=dict(turn.slots),
        action=turn.action,
        reply=desk.correction_reply(turn, pack),
    )


@app.post("/staff/reviews/<conversation_id>/<turn_id>/slots", responses=_CORRECT_DOC)
def correct_record_from_review(
    conversation_id: ConversationId, turn_id: TurnId, request: Annotated[SlotCorrection, Body()]
) -> RecordCorrected:
    return _correct_record(Queue.REVIEW, conversation_id, turn_id, request)


@app.post("/staff/handoffs/<conversation_id>/<turn_id>/slots", responses=_CORRECT_DOC)
def correct_record_from_handoff(
    conversation_id: ConversationId, turn_id: TurnId, request: Annotated[SlotCorrection, Body()]
) -> RecordCorrected:
    return _correct_record(Queue.HANDOFF, conversation_id, turn_id, request)


def _posted(conversation_id: UUID, message: StaffMessage | None) -> MessagePosted | None:
    if message is None:
        return None
    return MessagePosted(
        conversation_id=conversation_id,
        after_turn=message.after_turn,
        number=message.number,
        about_turn=message.about_turn,
        at=message.at,
    )


def _log(what: str, queue: Queue, conversation_id: UUID, turn_id: int, **extra: Any) -> None:
    """Who did what to which turn: ids, codes and sizes, never text."""
    logger.info(
        f"staff {what}",
        staff=_staff().subject,
        queue=str(queue),
        conversation_id=str(conversation_id),
        turn_id=turn_id,
        **extra,
    )


# --- the audit ------------------------------------------------------------------------------------------


@app.get(
    "/staff/audit",
    responses={
        **success(
            HTTPStatus.OK,
            AuditTrail,
            "The turn's audit trail, oldest first, what it was checked against, and whether it verifies.",
        ),
        **errors(400, 401, 403, 503),
    },
)
def audit_trail(conversation_id: AuditConversation, turn_id: AuditTurn) -> AuditTrail:
    """The table's links compared with their write-once copies (a link changed, removed or added there,
    hashes recomputed or not, differs from the record) and their hash chain verified; without a bucket,
    the chain alone, and never `verified`."""
    store = _store()
    links = store.audit_trail(conversation_id, turn_id)
    found = store.turn_copies(conversation_id, turn_id)
    now = _now().timestamp()
    problems = audit_chain.verify_chain(links, now=now)
    if found is not None:
        copies, rewritten = found
        problems.extend(audit_chain.compare_copies(links, copies, rewritten=rewritten, now=now))
    checked = AuditChecked(
        against="write_once_copy" if found is not None else "hash_chain_only",
        links=len(links),
        copies=len(found[0]) if found is not None else None,
        problems=len(problems),
    )
    if problems:
        logger.warning(
            "audit trail does not verify",
            conversation_id=str(conversation_id),
            turn_id=turn_id,
            problems=len(problems),
        )
        metrics.add_metric(name="AuditChainBroken", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="StaffAuditTrailsRead", unit=MetricUnit.Count, value=1)
    me = _staff().subject
    entries = [_audit_entry(link, me) for link in sorted(links, key=lambda link: int(link.get("seq") or 0))]
    verified = found is not None and not problems
    return AuditTrail(
        conversation_id=conversation_id, turn_id=turn_id, items=entries, checked=checked, verified=verified
    )


def _audit_entry(link: dict[str, Any], me: str) -> AuditEntry:
    """A link as the trail shows it; a changed link whose fields are no longer of their kind still shows."""

    def text(name: str) -> str | None:
        value = link.get(name)
        return None if value is None else str(value)

    try:
        at = datetime.fromisoformat(str(link.get("at")))
    except ValueError:
        at = None
    return AuditEntry(
        at=at,
        staff=text("staff") or "",
        mine=link.get("staff") == me,
        action=text("action") or "",
        outcome=text("outcome"),
        reason=text("reason"),
        hash=text("hash") or "",
    )


# --- the desk and its figures ----------------------------------------------------------------------------


@app.get(
    "/staff/desk",
    responses={
        **success(HTTPStatus.OK, DeskInfo, "Who is signed in; the desk's name, reasons, limits and labels."),
        **errors(401, 403),
    },
)
def desk_info() -> DeskInfo:
    pack, settings = get_pack(), get_settings()
    staff_desk = pack.spec.staff
    return DeskInfo(
        staff=_staff(),
        desk=pack.spec.domain.name,
        reason_codes=list(staff_desk.reason_codes),
        max_message_chars=staff_desk.max_message_chars,
        claim_seconds=settings.claim_seconds,
        slots=desk.slot_labels(pack),
        screens=desk.screen_labels(),
        locale=pack.spec.hours.locale if pack.spec.hours else None,
        time_zone=pack.spec.hours.time_zone if pack.spec.hours else None,
    )


@app.get(
    "/staff/stats",
    responses={**success(HTTPStatus.OK, DeskStats, "The desk's figures, also emitted as metrics."), **errors(401, 403)},
)
def stats() -> DeskStats:
    """The figures from the desk's counters and the open-queue index: four requests, however many items
    were ever decided (dialogue.desk's statistics)."""
    pack = get_pack()
    profile = get_settings().screen_profile or pack.spec.screens.profile
    rate = human_checks.shown_check_rate(profile, pack.spec.staff.shown_check_rate)
    figures = desk.stats_from_counters(_store().desk_counters(), rate)
    _emit(figures)
    return figures


def _emit(figures: DeskStats) -> None:
    """The figures as EMF metrics (shares in percent), so dashboards and alarms see what the desk sees."""
    for status, count in figures.reviews.items():
        metrics.add_metric(name=f"Reviews_{status}", unit=MetricUnit.Count, value=count)
    for status, count in figures.handoffs.items():
        metrics.add_metric(name=f"Handoffs_{status}", unit=MetricUnit.Count, value=count)
    if figures.seconds_to_decision_median is not None:
        metrics.add_metric(
            name="SecondsToDecisionMedian", unit=MetricUnit.Seconds, value=figures.seconds_to_decision_median
        )
    if figures.seconds_to_decision_p90 is not None:
        metrics.add_metric(name="SecondsToDecisionP90", unit=MetricUnit.Seconds, value=figures.seconds_to_decision_p90)
    shares = {"ShownAsDrafted": figures.shown_as_drafted_share}
    for name, agreement in {"AllScreens": figures.screens_overall, **figures.screens}.items():
        shares[f"{name}_HeldRejected"] = agreement.held_rejected_share
        shares[f"{name}_PassedRejected"] = agreement.passed_rejected_share
    missed = figures.screens_missed
    metrics.add_metric(name="ShownRepliesChecked", unit=MetricUnit.Count, value=missed.checked)
    if missed.readable:  # a share from too small a sample would only make an alarm flap
        shares.update(ScreensMissed=missed.share, ScreensMissedLow=missed.low, ScreensMissedHigh=missed.high)
    for name, share in shares.items():
        if share is not None:
            metrics.add_metric(name=f"{name}Percent", unit=MetricUnit.Percent, value=100 * share)


# --- errors and the handler ------------------------------------------------------------------------


_BODY_FIELDS = {"decision", "reason", "correction", "text", "slot", "value"}


def _validation_code(problems: list[dict[str, Any]]) -> ErrorCode:
    """The code for the first problem, chosen from where it is, never from what was sent (its sentence is
    the table's, dialogue.errors)."""
    location, kind = problem_at(problems)
    if location[:1] == ("path",) or location[1:2] in (("conversation_id",), ("turn_id",)):
        return "invalid_conversation_id" if location[1:2] == ("conversation_id",) else "invalid_turn_id"
    if location[:1] == ("query",):
        return "invalid_cursor" if location[1:2] == ("cursor",) else "invalid_query"
    if kind in BODY_UNREADABLE:
        return "invalid_body"
    if location[1:2] in (("slot",), ("value",)):  # a correction of the record: its own sentence
        return "invalid_correction"
    if kind in ("string_too_short", "string_too_long"):
        return "invalid_text_length"
    if kind == "extra_forbidden":
        return "unexpected_field"
    if kind == "missing" and location[1:2] == ("text",):
        return "missing_text"
    if location[1:2] == ("decision",) or kind in ("missing", "literal_error"):
        return "invalid_decision"
    if kind == "string_type":
        return "invalid_text_type"
    return "invalid_request"


install_error_handlers(
    app,
    _validation_code,
    ("conversation_id", "turn_id", "order", "held", "drafted", "action", "review", "status", "limit", "cursor",
     *_BODY_FIELDS),
)  # fmt: skip


# SnapStart: the pack is loaded before the snapshot, and the origin-verify values are read afresh after
# each restore (dialogue.snapstart, dialogue.aws.origin).
register_snapshot_hooks(after_restore=(forget_origin_values,))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refused = unverified_origin(event)  # only CloudFront reaches the API: before the token is looked at
    if refused is not None:
        return refused
    try:
        staff = desk.staff_member(_claims(event), get_settings().staff_group)
    except DialogueError as refusal:
        return refusal_response(refusal)  # no staff identity: before any route runs
    app.append_context(staff=staff)  # type: ignore[no-untyped-call]  # Powertools leaves it untyped
    return app.resolve(body_read_as_json(event), context)


def _claims(event: dict[str, Any]) -> dict[str, Any] | None:
    """The verified token's claims, as API Gateway's JWT authorizer puts them in the event."""
    context = event.get("requestContext") or {}
    claims = ((context.get("authorizer") or {}).get("jwt") or {}).get("claims")
    return claims if isinstance(claims, dict) else None
