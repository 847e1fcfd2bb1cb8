"""Realization jobs: the messages a model words a reply from, built from state, action and facts only.

`build_realizer_messages` cannot take user text: its inputs are the coarse state, the action and the
handbook rows the pack approves for that action. RealizeJob, RealizedReply and ReplyDeadline are the
queue contracts between the dispatch function, the realizer container and the screen function.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from dialogue.actions import Action
from dialogue.pack import DomainPack, SlotSpec
from dialogue.state import DialogueState

MAX_NEW_TOKENS = 60
DESIGN_TOKEN_BUDGET = 512


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    role: Literal["system", "user"]
    content: Annotated[str, Field(min_length=1, max_length=4000)]


def _model_action(action: Action) -> Action:
    if not action.uses_model:
        raise ValueError("only request, confirm and inform actions are realized by a model")
    return action


ModelAction = Annotated[Action, AfterValidator(_model_action)]
"""An action a model words: request, confirm or inform."""


SQS_QUEUE_URL_PATTERN = r"^https://sqs\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/[0-9]{12}/[A-Za-z0-9_-]{1,80}$"
"""An SQS queue's URL as AWS gives it (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME)."""


class RealizeJob(BaseModel):
    """One reply to word, as sent on the realize queue."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    job_id: Annotated[str, Field(pattern=r"^[0-9a-f-]{36}/[0-9]{1,6}$")]
    conversation_id: UUID
    turn_id: Annotated[int, Field(ge=1)]
    action: ModelAction
    slots: dict[str, str]
    topic: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")] | None = None
    fact_ids: tuple[str, ...]
    messages: tuple[ChatMessage, ...] = Field(min_length=2, max_length=2)
    max_new_tokens: Annotated[int, Field(ge=1, le=512)] = MAX_NEW_TOKENS
    created_at: datetime
    # Where the reply goes when the realizer is another stack's (a shared realizer, docs/DEPLOY.md): the
    # desk's own screen queue. None: the realizer's own SCREEN_QUEUE_URL. The realizer answers only to a
    # queue on its allowed list (REPLY_QUEUE_ARNS) and drops any other job unrun.
    reply_queue_url: Annotated[str, Field(pattern=SQS_QUEUE_URL_PATTERN)] | None = None

    @model_serializer(mode="wrap")
    def _reply_queue_only_when_named(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A job on the desk's own realizer is sent as before, without the field: a realizer image older
        than the field (extra="forbid") still reads it."""
        data: dict[str, Any] = handler(self)
        if self.reply_queue_url is None:
            data.pop("reply_queue_url", None)
        return data


class Realization(BaseModel):
    """What an engine made of one job: the wording (model output, never user text) and how it ended."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    text: Annotated[str, Field(max_length=8000)]
    ended_by_eos: bool
    hit_token_cap: bool
    failed: bool = False
    over_budget: bool = False
    prompt_tokens: Annotated[int, Field(ge=0)] | None = None
    output_tokens: Annotated[int, Field(ge=0)] | None = None


class RealizedReply(Realization):
    """A realization with its job and the engine that made it, as sent on the screen queue."""

    job: RealizeJob
    engine: Annotated[str, Field(min_length=1, max_length=64)]
    model_id: str | None = None
    revision: str | None = None


class ReplyDeadline(BaseModel):
    """A pending turn's reply deadline, as sent on the screen queue with an SQS delay.

    When it arrives and the turn is still pending, the screen function stores the fixed fallback; a
    turn already final (the usual case) is left as it is. It carries what the fallback is built from.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    kind: Literal["deadline"] = "deadline"
    conversation_id: UUID
    turn_id: Annotated[int, Field(ge=1)]
    action: ModelAction
    slots: dict[str, str]
    due_at: datetime
    # The dispatch function found the realizer cold (no task running, or switched off): the deadline is
    # sent seconds after the turn, and its fallback says a person will check it (dialogue.screens).
    realizer_cold: bool = False


ScreenMessage = RealizedReply | ReplyDeadline
"""What the screen queue carries: a worded reply to screen, or a deadline to enforce."""


def job_id_for(conversation_id: UUID, turn_id: int) -> str:
    return f"{conversation_id}/{turn_id}"


def passage_ids(action: Action, state: DialogueState, pack: DomainPack, topic: str | None = None) -> tuple[str, ...]:
    """The handbook rows the pack approves for this action, program and (for inform) topic.

    `topic` must name one of the pack's topics: the name selects rows and never enters a prompt."""
    if topic is not None and pack.topic(topic) is None:
        raise ValueError("topic must be one of the pack's topics")
    return pack.passage_ids_for(action, state.get(pack.program_slot), topic)


def fact_block(action: Action, state: DialogueState, pack: DomainPack, topic: str | None = None) -> str:
    """The approved handbook rows, one `ID: text` line each, or `none`."""
    ids = passage_ids(action, state, pack, topic)
    lines = [f"{passage_id}: {pack.passages[passage_id].text}" for passage_id in ids]
    return "\n".join(lines) if lines else "none"


def _slot_line(spec: SlotSpec, value: str) -> str:
    """`name=value`, with the value's label where the pack gives one ("colour=navy (dark blue)")."""
    label = spec.value_labels.get(value)
    return f"{spec.name}={value} ({label})" if label else f"{spec.name}={value}"


def build_realizer_messages(
    state: DialogueState, action: Action, pack: DomainPack, topic: str | None = None
) -> tuple[ChatMessage, ChatMessage]:
    """The system and user messages for wording `action`: state, action meaning and facts, nothing else."""
    slot_lines = "\n".join(_slot_line(pack.frame.slot(name), value) for name, value in state.slots.items())
    user = (
        f"ACTION: {action}"
        f"\nACTION MEANING: {pack.action(action).instruction}"
        f"\nSLOTS:\n{slot_lines}"
        f"\nHANDBOOK FACTS:\n{fact_block(action, state, pack, topic)}"
    )
    return (
        ChatMessage(role="system", content=pack.spec.prompts.realizer_system),
        ChatMessage(role="user", content=user),
    )


def build_realize_job(
    *,
    conversation_id: UUID,
    turn_id: int,
    state: DialogueState,
    action: Action,
    pack: DomainPack,
    now: datetime,
    topic: str | None = None,
    reply_queue_url: str | None = None,
) -> RealizeJob:
    """The job for one generated turn. Its inputs are ids, coarse state and the action: no user text."""
    return RealizeJob(
        job_id=job_id_for(conversation_id, turn_id),
        conversation_id=conversation_id,
        turn_id=turn_id,
        action=action,
        slots=dict(state.slots),
        topic=topic,
        fact_ids=passage_ids(action, state, pack, topic),
        messages=build_realizer_messages(state, action, pack, topic),
        created_at=now,
        reply_queue_url=reply_queue_url,
    )
