"""Domain errors. Their messages are one sentence a caller can act on and never hold input."""


class DialogueError(Exception):
    """Base of the errors the turn API maps to HTTP responses."""

    message = "The request could not be completed."

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.message)
        if message:
            self.message = message


class ConversationNotFound(DialogueError):
    message = "No conversation exists with that id."


class TurnNotFound(DialogueError):
    message = "No turn exists with that id in this conversation."


class ConcurrentTurnConflict(DialogueError):
    message = "Another turn changed this conversation first; send the turn again."


class StoreUnavailable(DialogueError):
    message = "The conversation store is unavailable; try again shortly."


class QueueUnavailable(DialogueError):
    message = "The reply could not be queued; ask for the turn again shortly."


class TurnLimitReached(DialogueError):
    message = "This conversation has reached its turn limit; start a new conversation."


class GeneratedTurnLimitReached(DialogueError):
    """A conversation asked for more worded replies in an hour than a resident needs: each wakes or keeps a
    GPU, so the cap bounds what one public conversation can spend. `retry_after`: seconds until its hour
    ends."""

    message = "This conversation has asked for many replies in the last hour; wait a few minutes, then send it again."

    def __init__(self, retry_after: int = 60) -> None:
        super().__init__()
        self.retry_after = max(1, retry_after)


class InvalidIdempotencyKey(DialogueError):
    message = "The Idempotency-Key header must be 1 to 128 letters, digits, dots, underscores, colons or hyphens."


class RetryInProgress(DialogueError):
    message = "A turn with this Idempotency-Key is still being processed; retry shortly."


# --- the staff desk ----------------------------------------------------------------------------------


class NotInQueue(DialogueError):
    message = "No turn with that id waits in this queue."


class ClaimedByOther(DialogueError):
    message = "Another staff member holds this item's claim; try again once it is released or expires."


class ClaimRequired(DialogueError):
    message = "Claim the item first: it is not claimed by you, or your claim has expired."


class AlreadyDecided(DialogueError):
    message = "This reply has already been decided on."


class HandoffClosed(DialogueError):
    message = "This hand-off is closed."


class InvalidDecision(DialogueError):
    message = (
        "A rejection needs a reason code from the desk's list; an approval takes neither a reason nor a correction."
    )


class StaffWriteConflict(DialogueError):
    message = "Another change to this conversation came first; try again."


class CorrectionRequired(DialogueError):
    message = (
        "The resident was shown the fallback, which promises a person's answer: reject with a correction they "
        "will read, or approve a draft to send it."
    )


class NoDraftToSend(DialogueError):
    message = "This reply has no draft left to send; reject it with a correction the resident will read."


class NotStaff(DialogueError):
    message = "This route is for desk staff; the token's user is not in the staff group."


class StaffTextTooLong(DialogueError):
    message = "The text is longer than the desk allows for a staff message."


class NotSignedIn(DialogueError):
    message = "Sign in as desk staff: the request carries no verified staff identity."


# --- the front door ----------------------------------------------------------------------------------


class DirectAccessRefused(DialogueError):
    """A request that did not come through the desk's CloudFront distribution (it lacks the origin-verify
    header's value): refused before anything is read, stored or logged from it."""

    message = "This API answers only at the desk's public address."
