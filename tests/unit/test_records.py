"""How the store keeps a record's times: one format, read from the model's own fields."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

from dialogue.aws.table import TIMES
from dialogue.records import TurnRecord, datetime_fields


class Later(BaseModel):
    name: str
    at: datetime
    maybe_at: datetime | None = None
    count: int = 0


def test_every_time_a_turn_record_holds_is_kept_in_the_one_stored_format() -> None:
    """The store keeps each datetime field as `stored_time` (milliseconds, UTC), read from the model: a
    time field added to a record is kept so too, without a list to remember to update."""
    assert datetime_fields(Later) == ("at", "maybe_at")
    fields = TurnRecord.model_fields.items()
    assert set(TIMES) == {name for name, field in fields if "datetime" in str(field.annotation)}
    assert {"created_at", "finalized_at", "decided_at"} <= set(TIMES)
