"""The turn API Lambda: HTTP routes → dialogue core → DynamoDB.

Thin by design: parse, call one logic function, map the result. A turn is one DynamoDB transaction
and nothing else: generated turns go on from the table's stream. Reads never write. Errors never
echo the request.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from http import HTTPStatus
from typing import Annotated, Any
from uuid import UUID

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from api_models import (
    ContactRequest,
    ConversationCreated,
    ConversationDetail,
    MessagePage,
    TurnAccepted,
    TurnAnswer,
    TurnDetail,
    TurnRequest,
    errors,
    success,
)
from dialogue import clock, contact, conversation
from dialogue.actions import TurnStatus
from dialogue.aws.api import (
    BODY_UNREADABLE,
    ErrorCode,
    body_read_as_json,
    install_error_handlers,
    problem_at,
    unverified_origin,
)
from dialogue.aws.factory import get_sealer, get_store
from dialogue.aws.observability import logger, metrics, tracer
from dialogue.aws.origin import forget_origin_values
from dialogue.errors import InvalidIdempotencyKey, SealUnavailable
from dialogue.idempotency import IDEMPOTENCY_HEADER, valid_key
from dialogue.pack import get_pack
from dialogue.settings import get_settings
from dialogue.snapstart import register_snapshot_hooks

app = APIGatewayHttpResolver(enable_validation=True)

ConversationId = Annotated[UUID, Path(description="The id returned when the conversation was created.")]
TurnId = Annotated[int, Path(ge=1, le=999_999, description="The turn's number, from 1.")]
After = Annotated[
    int, Query(ge=0, le=1_000_000, description="How many messages the page already shows (from the last next_after).")
]

# A turn read this long after its deadline while still pending means its deadline message was lost or
# is stuck: the screen function should have stored the fallback. Counted, so an alarm can see it.
DEADLINE_GRACE = timedelta(seconds=30)


def _now() -> datetime:
    return clock.now()


@app.post(
    "/conversations",
    responses={**success(HTTPStatus.CREATED, ConversationCreated, "A new conversation."), **errors()},
)
def create_conversation() -> Response[ConversationCreated]:
    conversation_id = conversation.start_conversation(get_store(), get_pack(), _now())
    logger.info("conversation created", conversation_id=str(conversation_id))
    metrics.add_metric(name="ConversationsCreated", unit=MetricUnit.Count, value=1)
    return Response(
        status_code=HTTPStatus.CREATED,
        content_type=content_types.APPLICATION_JSON,
        body=ConversationCreated(conversation_id=conversation_id),
    )


@app.post(
    "/conversations/<conversation_id>/turns",
    responses={
        **success(
            HTTPStatus.OK, TurnAccepted, "A fixed reply (refuse, hand-off, abstention): final at once, no model call."
        ),
        **success(
            HTTPStatus.ACCEPTED, TurnAccepted, "Accepted: a model words the reply; read the turn until it is final."
        ),
        **errors(400, 404, 409, 422, 429),
    },
)
def post_turn(conversation_id: ConversationId, request: Annotated[TurnRequest, Body()]) -> Response[dict[str, Any]]:
    key = app.current_event.headers.get(IDEMPOTENCY_HEADER)
    if key is not None and not valid_key(key):
        raise InvalidIdempotencyKey()
    answer = accept_turn(conversation_id, request.text, key or None)
    return Response(
        status_code=answer.status_code,
        content_type=content_types.APPLICATION_JSON,
        body=answer.body.model_dump(mode="json", exclude_none=True),
    )


def accept_turn(conversation_id: UUID, text: str, key: str | None) -> TurnAnswer:
    """Apply the turn. A retry of a key that made a turn gets that turn, with the status code its first
    answer had, from the key's REQUEST item (dialogue.idempotency): nothing is written or counted again."""
    view = conversation.take_turn(
        conversation_id,
        text,
        store=get_store(),
        pack=get_pack(),
        now=_now(),
        max_turns=get_settings().max_turns_per_conversation,
        request_key=key,
        max_generated_per_hour=get_settings().max_generated_turns_per_hour,
    )
    turn = view.turn
    if view.retried:
        logger.info("retry answered", conversation_id=str(conversation_id), turn_id=turn.turn_id)
        metrics.add_metric(name="RetriesAnswered", unit=MetricUnit.Count, value=1)
        return _answer(conversation_id, view)
    logger.info(
        "turn applied",
        conversation_id=str(conversation_id),
        turn_id=turn.turn_id,
        action=str(turn.action),
        text_chars=len(text),
    )
    # One metric for every request action, whatever a desk names its slots: the dashboard is every desk's.
    counted = "Action_request" if turn.action.is_request else f"Action_{turn.action}"
    metrics.add_metric(name=counted, unit=MetricUnit.Count, value=1)
    if view.unreadable:  # a pack change since the conversation's last turn: those slots read as unknown
        metrics.add_metric(name="StoredValuesUnreadable", unit=MetricUnit.Count, value=len(view.unreadable))
    return _answer(conversation_id, view)


def _answer(conversation_id: UUID, view: conversation.TurnView) -> TurnAnswer:
    turn = view.turn
    accepted = TurnAccepted(
        conversation_id=conversation_id,
        turn_id=turn.turn_id,
        action=turn.action,
        reply_source=turn.reply_source,
        status=turn.status,
        reply=view.reply,
    )
    return TurnAnswer(status_code=202 if turn.action.uses_model else 200, body=accepted)


@app.post(
    "/conversations/<conversation_id>/contact",
    responses={
        **success(
            HTTPStatus.OK,
            TurnAccepted,
            "Kept for staff, sealed: the conversation is handed to a person, with the desk's fixed reply.",
        ),
        **errors(400, 404, 409, 422, 503),
    },
)
def post_contact(conversation_id: ConversationId, request: Annotated[ContactRequest, Body()]) -> TurnAccepted:
    """The chat's contact form: a phone number or email address for the chosen channel, and a note for
    staff. Checked against the desk's format, sealed with the stack's key and kept only for staff; the
    conversation is handed to a person. Nothing of it is logged or echoed."""
    sealer = get_sealer()
    if sealer is None:
        raise SealUnavailable()
    turn, reply = contact.leave_contact(
        conversation_id,
        request.detail,
        request.note,
        store=get_store(),
        sealer=sealer,
        pack=get_pack(),
        now=_now(),
        max_turns=get_settings().max_turns_per_conversation,
    )
    logger.info("contact left", conversation_id=str(conversation_id), turn_id=turn.turn_id)
    metrics.add_metric(name="ContactsLeft", unit=MetricUnit.Count, value=1)
    return TurnAccepted(
        conversation_id=conversation_id,
        turn_id=turn.turn_id,
        action=turn.action,
        reply_source=turn.reply_source,
        status=turn.status,
        reply=reply,
    )


@app.get(
    "/conversations/<conversation_id>/turns/<turn_id>",
    responses={**success(HTTPStatus.OK, TurnDetail, "The turn, with its reply once final."), **errors(400, 404)},
)
def get_turn(conversation_id: ConversationId, turn_id: TurnId) -> TurnDetail:
    view = conversation.view_turn(get_store(), get_pack(), conversation_id, turn_id)
    metrics.add_metric(name="TurnsRead", unit=MetricUnit.Count, value=1)
    turn = view.turn
    if turn.status is TurnStatus.PENDING and _now() - turn.created_at > get_settings().reply_deadline + DEADLINE_GRACE:
        logger.warning("turn pending past its deadline", conversation_id=str(conversation_id), turn_id=turn_id)
        metrics.add_metric(name="TurnsPendingPastDeadline", unit=MetricUnit.Count, value=1)
    return TurnDetail(turn_id=turn.turn_id, status=turn.status, reply=view.reply)


@app.get(
    "/conversations/<conversation_id>/messages",
    responses={
        **success(HTTPStatus.OK, MessagePage, "The replies and staff messages after the first `after`, in order."),
        **errors(400, 404),
    },
)
def get_messages(conversation_id: ConversationId, after: After = 0) -> MessagePage:
    page = conversation.messages(get_store(), get_pack(), conversation_id, after)
    metrics.add_metric(name="MessagesRead", unit=MetricUnit.Count, value=1)
    return page


@app.get(
    "/conversations/<conversation_id>",
    responses={**success(HTTPStatus.OK, ConversationDetail, "The slots and the turn count."), **errors(400, 404)},
)
def get_conversation(conversation_id: ConversationId) -> ConversationDetail:
    record = conversation.load_conversation(get_store(), conversation_id)
    metrics.add_metric(name="ConversationsRead", unit=MetricUnit.Count, value=1)
    return ConversationDetail(
        conversation_id=record.conversation_id, slots=dict(record.state.slots), turn_count=record.turn_count
    )


def _validation_code(problems: list[dict[str, Any]]) -> ErrorCode:
    """The code for the first problem, chosen from where it is, never from what was sent (its sentence is
    the table's, dialogue.errors)."""
    location, kind = problem_at(problems)
    if location[:1] == ("query",):
        return "invalid_cursor"
    if location[:1] == ("path",):
        return "invalid_conversation_id" if location[1:2] == ("conversation_id",) else "invalid_turn_id"
    if kind in BODY_UNREADABLE:
        return "invalid_body"
    if kind != "extra_forbidden" and location[:1] == ("body",) and {"detail", "note"} & set(location[1:]):
        return "invalid_contact"
    if kind == "missing":
        return "missing_text"
    if kind in ("string_too_short", "string_too_long"):
        return "invalid_text_length"
    if kind == "extra_forbidden":
        return "unexpected_field"
    if kind == "string_type":
        return "invalid_text_type"
    return "invalid_request"


install_error_handlers(app, _validation_code, ("conversation_id", "turn_id", "text", "after", "detail", "note"))


# SnapStart: the pack is loaded before the snapshot, and the origin-verify values are read afresh after
# each restore (dialogue.snapstart, dialogue.aws.origin).
register_snapshot_hooks(after_restore=(forget_origin_values,))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refused = unverified_origin(event)  # only CloudFront reaches the API: before anything else
    if refused is not None:
        return refused
    return app.resolve(body_read_as_json(event), context)
