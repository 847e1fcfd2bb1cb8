"""The one place that owns the logger, tracer and metrics. Log ids, actions and sizes, never text."""

import os

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger(service=os.environ.get("POWERTOOLS_SERVICE_NAME", "enrollment_desk"))
tracer = Tracer()
metrics = Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "EnrollmentDesk"))
