"""Builds the AWS adapters once per process, from the environment settings."""

from __future__ import annotations

from datetime import timedelta
from functools import lru_cache

import boto3
from botocore.config import Config

from dialogue.aws.audit import AuditCopyRepair, AuditLinks
from dialogue.aws.ecs import EcsServiceWaker
from dialogue.aws.figures import DeskFigures
from dialogue.aws.queues import DynamoDeskStore
from dialogue.aws.sealing import KmsSealer
from dialogue.aws.sqs import SqsDispatchQueues
from dialogue.aws.stores import DynamoConversationStore
from dialogue.ports import DeskStore, RealizerWaker
from dialogue.settings import get_settings

# The waker's ECS calls are an optimization on the dispatch function's path: each gets one attempt and
# a few seconds, so a slow ECS can never run the function (10 s) out of time. The wake alarm is the backstop.
ECS_WAKE_CONFIG = Config(connect_timeout=1, read_timeout=2, retries={"total_max_attempts": 1})
# The off switch's read (the scalable target's maximum), made only at zero tasks: one attempt, 2 s at most.
SWITCH_READ_CONFIG = Config(connect_timeout=1, read_timeout=1, retries={"total_max_attempts": 1})


@lru_cache(maxsize=1)
def get_store() -> DynamoConversationStore:
    settings = get_settings()
    return DynamoConversationStore.on_table(
        boto3.client("dynamodb"),
        settings.table_name,
        retention=settings.retention,
        reply_retention=settings.reply_retention,
    )


@lru_cache(maxsize=1)
def get_desk_store() -> DeskStore:
    """The staff API's store: one object per concern on one DynamoDB client, each handed what it needs."""
    settings = get_settings()
    client, table = boto3.client("dynamodb"), settings.table_name
    audit = AuditLinks(
        client,
        table,
        audit_retention=timedelta(days=settings.audit_retention_days),
        audit_s3=boto3.client("s3") if settings.audit_bucket else None,
        audit_bucket=settings.audit_bucket,
    )
    return DynamoDeskStore(
        client,
        table,
        conversations=DynamoConversationStore.on_table(
            client, table, retention=settings.retention, reply_retention=settings.reply_retention
        ),
        audit=audit,
        figures=DeskFigures(client, table),
        reply_retention=settings.reply_retention,
        staff_message_retention=timedelta(days=settings.staff_message_retention_days),
    )


@lru_cache(maxsize=1)
def get_audit_repair() -> AuditCopyRepair | None:
    """The sweeper's repair of the audit's WORM copy, or None where no audit bucket is named (no copy is
    written, so none to repair)."""
    settings = get_settings()
    if not settings.audit_bucket:
        return None
    return AuditCopyRepair(boto3.client("dynamodb"), settings.table_name, boto3.client("s3"), settings.audit_bucket)


@lru_cache(maxsize=1)
def get_sealer() -> KmsSealer | None:
    """The contact form's seal on the stack's KMS key (CONTACT_KEY_ID), or None where none is named: then
    the form is refused (503) and nothing is stored."""
    settings = get_settings()
    return KmsSealer(boto3.client("kms"), settings.contact_key_id) if settings.contact_key_id else None


@lru_cache(maxsize=1)
def get_dispatch_queues() -> SqsDispatchQueues:
    settings = get_settings()
    return SqsDispatchQueues(
        boto3.client("sqs"),
        realize_queue_url=settings.realize_queue_url,
        screen_queue_url=settings.screen_queue_url,
    )


@lru_cache(maxsize=1)
def get_realizer_waker() -> RealizerWaker | None:
    """The realizer's waker, or None where no realizer service is named (no GPU stack, a local stack)."""
    settings = get_settings()
    if not (settings.realizer_cluster and settings.realizer_service):
        return None
    return EcsServiceWaker(
        boto3.client("ecs", config=ECS_WAKE_CONFIG),
        cluster=settings.realizer_cluster,
        service=settings.realizer_service,
        # The off switch: the scalable target's maximum, read when the service wants no task.
        scaling=boto3.client("application-autoscaling", config=SWITCH_READ_CONFIG),
    )


def reset_caches() -> None:
    """Forget settings and clients, for tests and local stacks that change the environment."""
    from dialogue.aws.origin import get_origin_values
    from dialogue.pack.loader import forget_loaded_packs

    get_store.cache_clear()
    get_desk_store.cache_clear()
    get_audit_repair.cache_clear()
    get_dispatch_queues.cache_clear()
    get_sealer.cache_clear()
    get_realizer_waker.cache_clear()
    get_origin_values.cache_clear()
    get_settings.cache_clear()
    forget_loaded_packs()
