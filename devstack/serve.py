"""`python -m devstack serve`: the turn API and the staff API over HTTP, as API Gateway serves them, on
the local stack.

Each request becomes an HTTP API payload-2.0 event for its handler (turn_api, or staff_api for a path
under /staff); the handler's answer is written back as it is (status, headers, body). A /staff request
passes the JWT authorizer first, as in AWS: its bearer token must verify against devstack's key (see
devstack/auth.py; `python -m devstack token --staff NAME` issues one), else 401. Generated turns
complete in the background: a drainer thread runs the realizer and the screen function until both
queues are empty, and the sweeper every five minutes. moto and the handlers are not thread-safe, so
one lock serializes every use of the stack.

`GET /openapi.json` and `GET /openapi-staff.json` serve the OpenAPI documents the two resolvers
generate from their routes.

It also plays the pages' CloudFront distribution, the only way to the API in AWS: each run makes a
random origin-verify value, the handlers require it (ORIGIN_VERIFY), and every API request this server
passes on carries it in the X-Origin-Verify header, whatever the client sent there.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import secrets
import signal
import socket
import sys
import threading
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from devstack.audit import AuditWriter
from devstack.events import FakeLambdaContext, http_event
from devstack.pages import Pages
from devstack.stack import LocalStack, local_stack, unauthorized_body
from dialogue.aws.api import ORIGIN_VERIFY_HEADER

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3000
OPENAPI_PATH = "/openapi.json"
STAFF_OPENAPI_PATH = "/openapi-staff.json"
STAFF_PREFIX = "/staff"
# API Gateway HTTP APIs take payloads up to 10 MB; a bigger body is refused before the handler runs.
MAX_BODY_BYTES = 10 * 1024 * 1024
API_TITLE = "Enrollment desk turn API"
API_VERSION = "1.0.0"
API_DESCRIPTION = (
    "Start a conversation, post turns, read each turn's reply. Every error is "
    '{"error": "<code>", "message": "<one sentence>"} and never repeats the input.'
)
DRAIN_POLL_SECONDS = 2.0  # the drainer also looks at the queues this often, woken or not

_STOPPING = {"error": "server_stopping", "message": "The local server is stopping."}
# Header names API Gateway does not pass on to the integration as a client sent them.
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "upgrade", "te", "trailer"})


# --- the OpenAPI document ---------------------------------------------------------------------------


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of the turn API, as its resolver generates it from the routes' declarations."""
    import turn_api

    document: dict[str, Any] = json.loads(
        turn_api.app.get_openapi_json_schema(title=API_TITLE, version=API_VERSION, description=API_DESCRIPTION)
    )
    return document


STAFF_API_TITLE = "Enrollment desk staff API"
STAFF_API_DESCRIPTION = (
    "The desk's review and hand-off queues, claims, decisions, staff messages and corrections of a "
    "conversation's record, and its figures. Every "
    "route needs a staff bearer token (Cognito in AWS; `python -m devstack token --staff NAME` locally)."
)


def staff_openapi_document() -> dict[str, Any]:
    """The OpenAPI document of the staff API, with its bearer-token security scheme."""
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    import staff_api

    document: dict[str, Any] = json.loads(
        staff_api.app.get_openapi_json_schema(
            title=STAFF_API_TITLE,
            version=API_VERSION,
            description=STAFF_API_DESCRIPTION,
            security_schemes={"staffToken": HTTPBearer(bearerFormat="JWT")},
            security=[{"staffToken": []}],
        )
    )
    return document


def is_staff_path(path: str) -> bool:
    return path == STAFF_PREFIX or path.startswith(STAFF_PREFIX + "/")


# --- the gateway: HTTP request → event → handler → HTTP response -----------------------------------


class Reply:
    """What goes back to the client: a status, headers and a body."""

    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


def _json_reply(status: HTTPStatus, body: Any, headers: list[tuple[str, str]] | None = None) -> Reply:
    return Reply(int(status), [("Content-Type", "application/json"), *(headers or [])], json.dumps(body).encode())


def _error_reply(status: HTTPStatus, code: str, message: str) -> Reply:
    return _json_reply(status, {"error": code, "message": message})


class Gateway:
    """Serves requests from the local stack; one lock around every use of it."""

    def __init__(
        self,
        stack: LocalStack,
        *,
        log: TextIO | None = None,
        audit: AuditWriter | None = None,
        loopback: bool = True,
        origin_verify: str | None = None,
    ) -> None:
        self._stack = stack
        self._origin_verify = origin_verify
        self._pages = Pages(stack.issuer, loopback=loopback)
        self._lock = threading.Lock()
        self._log = log
        self._audit = audit
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._closed = False
        self._drainer = threading.Thread(target=self._drain_loop, name="devstack-drainer", daemon=True)
        self._openapi = json.dumps(openapi_document(), indent=2).encode()
        self._staff_openapi = json.dumps(staff_openapi_document(), indent=2).encode()

    def start(self) -> None:
        self._drainer.start()

    def stop(self) -> None:
        """Stop draining, and wait for a request in flight: the stack goes away after this."""
        self._stopping.set()
        self._wake.set()
        self._drainer.join(timeout=30)
        with self._lock:
            self._closed = True
            self._flush_logs()
            if self._audit is not None:
                self._audit.add_items(self._stack)

    def openapi(self, staff: bool = False) -> Reply:
        document = self._staff_openapi if staff else self._openapi
        return Reply(int(HTTPStatus.OK), [("Content-Type", "application/json")], document)

    def handle(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> Reply:
        path, _, query = target.partition("?")
        if method == "GET" and path in (OPENAPI_PATH, STAFF_OPENAPI_PATH):
            return self.openapi(staff=path == STAFF_OPENAPI_PATH)
        page = self._pages.handle(method, path, query, body)
        if page is not None:  # the chat, the console, their assets and config, the local sign-in
            return Reply(page.status, page.headers, page.body)
        event_headers = _event_headers(headers)
        event_headers.pop(ORIGIN_VERIFY_HEADER, None)  # as CloudFront does: its own value, never the client's
        staff = is_staff_path(path)
        claims = None
        if staff:  # API Gateway's JWT authorizer, before the function
            claims = self._stack.authorizer.claims(event_headers.get("authorization"))
            if claims is None:
                return _json_reply(HTTPStatus.UNAUTHORIZED, unauthorized_body(), [("WWW-Authenticate", "Bearer")])
        event = http_event(
            method,
            path,
            query=query,
            headers=event_headers,
            json_content_type=False,
            claims=claims,
            origin_verify=self._origin_verify,
        )
        cookies = [value for name, value in headers if name.lower() == "cookie"]
        if cookies:
            event["cookies"] = [c.strip() for value in cookies for c in value.split(";") if c.strip()]
        if body:
            try:
                event["body"] = body.decode("utf-8")
            except UnicodeDecodeError:
                event["body"] = base64.b64encode(body).decode("ascii")
                event["isBase64Encoded"] = True
        result = self._invoke(event, staff=staff)
        if method == "POST" and int(result.get("statusCode", 0)) == HTTPStatus.ACCEPTED:
            self._wake.set()  # a generated turn: realize and screen it in the background
        return _from_result(result)

    def _invoke(self, event: dict[str, Any], *, staff: bool) -> dict[str, Any]:
        import staff_api
        import turn_api

        handler = staff_api.lambda_handler if staff else turn_api.lambda_handler
        name = "staff_api" if staff else "turn_api"
        with self._lock:
            if self._closed:
                return _result(HTTPStatus.SERVICE_UNAVAILABLE, _STOPPING)
            try:
                # The handler's logs and metrics are captured as the stack captures them; show or drop them.
                with self._stack._captured():
                    result: dict[str, Any] = handler(event, FakeLambdaContext(function_name=name))
            except Exception as error:  # Lambda would answer 500 for an unhandled error; so does API Gateway.
                # Where it failed, not the message: a message could carry what the user typed.
                where = "".join(traceback.format_tb(error.__traceback__))
                print(f"devstack serve: the {name} handler failed: {type(error).__name__}\n{where}", file=sys.stderr)
                result = _result(HTTPStatus.INTERNAL_SERVER_ERROR, {"message": "Internal Server Error"})
            self._flush_logs()
        return result

    def _drain_loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(timeout=DRAIN_POLL_SECONDS)
            self._wake.clear()
            with self._lock:
                try:
                    self._stack.drain()
                    self._stack.sweep_if_due()  # as EventBridge Scheduler runs the sweeper in AWS
                except Exception as error:  # keep serving; the turn falls back at its deadline, or the sweep
                    where = "".join(traceback.format_tb(error.__traceback__))
                    name = type(error).__name__
                    print(f"devstack serve: draining the queues failed: {name}\n{where}", file=sys.stderr)
                self._flush_logs()

    def _flush_logs(self) -> None:
        """Show (or drop) the log lines captured so far, and hand them and the messages sent to the audit."""
        if self._log is not None:
            for line in self._stack.log_lines:
                print(line, file=self._log)
            self._log.flush()
        if self._audit is not None:
            self._audit.add_log_lines(self._stack.log_lines)
            self._audit.add_messages(self._stack.sent_messages)
        self._stack.log_lines.clear()
        self._stack.sent_messages.clear()


def _result(status: HTTPStatus, body: dict[str, str]) -> dict[str, Any]:
    """A payload-2.0 answer made here rather than by the handler."""
    return {"statusCode": int(status), "headers": {"content-type": "application/json"}, "body": json.dumps(body)}


def _event_headers(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Headers as API Gateway passes them: names lower-cased, repeats joined by commas, cookies apart."""
    joined: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        if key in _HOP_BY_HOP or key == "cookie":
            continue
        joined[key] = f"{joined[key]},{value}" if key in joined else value
    return joined


def _from_result(result: dict[str, Any]) -> Reply:
    """The handler's payload-2.0 answer as an HTTP response."""
    body_text = result.get("body") or ""
    body = base64.b64decode(body_text) if result.get("isBase64Encoded") else str(body_text).encode()
    headers = [(str(name), str(value)) for name, value in (result.get("headers") or {}).items()]
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers.extend((str(name), str(value)) for value in values)
    headers.extend(("Set-Cookie", str(cookie)) for cookie in result.get("cookies") or [])
    return Reply(int(result.get("statusCode", HTTPStatus.OK)), headers, body)


# --- the HTTP server ---------------------------------------------------------------------------------


def _request_handler(gateway: Gateway, *, quiet: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "devstack"
        disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms delayed-ACK stall

        def version_string(self) -> str:
            return self.server_version

        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            if self.headers.get("Transfer-Encoding"):
                self.close_connection = True
                reply = _error_reply(
                    HTTPStatus.LENGTH_REQUIRED, "length_required", "Send the body with a Content-Length header."
                )
                return self._write(reply)
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if length < 0 or length > MAX_BODY_BYTES:
                self.close_connection = True
                reply = _error_reply(
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "payload_too_large", "The body must be at most 10 MB."
                )
                return self._write(reply)
            body = self.rfile.read(length) if length else b""
            self._write(gateway.handle(self.command, self.path, list(self.headers.items()), body))

        def _write(self, reply: Reply) -> None:
            self.send_response(reply.status)
            for name, value in reply.headers:
                if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(reply.body)

        def __getattr__(self, name: str) -> Any:
            # Every method reaches the handler, as API Gateway passes it on (the resolver answers 404).
            if name.startswith("do_"):
                return self._serve
            raise AttributeError(name)

        def log_message(self, format: str, *args: Any) -> None:
            if not quiet:
                super().log_message(format, *args)

    return Handler


class ServeError(RuntimeError):
    """The server could not start."""


class DevServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class DevServer6(DevServer):
    address_family = socket.AF_INET6


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    realizer: str = "template",
    model: str | None = None,
    revision: str | None = None,
    quiet: bool = False,
    handler_logs: bool = False,
    audit_dir: Path | None = None,
    stdout: TextIO | None = None,
    install_signals: bool = True,
    stop: threading.Event | None = None,
) -> int:
    """Serve until SIGINT or SIGTERM (or until `stop` is set, for a caller that runs it in a thread
    with `install_signals=False`); returns the exit status."""
    out = stdout or sys.stdout
    stop = stop or threading.Event()
    origin_verify = secrets.token_urlsafe(32)  # CloudFront's X-Origin-Verify, this run's own
    with local_stack(realizer=realizer, model=model, revision=revision, origin_verify=origin_verify) as stack:
        audit = AuditWriter(audit_dir) if audit_dir is not None else None
        gateway = Gateway(
            stack,
            log=sys.stderr if handler_logs else None,
            audit=audit,
            loopback=_is_loopback(host),
            origin_verify=origin_verify,
        )
        server_class = DevServer6 if ":" in host else DevServer
        try:
            server = server_class((host, port), _request_handler(gateway, quiet=quiet))
        except OSError as error:  # the port is taken, or the host is not an address of this machine
            raise ServeError(f"cannot serve on {host}:{port}: {error.strerror or error}") from None
        if not _is_loopback(host):
            print(f"devstack serve: {host} is not a loopback address; others may reach this server", file=sys.stderr)
        bound_host, bound_port = server.server_address[:2]
        url = f"http://{_url_host(str(bound_host))}:{bound_port}"
        previous: dict[signal.Signals, Any] = {}
        signalled: list[int] = []
        if install_signals:

            def request_stop(signum: int, frame: FrameType | None) -> None:
                # No locks in a signal handler (Event.set takes one the main thread may hold): set a flag.
                signalled.append(signum)

            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, request_stop)
        gateway.start()
        serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        serving.start()
        print(f"devstack serve: the turn API on {url} (realizer: {realizer}); OpenAPI at {url}{OPENAPI_PATH}", file=out)
        print(
            f"The staff API under {url}{STAFF_PREFIX}/ (OpenAPI at {url}{STAFF_OPENAPI_PATH}); "
            "a token: python -m devstack token --staff NAME",
            file=out,
        )
        print(f"The resident chat at {url}/chat, the staff console at {url}/console", file=out)
        print("Press Ctrl-C to stop.", file=out, flush=True)
        try:
            while not signalled and not stop.is_set():
                time.sleep(0.1)
        finally:
            server.shutdown()
            server.server_close()
            serving.join(timeout=10)
            gateway.stop()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        print("devstack serve: stopped.", file=out, flush=True)
    return 0


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
