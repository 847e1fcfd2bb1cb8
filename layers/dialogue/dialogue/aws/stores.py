"""The two DynamoDB stores the functions use, each made of the concerns it needs.

- `DynamoConversationStore` (the turn API, the screen function, the sweeper): the turns
  (dialogue.aws.turns) and the replies and staff messages (dialogue.aws.replies); it is the core's
  dialogue.ports.ConversationStore.
- `DynamoDeskStore` (the staff API): those, with the staff queues and claims (dialogue.aws.queues), the
  desk's figures (dialogue.aws.figures) and the audit (dialogue.aws.audit).
"""

from __future__ import annotations

from dialogue.aws.queues import DeskQueues
from dialogue.aws.replies import ReplyItems


class DynamoConversationStore(ReplyItems):
    """dialogue.ports.ConversationStore on one DynamoDB table with `pk`/`sk` keys and an `expires_at` TTL."""


class DynamoDeskStore(DeskQueues):
    """The conversation store, with the desk's queues, claims, audit and figures."""
