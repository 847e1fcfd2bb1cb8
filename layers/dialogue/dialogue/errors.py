"""The desk's errors: one table, from which the APIs answer and the pages word what they show.

Each error is defined once, with its code (a refusal's class name, or a request-level code below), its
HTTP status, whether sending the same request again may work (`retry`: the APIs then send `Retry-After`),
the one sentence the APIs send (`message`) and, where a person on the pages is better told something
else, the sentence the pages show (`shown`). `dialogue.aws.api` answers from the table; `ERRORS` is what
the pages read, through `/config.json` (`pages_errors`). No sentence ever holds input.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, ClassVar


@dataclass(frozen=True)
class ErrorKind:
    """One row of the table."""

    status: int
    retry: bool
    message: str
    shown: str = ""
    """What the pages show a person, where it is not `message`."""

    def for_pages(self) -> dict[str, Any]:
        return {"status": self.status, "retry": self.retry, "message": self.shown or self.message}


BUSY = "The desk was busy with your previous message; try again."
NOT_ANSWERING = "The desk is not answering right now; try again in a moment."


class DialogueError(Exception):
    """Base of the refusals the APIs map to HTTP responses. Each subclass is a row of the table: its name
    is the code; `status`, `retry`, `message` and `shown` are the row's."""

    status: ClassVar[HTTPStatus] = HTTPStatus.INTERNAL_SERVER_ERROR
    retry: ClassVar[bool] = False
    message: ClassVar[str] = "The request could not be completed."
    shown: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__(self.message)

    @classmethod
    def kind(cls) -> ErrorKind:
        return ErrorKind(int(cls.status), cls.retry, cls.message, cls.shown)


# --- the resident's turns --------------------------------------------------------------------------


class ConversationNotFound(DialogueError):
    status = HTTPStatus.NOT_FOUND
    message = "No conversation exists with that id."
    shown = "The desk no longer has this conversation; start a new one to go on."


class TurnNotFound(DialogueError):
    status = HTTPStatus.NOT_FOUND
    message = "No turn exists with that id in this conversation."


class ConcurrentTurnConflict(DialogueError):
    status = HTTPStatus.CONFLICT
    retry = True
    message = "Another turn changed this conversation first; send the turn again."
    shown = BUSY


class HandoffItemGone(Exception):
    """Not a refusal, and never one the APIs send: a turn would have joined its conversation's open hand-off
    item, which is no longer in the table (dialogue.handoffs opens a new one)."""


class StoreUnavailable(DialogueError):
    status = HTTPStatus.SERVICE_UNAVAILABLE
    retry = True
    message = "The conversation store is unavailable; try again shortly."
    shown = NOT_ANSWERING


class QueueUnavailable(DialogueError):
    status = HTTPStatus.SERVICE_UNAVAILABLE
    retry = True
    message = "The reply could not be queued; ask for the turn again shortly."
    shown = NOT_ANSWERING


class TurnLimitReached(DialogueError):
    """Sending again can never work: the way on is a new conversation."""

    status = HTTPStatus.CONFLICT
    message = "This conversation has reached its turn limit; start a new conversation."


class GeneratedTurnLimitReached(DialogueError):
    """A conversation asked for more worded replies in an hour than a resident needs: each wakes or keeps a
    GPU, so the cap bounds what one public conversation can spend. `retry_after`: seconds until its hour
    ends (its `Retry-After`)."""

    status = HTTPStatus.TOO_MANY_REQUESTS
    retry = True
    message = "This conversation has asked for many replies in the last hour; wait a few minutes, then send it again."

    def __init__(self, retry_after: int = 60) -> None:
        super().__init__()
        self.retry_after = max(1, retry_after)


class InvalidIdempotencyKey(DialogueError):
    status = HTTPStatus.BAD_REQUEST
    message = "The Idempotency-Key header must be 1 to 128 letters, digits, dots, underscores, colons or hyphens."


class ContactFormUnavailable(DialogueError):
    status = HTTPStatus.NOT_FOUND
    message = "This desk has no contact form."


class ContactNotAccepted(DialogueError):
    """A contact form the desk cannot use: nothing is stored, and the sentence never holds what was sent."""

    status = HTTPStatus.UNPROCESSABLE_ENTITY
    message = "The contact detail does not have the format the form asks for, or the note is too long."
    shown = "Please check the detail: it does not look like the format the form asks for."


class NothingToLeave(DialogueError):
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    message = "Give a contact detail for the chosen channel, or a note for staff."
    shown = "Please give a contact detail or a note for staff."


class SealUnavailable(DialogueError):
    status = HTTPStatus.SERVICE_UNAVAILABLE
    retry = True
    message = "The contact detail could not be stored safely right now; try again shortly."
    shown = NOT_ANSWERING


class NoContactLeft(DialogueError):
    status = HTTPStatus.NOT_FOUND
    message = "This conversation has no contact detail or note kept."


# --- the staff desk ----------------------------------------------------------------------------------


class NotInQueue(DialogueError):
    status = HTTPStatus.NOT_FOUND
    message = "No turn with that id waits in this queue."
    shown = "This item is no longer in the queue."


class ClaimedByOther(DialogueError):
    status = HTTPStatus.CONFLICT
    message = "Another staff member holds this item's claim; try again once it is released or expires."
    shown = "Someone else has this item. It is theirs until they release it or their claim expires."


class ClaimRequired(DialogueError):
    status = HTTPStatus.CONFLICT
    message = "Claim the item first: it is not claimed by you, or your claim has expired."


class AlreadyDecided(DialogueError):
    status = HTTPStatus.CONFLICT
    message = "This reply has already been decided on."
    shown = "This reply was already decided, by a colleague or in another tab."


class HandoffClosed(DialogueError):
    status = HTTPStatus.CONFLICT
    message = "This hand-off is closed."
    shown = "This hand-off was already closed, by a colleague or in another tab."


class InvalidDecision(DialogueError):
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    message = (
        "A rejection needs a reason code from the desk's list; an approval takes neither a reason nor a correction."
    )


class StaffWriteConflict(DialogueError):
    status = HTTPStatus.CONFLICT
    retry = True
    message = "Another change to this conversation came first; try again."


class CorrectionRequired(DialogueError):
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    message = (
        "The resident was shown the fallback, which promises a person's answer: reject with a correction they "
        "will read, or approve a draft to send it."
    )


class NoDraftToSend(DialogueError):
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    message = "This reply has no draft left to send; reject it with a correction the resident will read."


class UnknownSlotValue(DialogueError):
    """A correction of the record naming a slot the desk's frame does not have, or a value that slot does not
    take: nothing is stored, and the sentence never holds what was sent."""

    status = HTTPStatus.UNPROCESSABLE_ENTITY
    message = "Name one of the desk's slots and one of the values that slot allows, as the desk lists them."
    shown = "Choose a slot and one of its values from the lists."


class NotStaff(DialogueError):
    status = HTTPStatus.FORBIDDEN
    message = "This route is for desk staff; the token's user is not in the staff group."


class StaffTextTooLong(DialogueError):
    status = HTTPStatus.UNPROCESSABLE_ENTITY
    message = "The text is longer than the desk allows for a staff message."


class NotSignedIn(DialogueError):
    status = HTTPStatus.UNAUTHORIZED
    message = "Sign in as desk staff: the request carries no verified staff identity."


# --- the front door ----------------------------------------------------------------------------------


class DirectAccessRefused(DialogueError):
    """A request that did not come through the desk's CloudFront distribution (it lacks the origin-verify
    header's value): refused before anything is read, stored or logged from it."""

    status = HTTPStatus.FORBIDDEN
    message = "This API answers only at the desk's public address."


# --- requests the resolvers refuse before the core sees them -------------------------------------------

MAX_TURN_TEXT_CHARS = 1000
"""The most characters a resident's turn may hold (the turn API's TurnRequest)."""
MAX_STAFF_TEXT_CHARS = 4000
"""The most characters any staff text may hold (the staff API's bodies; the pack may allow fewer)."""

REQUEST_ERRORS: dict[str, ErrorKind] = {
    "invalid_conversation_id": ErrorKind(400, False, "The conversation id must be a UUID."),
    "invalid_turn_id": ErrorKind(400, False, "The turn id must be a whole number from 1."),
    "invalid_body": ErrorKind(
        400, False, 'The body must be the JSON object the route documents, like {"text": "..."}.'
    ),
    "missing_text": ErrorKind(400, False, 'The body must be a JSON object with a "text" field.'),
    "invalid_text_length": ErrorKind(
        422,
        False,
        f"The text must hold between 1 and {MAX_TURN_TEXT_CHARS} characters, or {MAX_STAFF_TEXT_CHARS} in a "
        "staff text within the desk's limit.",
        f"A message must hold between 1 and {MAX_TURN_TEXT_CHARS:,} characters.",
    ),
    "unexpected_field": ErrorKind(400, False, "The body holds a field this route does not take."),
    "invalid_contact": ErrorKind(
        422,
        False,
        'A contact form is {"detail": text, "note": text}, each optional and within the form\'s length.',
        "Please shorten the detail or the note: it is longer than the form takes.",
    ),
    "invalid_text_type": ErrorKind(400, False, "Every text field must be a string."),
    "invalid_cursor": ErrorKind(
        400, False, "The cursor must be one this API gave: a next_cursor, or for after a whole number from 0."
    ),
    "invalid_decision": ErrorKind(
        400, False, 'A decision is {"decision": "approve" | "reject", "reason": code, "correction": text}.'
    ),
    "invalid_correction": ErrorKind(
        400, False, 'A correction of the record is {"slot": name, "value": value}, two strings from the desk\'s lists.'
    ),
    "invalid_query": ErrorKind(400, False, "A query parameter is not one of the values this route documents."),
    "invalid_request": ErrorKind(400, False, "The request is not valid for this route."),
    "route_not_found": ErrorKind(404, False, "No route matches that method and path."),
}


def _refusals(base: type[DialogueError] = DialogueError) -> dict[str, type[DialogueError]]:
    found = {base.__name__: base}
    for sub in base.__subclasses__():
        found.update(_refusals(sub))
    return found


REFUSALS: dict[str, type[DialogueError]] = _refusals()
"""Every refusal class, by its code (its name)."""

ERRORS: dict[str, ErrorKind] = {**{code: cls.kind() for code, cls in REFUSALS.items()}, **REQUEST_ERRORS}
"""The table: every code the APIs send, with its status, whether to retry, and its sentences."""

# --- what the pages show for an answer with none of the APIs' codes ------------------------------------

UNCODED: dict[str, ErrorKind] = {
    "unreachable": ErrorKind(0, True, "The desk cannot be reached; check your connection and try again."),
    "throttled": ErrorKind(429, True, "Too many messages at once; wait a moment and try again."),
    "unavailable": ErrorKind(503, True, NOT_ANSWERING),
    "failed": ErrorKind(400, False, "The request did not go through."),
}
"""No answer at all (status 0), a gateway's throttle (429), a gateway's or the function's 5xx, and any
other answer without a code of the table: the pages show these by status. They are not codes the APIs
send."""


def pages_errors() -> dict[str, dict[str, Any]]:
    """The table as the pages read it in /config.json: code -> {status, retry, message}, where `message`
    is the sentence a person reads."""
    return {code: kind.for_pages() for code, kind in {**ERRORS, **UNCODED}.items()}
