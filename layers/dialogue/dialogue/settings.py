"""Settings read from the environment, validated once per process."""

from __future__ import annotations

import os
from datetime import timedelta
from functools import lru_cache
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    table_name: Annotated[str, Field(min_length=3)]
    realize_queue_url: str = ""
    screen_queue_url: str = ""
    idempotency_table_name: str = ""
    retention_days: Annotated[int, Field(ge=1, le=3650)] = 30
    reply_retention_hours: Annotated[int, Field(ge=1, le=24 * 365)] = 24
    # SQS delays a message 900 s at most, and the deadline message is delayed by the deadline.
    reply_deadline_seconds: Annotated[int, Field(ge=0, le=900)] = 60
    max_turns_per_conversation: Annotated[int, Field(ge=1, le=10_000)] = 200

    @property
    def retention(self) -> timedelta:
        return timedelta(days=self.retention_days)

    @property
    def reply_retention(self) -> timedelta:
        return timedelta(hours=self.reply_retention_hours)

    @property
    def reply_deadline(self) -> timedelta:
        return timedelta(seconds=self.reply_deadline_seconds)


_ENVIRONMENT = {
    "table_name": "TABLE_NAME",
    "realize_queue_url": "REALIZE_QUEUE_URL",
    "screen_queue_url": "SCREEN_QUEUE_URL",
    "idempotency_table_name": "IDEMPOTENCY_TABLE_NAME",
    "retention_days": "RETENTION_DAYS",
    "reply_retention_hours": "REPLY_RETENTION_HOURS",
    "reply_deadline_seconds": "REPLY_DEADLINE_SECONDS",
    "max_turns_per_conversation": "MAX_TURNS_PER_CONVERSATION",
}


def settings_from_env() -> Settings:
    values = {field: os.environ[name] for field, name in _ENVIRONMENT.items() if name in os.environ}
    return Settings.model_validate(values)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return settings_from_env()
