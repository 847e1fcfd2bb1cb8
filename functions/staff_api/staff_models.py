"""The staff API's response bodies (the queue items themselves are dialogue.desk's) and how each route
documents its errors."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel

from dialogue.actions import Action
from dialogue.aws.api import ErrorBody, ErrorCode, error_responses, success
from dialogue.desk import (
    Claim,
    DecisionRequest,
    DeskStats,
    HandoffItem,
    ReviewItem,
    ScreenAgreement,
    StaffText,
)

__all__ = [
    "Claim",
    "DecisionRequest",
    "DeskStats",
    "ErrorBody",
    "ErrorCode",
    "HandoffItem",
    "ReviewItem",
    "ScreenAgreement",
    "StaffText",
    "errors",
    "success",
]


class ReviewPage(BaseModel):
    items: list[ReviewItem]
    next_cursor: str | None = None  # pass as `cursor` for the next page; absent on the last


class HandoffPage(BaseModel):
    items: list[HandoffItem]
    next_cursor: str | None = None


class ClaimTaken(BaseModel):
    conversation_id: UUID
    turn_id: int
    claim: Claim


class ClaimReleased(BaseModel):
    conversation_id: UUID
    turn_id: int
    released: bool = True


class MessagePosted(BaseModel):
    """A staff message as posted: where it sits in the resident's messages. The text is not repeated."""

    conversation_id: UUID
    after_turn: int
    number: int
    about_turn: int
    at: datetime


class Decided(BaseModel):
    """The decided item, and what the decision sent the resident: `message` is any staff message it
    posted (a correction, or an approved draft where the resident had been shown the fallback);
    `correction` is that message when it was a correction."""

    item: ReviewItem
    correction: MessagePosted | None = None
    message: MessagePosted | None = None


class RecordCorrected(BaseModel):
    """A correction of the conversation's record as written: the item it was made from (`turn_id`), the turn
    that records it (`correction_turn_id`, the conversation's newest), the slots the record now holds, and the
    desk's fixed reply the resident is sent with that turn (`action`: confirm, or the request for a slot still
    unknown; `reply`: its text from the pack, filled from the slots)."""

    conversation_id: UUID
    turn_id: int
    correction_turn_id: int
    slots: dict[str, str]
    action: Action
    reply: str


class AuditEntry(BaseModel):
    """One link of an item's audit trail: when, who (a staff subject), what. Never text."""

    at: datetime | None  # None only where a changed link holds no time (the trail then does not verify)
    staff: str
    mine: bool  # whether the signed-in staff member took this step
    action: str  # claim, release, decision, reply, close, read_contact or correct_record
    outcome: str | None = None  # a decision's review: approved, rejected or corrected; a correction's new value
    reason: str | None = None  # a rejection's reason code; the slot a correction set
    hash: str  # the link's SHA-256, which the next link's prev_hash repeats


class AuditChecked(BaseModel):
    """What a trail was checked against. `write_once_copy`: the table's links were compared, link by link,
    with their copies in the Object-Locked audit bucket (the record: a link rewritten, removed or added in
    the table differs from it), and each chain's hashes verified. `hash_chain_only`: no audit bucket is
    configured, so only the chain's hashes were verified, which a rewrite that recomputes them passes."""

    against: Literal["write_once_copy", "hash_chain_only"]
    links: int  # the table's links of this item
    copies: int | None  # its write-once copies found; None: no bucket to look in
    problems: int  # what the checks found wrong (a changed, missing or extra link, a copy written twice)


class AuditTrail(BaseModel):
    """An item's audit trail, oldest first, and what it was checked against. `verified` is true only when
    the trail was compared with its write-once copies and nothing was wrong; never on the hash chain
    alone. An item no one has acted on has an empty trail (and no copies)."""

    conversation_id: UUID
    turn_id: int
    items: list[AuditEntry]
    checked: AuditChecked
    verified: bool


errors = error_responses(
    {
        400: "Malformed request: an id that is not well formed, a query parameter out of range, or a body "
        "that is not the JSON object the route takes.",
        401: "No verified staff identity: sign in (the gateway refuses a missing, expired or foreign token).",
        403: "The signed-in user is not in the desk's staff group.",
        404: "No turn with that id waits in this queue, or no route for that method and path.",
        409: "The item is claimed by someone else, not claimed by you (or your claim expired), already decided "
        "or closed; or another write changed the conversation first.",
        422: "The body does not validate: a rejection without a reason code from the desk's list, an "
        "approval with one, text empty or longer than the desk allows, or a correction of the record naming "
        "a slot or value the desk's frame does not have.",
        503: "The store is unavailable for a moment; retry after `Retry-After` seconds.",
    }
)
