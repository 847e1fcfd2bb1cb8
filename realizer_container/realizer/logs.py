"""The realizer's logger: Powertools' Logger, as the Lambdas log, one JSON object a line.

Log ids, counts and error types, never a message body, a prompt or a reply.
"""

from aws_lambda_powertools.logging import Logger

log = Logger(service="realizer")
