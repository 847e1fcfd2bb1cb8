"""The one place that owns the logger, tracer and metrics. Log ids, actions and sizes, never text.

The Tracer is built only where tracing is on, by Powertools' own rule: in Lambda, unless
POWERTOOLS_TRACE_DISABLED is true, or under `sam local` or Chalice. Elsewhere (tests, devstack, `sam local
invoke`) the handlers get `TracingOff`, whose decorator does nothing: Powertools' Tracer, even disabled,
imports the X-Ray SDK and builds its recorder, and outside Lambda that recorder builds two botocore X-Ray
clients (about 0.3 s of CPU per process; bench/RESULTS.md, P3).
"""

import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer


class TracingOff:
    """The handlers' tracer where tracing is off: `capture_lambda_handler`, with or without its options,
    returns the handler unchanged. Nothing imports aws_xray_sdk."""

    disabled = True

    def capture_lambda_handler(
        self, lambda_handler: Callable[..., Any] | None = None, **_options: Any
    ) -> Callable[..., Any]:
        return self.capture_lambda_handler if lambda_handler is None else lambda_handler


def tracing_on() -> bool:
    """Powertools' rule for whether its Tracer traces (Tracer._is_tracer_disabled, in the pinned
    aws-lambda-powertools; tests/unit/test_observability.py holds it to each case): the environment
    variables only, and it imports nothing."""
    return not Tracer._is_tracer_disabled()


logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "enrollment_desk"))
# The functions call AWS through boto3 and nothing else: patch botocore only. The default, every
# library the X-Ray SDK supports, imports each one that is installed (httpx, requests, sqlite3, ...)
# at cold start for calls these functions never make.
tracer: Tracer | TracingOff = Tracer(patch_modules=("botocore",)) if tracing_on() else TracingOff()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "EnrollmentDesk"))
