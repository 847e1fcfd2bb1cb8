"""`make publish-pages`: the pages, their assets and a config.json from the stack's outputs, on moto."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import boto3
import pytest
from commands import load_script
from moto import mock_aws

from dialogue.errors import pages_errors

ROOT = Path(__file__).resolve().parents[2]


def _publisher() -> ModuleType:
    return load_script("web/publish.py", "web_publish")


publisher = _publisher()


def outputs(bucket: str, distribution: str, client_id: str, pool_id: str) -> dict[str, str]:
    return {
        "DomainPack": "riverton",
        "PagesBucketName": bucket,
        "PagesDistributionId": distribution,
        "PagesUrl": "https://d111111abcdef8.cloudfront.net",
        "StaffSignInUrl": "https://riverton-desk.auth.us-east-1.amazoncognito.com",
        "StaffConsoleClientId": client_id,
        "StaffUserPoolId": pool_id,
    }


@pytest.fixture
def aws() -> dict[str, object]:
    with mock_aws():
        region = "us-east-1"
        s3 = boto3.client("s3", region_name=region)
        s3.create_bucket(Bucket="pages")
        cloudfront = boto3.client("cloudfront", region_name=region)
        distribution = cloudfront.create_distribution(
            DistributionConfig={
                "CallerReference": "test",
                "Comment": "pages",
                "Enabled": True,
                "Origins": {"Quantity": 1, "Items": [{"Id": "pages", "DomainName": "pages.s3.amazonaws.com",
                                                      "S3OriginConfig": {"OriginAccessIdentity": ""}}]},
                "DefaultCacheBehavior": {"TargetOriginId": "pages", "ViewerProtocolPolicy": "redirect-to-https",
                                         "MinTTL": 0, "ForwardedValues": {"QueryString": False,
                                                                          "Cookies": {"Forward": "none"}}},
            }
        )["Distribution"]["Id"]  # fmt: skip
        cognito = boto3.client("cognito-idp", region_name=region)
        pool = cognito.create_user_pool(PoolName="staff")["UserPool"]["Id"]
        client = cognito.create_user_pool_client(
            UserPoolId=pool, ClientName="staff-console", CallbackURLs=["http://localhost:3000/console"]
        )["UserPoolClient"]["ClientId"]
        yield {"s3": s3, "cloudfront": cloudfront, "cognito": cognito,
               "outputs": outputs("pages", distribution, client, pool)}  # fmt: skip


def test_every_page_asset_and_the_config_go_where_cloudfront_serves_them(aws: dict[str, object]) -> None:
    s3, cloudfront, values = aws["s3"], aws["cloudfront"], aws["outputs"]
    keys = publisher.publish(values, s3, cloudfront)
    assets = {f"assets/{path.name}" for path in (ROOT / "web" / "assets").iterdir()}
    assert set(keys) == {"chat", "console", "config.json", *assets}
    page = s3.get_object(Bucket="pages", Key="chat")
    assert page["ContentType"] == "text/html; charset=utf-8" and page["CacheControl"] == "no-cache"
    assert page["Body"].read() == (ROOT / "web" / "chat" / "index.html").read_bytes()
    script = s3.get_object(Bucket="pages", Key="assets/console.js")
    assert script["ContentType"] == "text/javascript; charset=utf-8"
    config = json.loads(s3.get_object(Bucket="pages", Key="config.json")["Body"].read())
    hours = config["desk"].pop("hours")  # the pack's [hours]: how the chat says when a person answers
    assert (hours["time_zone"], hours["locale"]) == ("Europe/London", "en-GB")
    assert "{next_opening}" in hours["closed_text"]
    contact = config["desk"].pop("contact")  # the pack's [contact] form, without its formats (the API checks)
    assert contact["slot"] == "contact_channel" and set(contact["details"]) == {"phone", "email"}
    assert contact["details"]["phone"]["label"] == "Your phone number" and "pattern" not in contact["details"]["phone"]
    assert config == {
        "desk": {
            "name": "Riverton Skills Centre enrollment desk",
            "intro": "Ask about the Data Support Certificate or the Forklift Operator Licence course.",
            "person_answers": (
                "When the assistant cannot help, a member of staff answers here in this chat, Monday to Friday "
                "from 9 a.m. to 5 p.m."
            ),
            "examples": [
                "When does the Data Support Certificate meet?",
                "How much does the forklift course cost?",
                "Can I talk to a person?",
            ],
        },
        "errors": pages_errors(),  # the pages' words for each error code: the one table's
        "local": False,
        "authorizeUrl": "https://riverton-desk.auth.us-east-1.amazoncognito.com/oauth2/authorize",
        "tokenUrl": "https://riverton-desk.auth.us-east-1.amazoncognito.com/oauth2/token",
        "logoutUrl": "https://riverton-desk.auth.us-east-1.amazoncognito.com/logout",
        "clientId": values["StaffConsoleClientId"],
        "scope": "openid email",
    }
    invalidations = cloudfront.list_invalidations(DistributionId=values["PagesDistributionId"])
    assert invalidations["InvalidationList"]["Quantity"] == 1


def test_it_says_how_to_let_sign_in_return_to_the_published_console(aws: dict[str, object]) -> None:
    cognito, values = aws["cognito"], aws["outputs"]
    advice = publisher.check_callback(cognito, values, values["StaffUserPoolId"])
    # The guided deploy, saved to samconfig.toml: a one-off --parameter-overrides would be undone by the next
    # plain `sam deploy`, which sends the saved parameters.
    assert advice == (
        "Sign-in cannot return to https://d111111abcdef8.cloudfront.net/console yet: run .venv-deploy/bin/sam "
        "deploy --guided, answer Parameter StaffConsoleUrls with https://d111111abcdef8.cloudfront.net/console, "
        "keep the other answers (Enter), and save the arguments to samconfig.toml (Y), so every later sam deploy "
        "keeps it (docs/DEPLOY.md, step 4)."
    )
    assert "--parameter-overrides" not in advice
    cognito.update_user_pool_client(
        UserPoolId=values["StaffUserPoolId"],
        ClientId=values["StaffConsoleClientId"],
        CallbackURLs=["https://d111111abcdef8.cloudfront.net/console"],
    )
    assert publisher.check_callback(cognito, values, values["StaffUserPoolId"]) is None


def test_a_stack_without_the_pages_is_refused_in_one_sentence() -> None:
    with mock_aws():
        cloudformation = boto3.client("cloudformation", region_name="us-east-1")
        cloudformation.create_stack(
            StackName="old",
            TemplateBody=json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
                                     "Outputs": {"ApiUrl": {"Value": "https://example.org"}}}),
        )  # fmt: skip
        with pytest.raises(publisher.PublishError, match="has no output PagesBucketName"):
            publisher.stack_outputs(cloudformation, "old")
