"""`python -m ops rotate-origin-secret`: a new origin-verify value, with no request refused on the way.

    python -m ops rotate-origin-secret --stack enrollment-desk [--region us-east-1]

The stack's OriginVerifySecret holds the value CloudFront adds as the X-Origin-Verify header, and the turn
and staff functions accept the secret's current value (AWSCURRENT) and its previous one (AWSPREVIOUS,
dialogue.aws.origin). So, one line per step:
1. a new random value is stored in the secret: it becomes AWSCURRENT, and the value CloudFront still
   sends becomes AWSPREVIOUS, still accepted;
2. a wait of a little over a minute, the least time between two reads of the secret by a function
   (dialogue.aws.origin.REFRESH_SECONDS): a function that read it just before step 1 may read it again by
   the time the first request with the new value arrives;
3. the distribution's X-Origin-Verify origin header is set to the new value (GetDistributionConfig, then
   UpdateDistribution with its ETag), and the command waits until CloudFront has deployed it.
A request sent meanwhile carries the old value or the new one, and either is accepted.

The template's header reads `{{resolve:secretsmanager:...}}`, the secret's current value, so a later `sam
deploy` gives CloudFront this same new value. Where CloudFront's header is not the secret's current value
(a rotation stopped before step 3), no new value is made: the command finishes that rotation instead,
since storing another would retire the value CloudFront still sends. Exit 1, with one sentence, when AWS
cannot be read or changed.
"""

from __future__ import annotations

import argparse
import secrets
import string
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from ops.aws import AWS_ERRORS, aws_reason, physical_ids, report_failure, session_clients

SECRET = "OriginVerifySecret"
DISTRIBUTION = "PagesDistribution"
HEADER = "x-origin-verify"
VALUE_LENGTH = 48  # the template's GenerateSecretString: letters and digits
REFRESH_WAIT_SECONDS = 65  # dialogue.aws.origin.REFRESH_SECONDS, and a few more


class RotateFailure(Exception):
    """Why the rotation stopped, as one sentence without its full stop."""


def new_value() -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(VALUE_LENGTH))


def stack_resources(cloudformation: Any, stack: str) -> tuple[str, str]:
    """The stack's origin-verify secret (its ARN) and its pages distribution (its id)."""
    try:
        physical = physical_ids(cloudformation, stack)
    except AWS_ERRORS as error:
        raise RotateFailure(f"looking up the resources of the stack {stack} failed ({aws_reason(error)})") from None
    missing = [name for name in (SECRET, DISTRIBUTION) if name not in physical]
    if missing:
        names = " or ".join(missing)
        raise RotateFailure(f"the stack {stack} has no {names}: is it this project's stack, fully deployed?")
    return physical[SECRET], physical[DISTRIBUTION]


def _origin_header(config: dict[str, Any]) -> dict[str, Any]:
    """The distribution's one X-Origin-Verify origin custom header (the API origin's)."""
    found = [
        header
        for origin in config.get("Origins", {}).get("Items", [])
        for header in origin.get("CustomHeaders", {}).get("Items", [])
        if str(header.get("HeaderName", "")).lower() == HEADER
    ]
    if len(found) != 1:
        raise RotateFailure(f"the distribution has {len(found)} X-Origin-Verify origin headers, not one")
    header: dict[str, Any] = found[0]
    return header


def rotate(
    secretsmanager: Any,
    cloudfront: Any,
    secret_id: str,
    distribution_id: str,
    *,
    out: TextIO,
    sleep: Callable[[float], None] = time.sleep,
    wait_delay: int = 30,
    wait_attempts: int = 60,
) -> None:
    """The steps in the module's docstring; RotateFailure when one fails."""
    try:
        current = secretsmanager.get_secret_value(SecretId=secret_id, VersionStage="AWSCURRENT")["SecretString"]
        answer = cloudfront.get_distribution_config(Id=distribution_id)
    except AWS_ERRORS as error:
        raise RotateFailure(f"reading the secret and the distribution failed ({aws_reason(error)})") from None
    config, etag = answer["DistributionConfig"], answer["ETag"]
    header = _origin_header(config)
    if header.get("HeaderValue") == current:
        value = new_value()
        try:
            secretsmanager.put_secret_value(SecretId=secret_id, SecretString=value)
        except AWS_ERRORS as error:
            raise RotateFailure(f"storing the new value failed ({aws_reason(error)}); nothing changed") from None
        print(
            "rotate-origin-secret: stored a new value as the secret's AWSCURRENT; the one CloudFront sends "
            "is now AWSPREVIOUS, still accepted.",
            file=out,
        )
    else:
        value = current
        print(
            "rotate-origin-secret: CloudFront does not send the secret's current value yet (a rotation "
            "stopped before its last step): finishing it, with no new value.",
            file=out,
        )
    print(
        f"rotate-origin-secret: waiting {REFRESH_WAIT_SECONDS} s, so that every function may read the new "
        "value on its first request with it.",
        file=out,
    )
    sleep(REFRESH_WAIT_SECONDS)
    header["HeaderValue"] = value
    try:
        cloudfront.update_distribution(Id=distribution_id, IfMatch=etag, DistributionConfig=config)
    except AWS_ERRORS as error:
        raise RotateFailure(
            f"updating the distribution {distribution_id} failed ({aws_reason(error)}); the old value is still "
            "accepted: run the command again to finish"
        ) from None
    print(f"rotate-origin-secret: distribution {distribution_id} updated to send the new value; deploying.", file=out)
    try:
        cloudfront.get_waiter("distribution_deployed").wait(
            Id=distribution_id, WaiterConfig={"Delay": wait_delay, "MaxAttempts": wait_attempts}
        )
    except AWS_ERRORS as error:
        raise RotateFailure(
            f"waiting for the distribution {distribution_id} to deploy failed ({aws_reason(error)}); both values "
            "are accepted meanwhile"
        ) from None
    print(
        f"rotate-origin-secret: distribution {distribution_id} deployed: CloudFront sends the new value, and the "
        "functions accept it and the one before it.",
        file=out,
    )


def main(argv: list[str] | None = None, *, out: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops rotate-origin-secret",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--stack", required=True, help="the deployed stack's name")
    parser.add_argument("--region", help="its region (default: the AWS CLI's)")
    args = parser.parse_args(argv)
    out = out or sys.stdout
    try:
        import boto3

        try:
            session = boto3.Session(region_name=args.region)
            cloudformation, secretsmanager, cloudfront = session_clients(
                session, "cloudformation", "secretsmanager", "cloudfront"
            )
        except AWS_ERRORS as error:
            raise RotateFailure(f"connecting to AWS failed ({aws_reason(error)})") from None
        secret_id, distribution_id = stack_resources(cloudformation, args.stack)
        rotate(secretsmanager, cloudfront, secret_id, distribution_id, out=out)
    except RotateFailure as error:
        return report_failure("rotate-origin-secret", error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
