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


class InvalidIdempotencyKey(DialogueError):
    message = "The Idempotency-Key header must be 1 to 128 letters, digits, dots, underscores, colons or hyphens."


class RetryInProgress(DialogueError):
    message = "A turn with this Idempotency-Key is still being processed; retry shortly."
