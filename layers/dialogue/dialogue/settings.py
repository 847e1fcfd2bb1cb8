"""Settings read from the environment (pydantic-settings), validated once per process.

Each field is read from the upper-case variable of its name: `table_name` from TABLE_NAME, and so on.
"""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache
from typing import Annotated

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from dialogue.actions import ScreenProfile

MAX_REPLY_DEADLINE_SECONDS = 900
"""SQS delays a message 900 s at most, and a turn's deadline message is delayed by the deadline."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(frozen=True, extra="ignore", case_sensitive=False)

    table_name: Annotated[str, Field(min_length=3)]
    realize_queue_url: str = ""
    screen_queue_url: str = ""
    # The realize queue is another stack's (SHARED_REALIZER, the template's SharedRealizerQueueArn): each
    # job names this desk's screen queue as its reply queue.
    shared_realizer: bool = False
    retention_days: Annotated[int, Field(ge=1, le=3650)] = 30
    reply_retention_hours: Annotated[int, Field(ge=1, le=24 * 365)] = 24
    reply_deadline_seconds: Annotated[int, Field(ge=0, le=MAX_REPLY_DEADLINE_SECONDS)] = 60
    # The sweeper: a turn still pending this long after its deadline gets the fallback (dialogue.sweep).
    sweep_grace_seconds: Annotated[int, Field(ge=0, le=3600)] = 120
    dispatch_failure_queue_url: str = ""
    # Worded (generated) replies one conversation may ask for in an hour: each wakes or keeps a GPU.
    max_generated_turns_per_hour: Annotated[int, Field(ge=1, le=10_000)] = 30
    max_turns_per_conversation: Annotated[int, Field(ge=1, le=10_000)] = 200
    # The reply screens' profile (SCREEN_PROFILE: lesson or desk); unset, the pack's.
    screen_profile: ScreenProfile | None = None
    # The staff desk.
    staff_group: Annotated[str, Field(min_length=1, max_length=128)] = "desk-staff"
    claim_seconds: Annotated[int, Field(ge=30, le=3600)] = 600
    staff_message_retention_days: Annotated[int, Field(ge=1, le=3650)] = 30
    audit_retention_days: Annotated[int, Field(ge=1, le=3650)] = 365
    # The audit's WORM copy: an S3 bucket under Object Lock (AUDIT_BUCKET); empty, no copy is written.
    audit_bucket: str = ""
    # The contact form's KMS key (CONTACT_KEY_ID: an id, ARN or alias); empty, the form is refused.
    contact_key_id: str = ""
    # The realizer's ECS service, which the dispatch function wakes from zero (dialogue.aws.ecs); both
    # empty (no realizer deployed, or a local stack), nothing is woken.
    realizer_cluster: str = ""
    realizer_service: str = ""
    # The realizer's task range (RealizerMinTasks, RealizerMaxTasks), which the off switch restores when
    # turned on (dialogue.aws.ecs.RealizerSwitch).
    realizer_min_tasks: Annotated[int, Field(ge=0, le=10)] = 0
    realizer_max_tasks: Annotated[int, Field(ge=1, le=10)] = 2
    # A turn that finds the realizer cold (no task running, or switched off) gets its fallback this many
    # seconds after it, with the desk's line that a person will check it, not after the reply deadline.
    cold_fallback_seconds: Annotated[int, Field(ge=0, le=60)] = 2
    # Only CloudFront reaches the API (dialogue.aws.origin): the turn and staff functions accept a request
    # whose X-Origin-Verify header holds the stack's OriginVerifySecret's current or previous value, read
    # from Secrets Manager by its ARN (ORIGIN_VERIFY_SECRET_ARN; the value is never in the environment).
    origin_verify_secret_arn: str = ""
    # Where no ARN is given, a deliberate local value (devstack, `sam local invoke` with events/env.json):
    # the one value accepted. With neither, every request is refused: nothing is unchecked.
    origin_verify: SecretStr = SecretStr("")

    @property
    def retention(self) -> timedelta:
        return timedelta(days=self.retention_days)

    @property
    def reply_retention(self) -> timedelta:
        return timedelta(hours=self.reply_retention_hours)

    @property
    def reply_deadline(self) -> timedelta:
        return timedelta(seconds=self.reply_deadline_seconds)

    @property
    def sweep_grace(self) -> timedelta:
        return timedelta(seconds=self.sweep_grace_seconds)

    @property
    def claim_lifetime(self) -> timedelta:
        return timedelta(seconds=self.claim_seconds)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()  # type: ignore[call-arg]  # table_name comes from the environment
