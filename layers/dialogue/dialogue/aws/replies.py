"""The conversation's REPLY items and staff messages: a screened reply stored, and the resident's message
list read (whole, or backwards from its end).

- A generated turn's REPLY item (`TURN#<turn:06d>#REPLY`) holds the reply shown and the draft the screens
  judged; it is written with the turn's final status, in one transaction (`record_screened_reply`), which
  puts the turn in the review queue when its human check is pending (held, or drawn: dialogue.human_checks).
- Staff messages: `MSG#<turn count:06d>#<n:06d>` under the conversation, n from the conversation's
  STAFFMSG counter. A message and its counter are written in one transaction, conditional on the
  counter and on the conversation's turn count (`staff_message_items`), so messages are committed in the
  order they sort in: the resident's message list only ever grows at its end.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from dialogue.actions import HumanReview, Queue, ReplySource, TurnStatus
from dialogue.aws.table import (
    CONDITION_FAILED,
    MESSAGE_PREFIX,
    OPEN_QUEUE,
    PENDING_TURN,
    STAFF_COUNTER_SK,
    STATE_SK,
    TURN_PREFIX,
    DynamoDBClient,
    DynamoTable,
    message_sort_key,
    partition_key,
    reply_sort_key,
    store_errors,
    stored_time,
    ttl_epoch,
    turn_from_item,
    turn_sort_key,
)
from dialogue.errors import StoreUnavailable
from dialogue.ports import StaffMessage
from dialogue.records import Draft, ScreenOutcome, TurnRecord


class ReplyItems(DynamoTable):
    """The REPLY items and staff messages of a conversation, and the reads of its message list. A reply that
    awaits a person's check is kept `retention` (a turn's), any other `reply_retention`."""

    def __init__(
        self, client: DynamoDBClient, table_name: str, *, retention: timedelta, reply_retention: timedelta
    ) -> None:
        super().__init__(client, table_name)
        self._retention = retention
        self._reply_retention = reply_retention

    def get_reply(self, conversation_id: UUID, turn_id: int) -> str | None:
        response = self._get(conversation_id, reply_sort_key(turn_id))
        if "Item" not in response:
            return None
        return str(self._plain(response["Item"])["reply"])

    def record_screened_reply(self, conversation_id: UUID, turn_id: int, outcome: ScreenOutcome, now: datetime) -> bool:
        """Finalize a pending turn with its screen flags and the reply to show.

        Returns False, writing nothing, when the turn is not pending: already final (a duplicate, or a
        reply that came after the deadline's fallback), or gone. Raises StoreUnavailable when nothing
        was written for any other reason (a conflicting transaction, throttling, an error, a lost
        answer), so the caller fails the message and the queue delivers it again.
        """
        key = self._item({"pk": partition_key(conversation_id), "sk": turn_sort_key(turn_id)})
        # The draft the staff review, beside the reply shown: its text only where it differs from the
        # reply (a draft shown as drafted is the reply), so a passed reply is not kept twice.
        draft = outcome.draft.model_dump(mode="json") if outcome.draft is not None else {}
        if draft and draft["text"] == outcome.final_reply:
            del draft["text"]
        # A reply that awaits a person's check (a draft, pending) is kept as long as its turn, so the draft is
        # there when staff decide; the decision then keeps it REPLY_RETENTION_HOURS more
        # (DynamoDeskStore.decide). A shown reply not drawn for a check, and a deadline's fallback, which no
        # one checks, are kept that long now.
        awaits_check = outcome.draft is not None and outcome.human_review is HumanReview.PENDING
        kept = self._retention if awaits_check else self._reply_retention
        reply_item = self._item(
            {
                "pk": partition_key(conversation_id),
                "sk": reply_sort_key(turn_id),
                "reply": outcome.final_reply,
                **{f"draft_{name}" if name == "text" else name: value for name, value in draft.items()},
                "created_at": stored_time(now),
                "expires_at": ttl_epoch(now + kept),
            }
        )
        assignments = "#status = :final, reply_screen = :screen, human_review = :review, "
        assignments += "fallback_used = :fallback, finalized_at = :now"
        values: dict[str, Any] = {
            ":final": "final",
            ":pending": "pending",
            ":screen": str(outcome.reply_screen),
            ":review": str(outcome.human_review),
            ":fallback": outcome.fallback_used,
            ":now": stored_time(now),
        }
        if outcome.screens_fired:  # a string set cannot be empty: no screen, no attribute
            assignments += ", screens_fired = :fired"
            values[":fired"] = {str(screen) for screen in outcome.screens_fired}
        names = {"#status": "status"}
        if awaits_check:  # a screened draft awaits a person's check: the review queue
            assignments += f", #queue = :queue, {OPEN_QUEUE} = :queue, queued_at = :now"
            values[":queue"] = str(Queue.REVIEW)
            names["#queue"] = "queue"
        # (A shown reply not drawn is "not drawn", and a deadline's fallback, which has no draft, "not
        # applicable": neither enters a queue.)
        codes = self._write_transaction(
            [
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": key,
                        # A final turn leaves the pending-turn index.
                        "UpdateExpression": f"SET {assignments} REMOVE {PENDING_TURN}",
                        "ConditionExpression": "#status = :pending",
                        "ExpressionAttributeNames": names,
                        "ExpressionAttributeValues": self._item(values),
                    }
                },
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": reply_item,
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
        )
        if codes is None:
            return True
        if CONDITION_FAILED in codes:  # not pending (any more), or gone
            return False
        raise StoreUnavailable()

    # --- the end of the message list, read backwards (dialogue.conversation.messages) ----------------

    def staff_message_count(self, conversation_id: UUID) -> int:
        """How many staff messages the conversation has had: its STAFFMSG counter (one consistent read)."""
        item = self._get(conversation_id, STAFF_COUNTER_SK).get("Item")
        return int(self._plain(item)["count"]) if item else 0

    def turns_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[tuple[TurnRecord, str | None]]:
        """The turns from `last_turn` down to 1, each with its stored reply (None for a fixed-text or pending
        turn, or a reply that has expired): a consistent Query on the TURN# items backwards (a turn's REPLY
        item sorts just after it, so it comes first), 2 items then TAIL_PAGE items a page, each page read only
        when the caller asks for a turn beyond the last one read."""
        reply: tuple[int, str] | None = None
        for item in self._items_backwards(conversation_id, TURN_PREFIX, f"{turn_sort_key(last_turn)}#~", 2):
            sort_key = item["sk"]["S"]
            if sort_key.endswith("#REPLY"):
                reply = (int(sort_key.split("#")[1]), str(self._plain(item)["reply"]))
                continue
            turn = turn_from_item(item)
            text = reply[1] if reply is not None and reply[0] == turn.turn_id else None
            reply = None
            if text is None and turn.status is TurnStatus.FINAL and turn.reply_source is ReplySource.MODEL:
                # The REPLY item is written with the final status, in one transaction, and it was read first:
                # it was not there yet then (or it has expired). Read it again.
                text = self.get_reply(conversation_id, turn.turn_id)
            yield turn, text

    def staff_messages_backwards(self, conversation_id: UUID, last_turn: int) -> Iterator[StaffMessage]:
        """The staff messages posted after turns up to `last_turn`, newest first, read as `turns_backwards`
        reads turns (1 item, then TAIL_PAGE items a page)."""
        last_key = f"{MESSAGE_PREFIX}{last_turn:06d}#~"
        for item in self._items_backwards(conversation_id, MESSAGE_PREFIX, last_key, 1):
            plain = self._plain(item)
            _, after_turn, number = str(plain["sk"]).split("#")
            yield StaffMessage(
                after_turn=int(after_turn),
                number=int(number),
                about_turn=int(plain["about_turn"]),
                text=str(plain["text"]),
                at=datetime.fromisoformat(str(plain["at"])),
            )

    def drafts(self, turns: Sequence[TurnRecord]) -> dict[tuple[UUID, int], tuple[str | None, Draft | None]]:
        """Each turn's REPLY item: the reply shown and the draft it judged (BatchGetItem, 100 a call)."""
        found: dict[tuple[UUID, int], tuple[str | None, Draft | None]] = {}
        keys = [
            self._item({"pk": partition_key(turn.conversation_id), "sk": reply_sort_key(turn.turn_id)})
            for turn in turns
        ]
        for start in range(0, len(keys), 100):
            request: dict[str, Any] = {self._table: {"Keys": keys[start : start + 100], "ConsistentRead": True}}
            while request:
                with store_errors():
                    response = self._client.batch_get_item(RequestItems=request)
                for item in response.get("Responses", {}).get(self._table, []):
                    plain = self._plain(item)
                    conversation_id = UUID(str(plain["pk"]).removeprefix("CONV#"))
                    turn_id = int(str(plain["sk"]).split("#")[1])
                    draft = None
                    if "ended_by_eos" in plain:  # a screened draft (its text is the reply's when absent)
                        draft = Draft(
                            text=str(plain.get("draft_text", plain["reply"])),
                            output_tokens=int(plain["output_tokens"])
                            if plain.get("output_tokens") is not None
                            else None,
                            ended_by_eos=bool(plain["ended_by_eos"]),
                            hit_token_cap=bool(plain["hit_token_cap"]),
                            passage_ids=tuple(plain.get("passage_ids", ())),
                        )
                    found[(conversation_id, turn_id)] = (str(plain["reply"]), draft)
                request = response.get("UnprocessedKeys") or {}  # type: ignore[assignment]
        return found

    def staff_message_items(
        self,
        conversation_id: UUID,
        turn_count: int,
        count: int,
        about_turn: int,
        text: str,
        now: datetime,
        kept: timedelta,
    ) -> list[dict[str, Any]]:
        """Transaction items that post staff message number `count` + 1 after turn `turn_count`, kept for
        `kept`: conditional on the conversation's turn count still being `turn_count` and its message
        counter still `count`, so messages are committed in the order they sort in."""
        return [
            {
                "ConditionCheck": {
                    "TableName": self._table,
                    "Key": self._item({"pk": partition_key(conversation_id), "sk": STATE_SK}),
                    "ConditionExpression": "turn_count = :turns",
                    "ExpressionAttributeValues": self._item({":turns": turn_count}),
                }
            },
            {
                "Put": {
                    "TableName": self._table,
                    "Item": self._item(
                        {
                            "pk": partition_key(conversation_id),
                            "sk": STAFF_COUNTER_SK,
                            "count": count + 1,
                            "expires_at": ttl_epoch(now + kept),
                        }
                    ),
                    "ConditionExpression": "attribute_not_exists(pk) OR #count = :count",
                    "ExpressionAttributeNames": {"#count": "count"},
                    "ExpressionAttributeValues": self._item({":count": count}),
                }
            },
            {
                "Put": {
                    "TableName": self._table,
                    "Item": self._item(
                        {
                            "pk": partition_key(conversation_id),
                            "sk": message_sort_key(turn_count, count + 1),
                            "about_turn": about_turn,
                            "text": text,
                            "at": stored_time(now),
                            "expires_at": ttl_epoch(now + kept),
                        }
                    ),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        ]
