"""Builds the AWS adapters once per process, from the environment settings."""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache

import boto3

from dialogue.desk_store import DynamoDeskStore
from dialogue.queues import SqsDispatchQueues
from dialogue.settings import get_settings
from dialogue.store import DynamoConversationStore


@lru_cache(maxsize=1)
def get_store() -> DynamoConversationStore:
    settings = get_settings()
    return DynamoConversationStore(
        boto3.client("dynamodb"),
        settings.table_name,
        retention=settings.retention,
        reply_retention=settings.reply_retention,
    )


@lru_cache(maxsize=1)
def get_desk_store() -> DynamoDeskStore:
    settings = get_settings()
    return DynamoDeskStore(
        boto3.client("dynamodb"),
        settings.table_name,
        retention=settings.retention,
        reply_retention=settings.reply_retention,
        staff_message_retention=timedelta(days=settings.staff_message_retention_days),
        audit_retention=timedelta(days=settings.audit_retention_days),
        audit_s3=boto3.client("s3") if settings.audit_bucket else None,
        audit_bucket=settings.audit_bucket,
    )


@lru_cache(maxsize=1)
def get_dispatch_queues() -> SqsDispatchQueues:
    settings = get_settings()
    return SqsDispatchQueues(
        boto3.client("sqs"),
        realize_queue_url=settings.realize_queue_url,
        screen_queue_url=settings.screen_queue_url,
    )


def reset_caches() -> None:
    """Forget settings and clients, for tests and local stacks that change the environment."""
    from dialogue import idempotency
    from dialogue.pack.loader import forget_loaded_packs

    idempotency.reset()
    get_store.cache_clear()
    get_desk_store.cache_clear()
    get_dispatch_queues.cache_clear()
    get_settings.cache_clear()
    forget_loaded_packs()
