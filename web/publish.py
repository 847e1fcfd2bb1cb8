"""Publish the two pages to a deployed stack: `make publish-pages STACK=enrollment-desk`.

Reads the stack's outputs, writes config.json from them (the Cognito managed login's endpoints and the
console's app client) and from the errors' table (dialogue.errors), uploads the pages to the pages bucket
under the paths CloudFront serves (`chat`, `console`, `assets/...`, `config.json`), and invalidates the
distribution. It also checks that
the console's address is one the app client may return to after sign-in, and says how to add it if not.

    .venv/bin/python web/publish.py --stack enrollment-desk [--region us-east-1]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

WEB = Path(__file__).resolve().parent
PAGES = {"chat": WEB / "chat" / "index.html", "console": WEB / "console" / "index.html"}
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8", ".json": "application/json"}  # fmt: skip
FRESH = "no-cache"  # pages and config: always revalidated, so a publish shows at once
ASSETS = "public, max-age=300"
NEEDED_OUTPUTS = (
    "PagesBucketName",
    "PagesDistributionId",
    "PagesUrl",
    "StaffSignInUrl",
    "StaffConsoleClientId",
    "DomainPack",
)


class PublishError(RuntimeError):
    """The stack cannot take the pages as it is."""


def console_config(outputs: Mapping[str, str]) -> dict[str, Any]:
    """The pages' config.json in AWS: the stack's desk, the errors' table (dialogue.errors: what the pages
    say and do for each code), and Cognito's managed login for the console's client."""
    from devstack.pages import desk_config
    from dialogue.errors import pages_errors
    from dialogue.pack import get_pack, pack_dir_for

    sign_in = outputs["StaffSignInUrl"].rstrip("/")
    return {
        "desk": desk_config(get_pack(pack_dir_for(outputs["DomainPack"]))),
        "errors": pages_errors(),
        "local": False,
        "authorizeUrl": f"{sign_in}/oauth2/authorize",
        "tokenUrl": f"{sign_in}/oauth2/token",
        "logoutUrl": f"{sign_in}/logout",
        "clientId": outputs["StaffConsoleClientId"],
        "scope": "openid email",
    }


def files_to_publish(outputs: Mapping[str, str]) -> list[tuple[str, bytes, str, str]]:
    """(key, body, content type, cache control) for every object the distribution serves."""
    published = [(key, path.read_bytes(), CONTENT_TYPES[".html"], FRESH) for key, path in PAGES.items()]
    for path in sorted((WEB / "assets").iterdir()):
        if path.suffix in CONTENT_TYPES:
            published.append((f"assets/{path.name}", path.read_bytes(), CONTENT_TYPES[path.suffix], ASSETS))
    config = json.dumps(console_config(outputs), indent=2).encode()
    published.append(("config.json", config, CONTENT_TYPES[".json"], FRESH))
    return published


def stack_outputs(cloudformation: Any, stack: str) -> dict[str, str]:
    (described,) = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    outputs = {output["OutputKey"]: output["OutputValue"] for output in described.get("Outputs", [])}
    missing = [name for name in NEEDED_OUTPUTS if name not in outputs]
    if missing:
        raise PublishError(f"the stack {stack} has no output {missing[0]}: deploy this version of template.yaml first")
    return outputs


def check_callback(cognito: Any, outputs: Mapping[str, str], user_pool_id: str) -> str | None:
    """A sentence saying how to let sign-in return to the console, or None when it already may."""
    client = cognito.describe_user_pool_client(UserPoolId=user_pool_id, ClientId=outputs["StaffConsoleClientId"])
    console = f"{outputs['PagesUrl'].rstrip('/')}/console"
    if console in client["UserPoolClient"].get("CallbackURLs", []):
        return None
    # The guided deploy saves the answer in samconfig.toml; a one-off --parameter-overrides would be undone by
    # the next plain `sam deploy`, which sends the saved parameters.
    return (
        f"Sign-in cannot return to {console} yet: run .venv-deploy/bin/sam deploy --guided, answer "
        f"Parameter StaffConsoleUrls with {console}, keep the other answers (Enter), and save the arguments to "
        "samconfig.toml (Y), so every later sam deploy keeps it (docs/DEPLOY.md, step 4)."
    )


def publish(outputs: Mapping[str, str], s3: Any, cloudfront: Any) -> list[str]:
    """Upload every page, asset and the config; invalidate the distribution. Returns the keys written."""
    keys = []
    for key, body, content_type, cache_control in files_to_publish(outputs):
        s3.put_object(
            Bucket=outputs["PagesBucketName"], Key=key, Body=body, ContentType=content_type, CacheControl=cache_control
        )
        keys.append(key)
    cloudfront.create_invalidation(
        DistributionId=outputs["PagesDistributionId"],
        InvalidationBatch={"Paths": {"Quantity": 1, "Items": ["/*"]}, "CallerReference": f"publish-{time.time_ns()}"},
    )
    return keys


def main(argv: list[str] | None = None) -> int:
    import boto3

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stack", required=True, help="the deployed stack's name")
    parser.add_argument("--region", help="its region (default: the AWS CLI's)")
    args = parser.parse_args(argv)
    session = boto3.Session(region_name=args.region)
    try:
        outputs = stack_outputs(session.client("cloudformation"), args.stack)
        keys = publish(outputs, session.client("s3"), session.client("cloudfront"))
        advice = check_callback(session.client("cognito-idp"), outputs, outputs["StaffUserPoolId"])
    except PublishError as error:
        print(f"publish-pages: {error}", file=sys.stderr)
        return 1
    print(f"publish-pages: {len(keys)} files to {outputs['PagesBucketName']}; the chat is at "
          f"{outputs['PagesUrl']}/chat and the console at {outputs['PagesUrl']}/console")  # fmt: skip
    if advice:
        print(f"publish-pages: {advice}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
