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
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyInconsistentStateError,
    IdempotencyPersistenceLayerError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from api_models import (
    ConversationCreated,
    ConversationDetail,
    IdempotentTurn,
    MessagePage,
    TurnAccepted,
    TurnAnswer,
    TurnDetail,
    TurnRequest,
    errors,
    success,
)
from dialogue import clock, conversation, idempotency
from dialogue.actions import TurnStatus
from dialogue.api import (
    BODY_UNREADABLE,
    ErrorCode,
    body_read_as_json,
    install_error_handlers,
    problem_at,
    unverified_origin,
)
from dialogue.errors import DialogueError, InvalidIdempotencyKey, RetryInProgress, StoreUnavailable
from dialogue.factory import get_store
from dialogue.idempotency import IDEMPOTENCY_HEADER, register_lambda_context, valid_key
from dialogue.observability import logger, metrics, tracer
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
    turn = IdempotentTurn(conversation_id=conversation_id, idempotency_key=key or "")
    try:
        if key and idempotency.enabled():
            answer = idempotency.idempotent(accept_turn, TurnAnswer)(request=turn, text=request.text)
        else:
            answer = accept_turn(request=turn, text=request.text)
    except IdempotencyAlreadyInProgressError:
        raise RetryInProgress() from None
    except (IdempotencyPersistenceLayerError, IdempotencyInconsistentStateError) as error:
        # The idempotency table failed around the turn. If the turn itself failed first, its error is
        # the answer; otherwise the store was unavailable (a committed turn is found again by its key).
        raise _turn_error_behind(error) or StoreUnavailable() from None
    return Response(
        status_code=answer.status_code,
        content_type=content_types.APPLICATION_JSON,
        body=answer.body.model_dump(mode="json", exclude_none=True),
    )


def _turn_error_behind(error: BaseException) -> DialogueError | None:
    """The DialogueError an idempotency failure happened while handling, if any."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, DialogueError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def accept_turn(*, request: IdempotentTurn, text: str) -> TurnAnswer:
    """Apply the turn; the answer is what an idempotent retry gets back."""
    conversation_id = request.conversation_id
    view = conversation.take_turn(
        conversation_id,
        text,
        store=get_store(),
        pack=get_pack(),
        now=_now(),
        max_turns=get_settings().max_turns_per_conversation,
        request_key=request.idempotency_key or None,
        max_generated_per_hour=get_settings().max_generated_turns_per_hour,
    )
    turn = view.turn
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
    accepted = TurnAccepted(
        conversation_id=conversation_id,
        turn_id=turn.turn_id,
        action=turn.action,
        reply_source=turn.reply_source,
        status=turn.status,
        reply=view.reply,
    )
    return TurnAnswer(status_code=202 if turn.action.uses_model else 200, body=accepted)


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


def _validation_message(problems: list[dict[str, Any]]) -> tuple[ErrorCode, str]:
    """One sentence for the first problem, chosen from where it is, never from what was sent."""
    location, kind = problem_at(problems)
    if location[:1] == ("query",):
        return "invalid_cursor", "The after parameter must be a whole number from 0."
    if location[:1] == ("path",):
        if location[1:2] == ("conversation_id",):
            return "invalid_conversation_id", "The conversation id must be a UUID."
        return "invalid_turn_id", "The turn id must be a whole number from 1."
    if kind in BODY_UNREADABLE:
        return "invalid_body", 'The body must be a JSON object like {"text": "..."}.'
    if kind == "missing":
        return "missing_text", 'The body must be a JSON object with a "text" field.'
    if kind in ("string_too_short", "string_too_long"):
        return "invalid_text_length", "The text must hold between 1 and 1000 characters."
    if kind == "extra_forbidden":
        return "unexpected_field", 'The body may hold only the "text" field.'
    if kind == "string_type":
        return "invalid_text_type", "The text must be a string."
    return "invalid_request", "The request is not valid for this route."


install_error_handlers(app, _validation_message, ("conversation_id", "turn_id", "text", "after"))


register_snapshot_hooks()  # SnapStart: the pack is loaded before the snapshot (dialogue.snapstart)


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@metrics.log_metrics
@tracer.capture_lambda_handler(capture_response=False, capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    refused = unverified_origin(event)  # only CloudFront reaches the API: before anything else
    if refused is not None:
        return refused
    register_lambda_context(context)
    return app.resolve(body_read_as_json(event), context)
