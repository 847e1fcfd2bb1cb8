"""The one place that owns the logger, tracer and metrics. Log ids, actions and sizes, never text."""

import os

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "enrollment_desk"))
# The functions call AWS through boto3 and nothing else: patch botocore only. The default, every
# library the X-Ray SDK supports, imports each one that is installed (httpx, requests, sqlite3, ...)
# at cold start for calls these functions never make.
tracer = Tracer(patch_modules=("botocore",))
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "EnrollmentDesk"))
