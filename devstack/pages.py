"""The two pages under `devstack serve`, on the API's own origin, and the local sign-in the console uses.

- `/chat` (the resident's chat), `/console` (the staff console), `/assets/...` and `/config.json`, from
  web/. In AWS the same files sit in S3 behind CloudFront, with a config.json made from the stack's
  outputs (`make publish-pages`).
- The local sign-in speaks the part of OAuth 2.0 the console uses against Cognito's managed login: the
  authorization-code flow with PKCE (S256). Its authorize page asks only for a name and says plainly that
  it is local; its token endpoint checks the code, the client, the redirect address and the verifier, and
  answers with an access token from devstack's issuer (devstack/auth.py), which the staff API checks as
  API Gateway would. So the console takes the same path to a token here as in AWS. It is served on a
  loopback address only.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import secrets
import threading
import time
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from devstack import PROJECT_ROOT
from devstack.auth import CLIENT_ID, TOKEN_LIFETIME_S, LocalIssuer
from dialogue.errors import ERRORS, pages_errors
from dialogue.pack import DomainPack, get_pack

WEB_ROOT = PROJECT_ROOT / "web"
PAGES = {"/chat": "chat/index.html", "/console": "console/index.html"}
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
# The pages load nothing from elsewhere; the console posts to the sign-in's token endpoint (same origin here).
SECURITY_HEADERS = [
    (
        "Content-Security-Policy",
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
]
AUTHORIZE = "/local-auth/oauth2/authorize"
TOKEN = "/local-auth/oauth2/token"
CODE_LIFETIME_S = 300
SCOPE = "openid"


@dataclass(frozen=True)
class Page:
    """An answer: status, headers, body."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


def _page(status: HTTPStatus, content_type: str, body: bytes, headers: list[tuple[str, str]] | None = None) -> Page:
    return Page(int(status), [("Content-Type", content_type), *SECURITY_HEADERS, *(headers or [])], body)


def _json(status: HTTPStatus, body: dict[str, Any]) -> Page:
    return _page(status, "application/json", json.dumps(body).encode())


def _route_not_found() -> Page:
    return _json(HTTPStatus.NOT_FOUND, {"error": "route_not_found", "message": ERRORS["route_not_found"].message})


def desk_config(pack: DomainPack) -> dict[str, Any]:
    """The desk's name, introduction, how a person answers, example questions and contact form for the
    pages, from its domain pack."""
    domain = pack.spec.domain
    return {
        "name": domain.name,
        "intro": domain.intro,
        "person_answers": domain.person_answers,
        "examples": list(domain.examples),
        "contact": _contact_config(pack),
        "hours": _hours_config(pack),
    }


def _hours_config(pack: DomainPack) -> dict[str, Any] | None:
    """How the chat says when a person answers outside the desk's hours: the pack's closed_text, and the
    locale and time zone the next opening is written in. None when the pack gives no hours."""
    hours = pack.spec.hours
    if hours is None:
        return None
    return {"time_zone": hours.time_zone, "locale": hours.locale, "closed_text": hours.closed_text}


def _contact_config(pack: DomainPack) -> dict[str, Any] | None:
    """The chat's contact form: per channel value that takes a detail, its field; the note's label and
    limit. None when the desk has no form. Formats are checked by the API (its one sentence says why)."""
    form = pack.spec.contact
    if form is None:
        return None
    return {
        "slot": form.slot,
        "title": form.title,
        "details": {
            value: {"label": spec.label, "kind": spec.kind, "hint": spec.hint, "max_chars": spec.max_chars}
            for value, spec in form.details.items()
        },
        "note_label": form.note_label,
        "note_max_chars": form.note_max_chars,
    }


def local_config() -> dict[str, Any]:
    """The pages' config under devstack: the desk, the errors' table (what the pages say and do for each
    code, dialogue.errors) and the local sign-in's endpoints (on this origin)."""
    return {
        "desk": desk_config(get_pack()),
        "errors": pages_errors(),
        "local": True,
        "authorizeUrl": AUTHORIZE,
        "tokenUrl": TOKEN,
        "logoutUrl": None,
        "clientId": CLIENT_ID,
        "scope": SCOPE,
    }


@dataclass
class _Grant:
    name: str
    challenge: str
    redirect_uri: str
    expires: float


class Pages:
    """Serves web/ and the local sign-in. `loopback` is whether the server listens on loopback only."""

    def __init__(self, issuer: LocalIssuer, *, loopback: bool, root: Path = WEB_ROOT) -> None:
        self._issuer = issuer
        self._loopback = loopback
        self._root = root.resolve()
        self._grants: dict[str, _Grant] = {}
        self._lock = threading.Lock()

    def handle(self, method: str, path: str, query: str, body: bytes) -> Page | None:
        """The answer for a page, an asset or the local sign-in; None for any other path (the APIs')."""
        if path.startswith("/local-auth/"):
            return self._sign_in(method, path, query, body)
        if method not in ("GET", "HEAD"):
            return None
        if path == "/config.json":
            return _json(HTTPStatus.OK, local_config())
        if path in PAGES or path.rstrip("/") in PAGES:
            return self._file(PAGES[path.rstrip("/")])
        if path.startswith("/assets/"):
            return self._file(path.removeprefix("/"))
        return None

    def _file(self, relative: str) -> Page:
        target = (self._root / relative).resolve()
        if not target.is_relative_to(self._root) or not target.is_file() or target.suffix not in CONTENT_TYPES:
            return _route_not_found()
        return _page(HTTPStatus.OK, CONTENT_TYPES[target.suffix], target.read_bytes())

    # --- the local sign-in ---------------------------------------------------------------------------

    def _sign_in(self, method: str, path: str, query: str, body: bytes) -> Page:
        if not self._loopback:
            return _json(
                HTTPStatus.FORBIDDEN,
                {"error": "local_sign_in_off", "message": "The local sign-in is served on a loopback address only."},
            )
        if path == AUTHORIZE and method == "GET":
            return self._authorize_form(_fields(query.encode()))
        if path == AUTHORIZE and method == "POST":
            return self._authorize(_fields(body))
        if path == TOKEN and method == "POST":
            return self._token(_fields(body))
        return _route_not_found()

    @staticmethod
    def _request_problem(fields: dict[str, str]) -> str | None:
        if fields.get("response_type") != "code" or fields.get("client_id") != CLIENT_ID:
            return "The sign-in request is not one the staff console makes."
        if fields.get("code_challenge_method") != "S256" or len(fields.get("code_challenge", "")) < 43:
            return "The sign-in request needs a PKCE challenge (S256)."
        redirect = urlsplit(fields.get("redirect_uri", ""))
        if redirect.scheme != "http" or redirect.hostname not in ("127.0.0.1", "localhost", "::1"):
            return "The sign-in returns to this machine's console only."
        if redirect.path != "/console":
            return "The sign-in returns to the staff console only."
        return None

    def _authorize_form(self, fields: dict[str, str]) -> Page:
        problem = self._request_problem(fields)
        if problem:
            return _page(HTTPStatus.BAD_REQUEST, CONTENT_TYPES[".html"], _sign_in_page(problem, {}).encode())
        return _page(HTTPStatus.OK, CONTENT_TYPES[".html"], _sign_in_page(None, fields).encode())

    def _authorize(self, fields: dict[str, str]) -> Page:
        problem = self._request_problem(fields)
        name = fields.get("name", "").strip()
        if problem is None and not 0 < len(name) <= 64:
            problem = "Give a name of 1 to 64 characters."
        if problem:
            return _page(HTTPStatus.BAD_REQUEST, CONTENT_TYPES[".html"], _sign_in_page(problem, fields).encode())
        code = secrets.token_urlsafe(24)
        with self._lock:
            now = time.monotonic()
            self._grants = {key: grant for key, grant in self._grants.items() if grant.expires > now}
            self._grants[code] = _Grant(name, fields["code_challenge"], fields["redirect_uri"], now + CODE_LIFETIME_S)
        location = f"{fields['redirect_uri']}?{urlencode({'code': code, 'state': fields.get('state', '')})}"
        return _page(HTTPStatus.SEE_OTHER, "text/plain; charset=utf-8", b"", [("Location", location)])

    def _token(self, fields: dict[str, str]) -> Page:
        invalid = _json(HTTPStatus.BAD_REQUEST, {"error": "invalid_grant", "message": "The code is not valid."})
        if fields.get("grant_type") != "authorization_code" or fields.get("client_id") != CLIENT_ID:
            return invalid
        with self._lock:
            grant = self._grants.pop(fields.get("code", ""), None)  # a code is good once
        if grant is None or grant.expires <= time.monotonic() or grant.redirect_uri != fields.get("redirect_uri"):
            return invalid
        digest = hashlib.sha256(fields.get("code_verifier", "").encode()).digest()
        if base64.urlsafe_b64encode(digest).decode().rstrip("=") != grant.challenge:
            return invalid
        token = self._issuer.token(grant.name)
        return _json(
            HTTPStatus.OK,
            {"access_token": token, "token_type": "Bearer", "expires_in": TOKEN_LIFETIME_S, "scope": SCOPE},
        )


def _fields(raw: bytes) -> dict[str, str]:
    try:
        parsed = parse_qs(raw.decode("utf-8"), keep_blank_values=True)
    except UnicodeDecodeError:
        return {}
    return {name: values[0] for name, values in parsed.items()}


_CARRIED = ("response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method")


def _sign_in_page(problem: str | None, fields: dict[str, str]) -> str:
    hidden = "".join(
        f'<input type="hidden" name="{name}" value="{html.escape(fields.get(name, ""))}">' for name in _CARRIED
    )
    alert = f'<p class="notice error" role="alert">{html.escape(problem)}</p>' if problem else ""
    form = (
        ""
        if problem and not fields
        else f"""<form method="post" action="{AUTHORIZE}">
      {hidden}
      <label for="name">Your name</label>
      <input type="text" id="name" name="name" maxlength="64" autocomplete="username" required>
      <p><button type="submit">Sign in</button></p>
    </form>"""
    )
    return f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Local sign-in - enrollment desk (devstack)</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="/assets/site.css">
</head>
<body>
  <header class="site"><h1>Local sign-in</h1></header>
  <main>
    <p class="notice local">This is devstack's local sign-in, on this machine only: any name signs in as desk
      staff. In AWS, staff sign in with Cognito.</p>
    {alert}
    {form}
  </main>
</body>
</html>
"""
