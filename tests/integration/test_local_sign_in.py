"""devstack's pages and local sign-in (devstack/pages.py): the authorization-code flow with PKCE the
console uses against Cognito, checked as an authorization server checks it, on loopback only."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from devstack.auth import CLIENT_ID, KEY_FILE, JwtAuthorizer, LocalIssuer
from devstack.pages import AUTHORIZE, TOKEN, Pages

ROOT = Path(__file__).resolve().parents[2]
REDIRECT = "http://127.0.0.1:3000/console"
VERIFIER = "v" * 20 + "-verifier-of-at-least-43-characters-for-pkce"


def challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> LocalIssuer:
    return LocalIssuer.load(tmp_path_factory.mktemp("home"))


def request(**overrides: str) -> dict[str, str]:
    return {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": REDIRECT,
        "scope": "openid",
        "state": "s-123",
        "code_challenge": challenge(VERIFIER),
        "code_challenge_method": "S256",
        **overrides,
    }


def sign_in(pages: Pages, name: str = "ana") -> str:
    answer = pages.handle("POST", AUTHORIZE, "", urlencode({**request(), "name": name}).encode())
    assert answer is not None and answer.status == 303
    location = dict(answer.headers)["Location"]
    assert location.startswith(REDIRECT + "?")
    query = parse_qs(urlsplit(location).query)
    assert query["state"] == ["s-123"]
    return query["code"][0]


def token(pages: Pages, code: str, **overrides: str) -> tuple[int, dict[str, object]]:
    fields = {"grant_type": "authorization_code", "client_id": CLIENT_ID, "code": code, "redirect_uri": REDIRECT,
              "code_verifier": VERIFIER, **overrides}  # fmt: skip
    answer = pages.handle("POST", TOKEN, "", urlencode(fields).encode())
    assert answer is not None
    return answer.status, json.loads(answer.body)


def test_a_code_and_its_verifier_give_a_token_the_authorizer_accepts(issuer: LocalIssuer) -> None:
    pages = Pages(issuer, loopback=True)
    form = pages.handle("GET", AUTHORIZE, urlencode(request()), b"")
    assert form is not None and form.status == 200 and b"local sign-in" in form.body
    status, body = token(pages, sign_in(pages))
    assert status == 200 and body["token_type"] == "Bearer"
    claims = JwtAuthorizer(issuer.jwks()).claims(f"Bearer {body['access_token']}")
    assert claims is not None and claims["username"] == "ana" and claims["cognito:groups"] == "[desk-staff]"


@pytest.mark.parametrize(
    "overrides",
    [{"code_verifier": "x" * 43}, {"redirect_uri": "http://127.0.0.1:3000/elsewhere"}, {"client_id": "other"},
     {"grant_type": "password"}],
)  # fmt: skip
def test_a_token_needs_the_right_verifier_client_and_address(issuer: LocalIssuer, overrides: dict[str, str]) -> None:
    pages = Pages(issuer, loopback=True)
    status, body = token(pages, sign_in(pages), **overrides)
    assert (status, body["error"]) == (400, "invalid_grant")


def test_a_code_is_good_once(issuer: LocalIssuer) -> None:
    pages = Pages(issuer, loopback=True)
    code = sign_in(pages)
    assert token(pages, code)[0] == 200
    assert token(pages, code)[0] == 400


@pytest.mark.parametrize(
    ("overrides", "sentence"),
    [
        ({"code_challenge": ""}, "The sign-in request needs a PKCE challenge (S256)."),
        ({"code_challenge_method": "plain"}, "The sign-in request needs a PKCE challenge (S256)."),
        ({"redirect_uri": "https://evil.example/console"}, "The sign-in returns to this machine's console only."),
        ({"redirect_uri": "http://127.0.0.1:3000/chat"}, "The sign-in returns to the staff console only."),
        ({"client_id": "other"}, "The sign-in request is not one the staff console makes."),
    ],
)
def test_sign_in_requests_the_console_would_not_make_are_refused(
    issuer: LocalIssuer, overrides: dict[str, str], sentence: str
) -> None:
    pages = Pages(issuer, loopback=True)
    answer = pages.handle("GET", AUTHORIZE, urlencode(request(**overrides)), b"")
    assert answer is not None and answer.status == 400 and sentence.encode() in answer.body.replace(b"&#x27;", b"'")


def test_the_local_sign_in_is_off_unless_served_on_loopback(issuer: LocalIssuer) -> None:
    pages = Pages(issuer, loopback=False)
    answer = pages.handle("GET", AUTHORIZE, urlencode(request()), b"")
    assert answer is not None and answer.status == 403
    assert json.loads(answer.body)["error"] == "local_sign_in_off"


def test_pages_and_assets_are_served_and_nothing_else(issuer: LocalIssuer) -> None:
    pages = Pages(issuer, loopback=True)
    for path, kind in (("/chat", "text/html"), ("/console", "text/html"), ("/assets/chat.js", "text/javascript"),
                       ("/config.json", "application/json")):  # fmt: skip
        answer = pages.handle("GET", path, "", b"")
        assert answer is not None and answer.status == 200, path
        headers = dict(answer.headers)
        assert headers["Content-Type"].startswith(kind) and "script-src 'self'" in headers["Content-Security-Policy"]
    for path in ("/assets/../../pyproject.toml", "/assets/%2e%2e/README.md", "/assets/nothing.js"):
        answer = pages.handle("GET", path, "", b"")
        assert answer is not None and answer.status == 404, path
    assert pages.handle("GET", "/conversations", "", b"") is None  # the API's, not a page
    assert json.loads(pages.handle("GET", "/config.json", "", b"").body)["local"] is True  # type: ignore[union-attr]


def test_the_authorizer_judges_aud_when_a_token_has_one_as_api_gateway_does(issuer: LocalIssuer) -> None:
    """A token whose `aud` is wrong is refused even with the right `client_id`; `client_id` counts only
    for a token without `aud` (Cognito's access tokens)."""
    import jwt

    authorizer = JwtAuthorizer(issuer.jwks())
    base = jwt.decode(issuer.token("ana"), options={"verify_signature": False})

    def signed(**changes: object) -> str:
        claims = {key: value for key, value in {**base, **changes}.items() if value is not None}
        return jwt.encode(claims, issuer.private_key, algorithm="RS256", headers={"kid": issuer.key_id})

    assert authorizer.claims(f"Bearer {signed()}") is not None
    assert authorizer.claims(f"Bearer {signed(aud='some-other-app')}") is None
    assert authorizer.claims(f"Bearer {signed(aud=['some-other-app'])}") is None
    assert authorizer.claims(f"Bearer {signed(aud=CLIENT_ID, client_id='some-other-app')}") is not None
    assert authorizer.claims(f"Bearer {signed(client_id='some-other-app')}") is None


def test_the_signing_key_is_read_from_its_file_each_time_and_parsed_once_per_content(tmp_path: Path) -> None:
    """Every local stack loads the issuer: the same file gives the same key without parsing it again, and a
    file replaced with another key gives that key."""
    first = LocalIssuer.load(tmp_path)
    assert LocalIssuer.load(tmp_path) is first
    other = LocalIssuer.load(tmp_path / "elsewhere")
    assert other.key_id != first.key_id
    (tmp_path / KEY_FILE).write_bytes((tmp_path / "elsewhere" / KEY_FILE).read_bytes())
    assert LocalIssuer.load(tmp_path).key_id == other.key_id
    (tmp_path / KEY_FILE).write_bytes(b"-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    with pytest.raises(ValueError):
        LocalIssuer.load(tmp_path)


def test_a_test_run_leaves_no_signing_key_behind(tmp_path: Path) -> None:
    """tests/conftest.py gives each run a DEVSTACK_HOME of its own, for the staff signing key: the process
    that made it removes it when it exits, and a process that inherits the variable makes none."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("DEVSTACK_HOME", None)
    collect = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--collect-only",
               "tests/integration/test_local_sign_in.py"]  # fmt: skip
    subprocess.run(collect, cwd=ROOT, env=env, check=True, capture_output=True)
    assert list(tmp_path.glob("devstack-home-*")) == []
    inherited = tmp_path / "given"
    inherited.mkdir()
    subprocess.run(collect, cwd=ROOT, env={**env, "DEVSTACK_HOME": str(inherited)}, check=True, capture_output=True)
    assert list(tmp_path.iterdir()) == [inherited]
