"""Only CloudFront reaches the API: the origin-verify values the turn and staff functions accept.

The stack's OriginVerifySecret holds the value CloudFront adds as the X-Origin-Verify header. The
functions get the secret's ARN (ORIGIN_VERIFY_SECRET_ARN), never its value, and read it from Secrets
Manager on their first request: its current version (AWSCURRENT) and, once a rotation has made one, the
one before it (AWSPREVIOUS). A request whose header holds either goes on, so `make
rotate-origin-secret` (ops/rotate_origin_secret.py), which stores a new value and then gives it to
CloudFront, never breaks one: a request still carrying the old value matches the previous version.

The values are kept for the life of the execution environment and read again
- on a header that matches neither, at most once every REFRESH_SECONDS (a rotation's new value is taken
  on its first request, and a flood of wrong headers costs one Secrets Manager call a minute), and
- when older than MAX_AGE_SECONDS, so a value two rotations old stops being accepted.
SnapStart restores a snapshot into many environments, possibly long after it was taken: the handlers
forget the values after a restore (`forget_origin_values`, dialogue.snapstart), and init reads none.

Where no ARN is given (devstack, `sam local invoke` with events/env.json), ORIGIN_VERIFY is the one
value accepted: a deliberate local setting. With neither, or a secret that cannot be read, every request
is refused: a missing setting never lets a request in.
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Callable, Iterable
from functools import lru_cache
from time import monotonic

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from dialogue.aws.observability import logger
from dialogue.settings import get_settings

REFRESH_SECONDS = 60.0
"""The least time between two reads of the secret that a wrong header sets off."""
MAX_AGE_SECONDS = 600.0
"""Values older than this are read again on the next request, whatever it carries."""
STAGES = ("AWSCURRENT", "AWSPREVIOUS")
"""The secret's versions accepted: the value CloudFront has, and the one it had before a rotation."""


def read_secret_values(client: object, secret_id: str) -> tuple[str, ...]:
    """The secret's current value and, where a rotation left one, its previous: non-empty values only.

    Raises what boto3 raises when the current one cannot be read; a missing previous version is normal
    (a secret never rotated has none)."""
    values: list[str] = []
    for stage in STAGES:
        try:
            answer = client.get_secret_value(SecretId=secret_id, VersionStage=stage)  # type: ignore[attr-defined]
        except ClientError as error:
            if stage != "AWSCURRENT" and error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                continue
            raise
        value = answer.get("SecretString") or ""
        if value and value not in values:
            values.append(value)
    return tuple(values)


class OriginValues:
    """The accepted values, read by `read` on first use and again as the module's docstring says.

    `read` returns the values, or raises: a read that fails keeps the values read before (a short
    Secrets Manager outage refuses nothing that went through before) and, with none, refuses all.
    """

    def __init__(
        self,
        read: Callable[[], Iterable[str]],
        *,
        clock: Callable[[], float] | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
        max_age_seconds: float = MAX_AGE_SECONDS,
    ) -> None:
        self._read = read
        self._clock = clock or (lambda: monotonic())  # looked up on each call: tests move the clock
        self._refresh_seconds = refresh_seconds
        self._max_age_seconds = max_age_seconds
        self._values: tuple[bytes, ...] = ()
        self._read_at: float | None = None  # when the last read was tried, whether or not it worked
        self._lock = threading.Lock()

    def _refresh(self) -> None:
        self._read_at = self._clock()
        try:
            values = tuple(value.encode() for value in self._read() if value)
        except (BotoCoreError, ClientError) as error:
            # The error's code only: never the value, never the header that set the read off.
            code = (
                error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else type(error).__name__
            )
            logger.warning("origin-verify secret unreadable", error=code)
            return
        self._values = values

    def accepts(self, sent: str) -> bool:
        """Whether the header's value is one of the accepted values (constant-time comparisons)."""
        with self._lock:
            now = self._clock()
            if self._read_at is None or now - self._read_at >= self._max_age_seconds:
                self._refresh()
            if self._matches(sent):
                return True
            if self._read_at is not None and self._clock() - self._read_at < self._refresh_seconds:
                return False
            self._refresh()
            return self._matches(sent)

    def _matches(self, sent: str) -> bool:
        given = sent.encode()
        matched = False
        for value in self._values:
            matched |= hmac.compare_digest(given, value)
        return bool(given) and matched

    def forget(self) -> None:
        """Drop what was read: the next request reads again (after a SnapStart restore)."""
        with self._lock:
            self._values = ()
            self._read_at = None


@lru_cache(maxsize=1)
def get_origin_values() -> OriginValues:
    """The process's accepted values: the secret's (ORIGIN_VERIFY_SECRET_ARN), else the local ORIGIN_VERIFY,
    else none at all (every request refused)."""
    settings = get_settings()
    secret_id = settings.origin_verify_secret_arn
    if secret_id:
        # The client is made on the first read, after a SnapStart restore, never at init.
        return OriginValues(lambda: read_secret_values(boto3.client("secretsmanager"), secret_id))
    local = settings.origin_verify.get_secret_value()
    return OriginValues(lambda: (local,) if local else ())


def forget_origin_values() -> None:
    """Forget the values read (SnapStart's after-restore hook): the next request reads them again."""
    if get_origin_values.cache_info().currsize:
        get_origin_values().forget()
