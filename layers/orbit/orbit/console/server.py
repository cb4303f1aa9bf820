"""The console's HTTP side: static files shipped in the package, and a narrow proxy to the Orbit API.

The browser talks only to this server. The server calls the Orbit API through a `Backend`:
`orbit ui` uses `orbit.Client` (SigV4-signed from the user's AWS credentials for a deployed
stack), `orbit dev` routes in process. The browser never sees a credential.

Safety:
- Only the GET routes the console reads and its actions (start, signal, query, update, fork, hook
  resume, cancel, redrive, un-park, pause/unpause, schedule pause/resume) pass; anything else is
  404 here, whatever the API would accept.
- Every request, on every route, passes `orbit.local.origin.refusal` first: the Host header must
  name the address served (a DNS-rebound page cannot talk to it), an Origin must be our own, and
  a POST body must be application/json (415 otherwise).
- A POST also needs the per-process CSRF token (in a header the page reads from its own <meta>,
  which another origin cannot read).
- Every response says `nosniff`, and pages carry a CSP without inline scripts.
"""

from __future__ import annotations

import hmac
import json
import mimetypes
import re
import secrets
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from orbit.console.data import ConsoleData
from orbit.local.origin import ServedHosts, refusal

STATIC = Path(__file__).parent / "static"
MAX_CONSOLE_BODY = 1 << 20  # the console's actions are small JSON objects
READ_TIMEOUT_S = 10.0
PREFIX = "/console"
Backend = Callable[[str, str, Any], tuple[int, Any]]  # (method, path?query, body) -> (status, json)
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
_GETS = [
    re.compile(p)
    for p in (
        r"/executions",
        r"/executions/[^/]+",
        r"/executions/[^/]+/history",
        r"/executions/[^/]+/history/[0-9]+",
        r"/executions/[^/]+/workflow",
        r"/counts",
        r"/workflows",
        r"/workflows/[^/]+",
        r"/schedules",
        r"/schedules/[^/]+",
        r"/limits",  # flow control (static/limits.js)
        r"/batches/[^/]+",
    )
]
_POSTS = [
    re.compile(p)
    for p in (
        r"/executions",  # start (the input checked against the workflow's schema first: /_check_start)
        r"/executions/[^/]+/signals/[^/]+",
        r"/executions/[^/]+/queries/[^/]+",  # reads only, but a POST: CSRF-checked like the rest
        r"/executions/[^/]+/updates/[^/]+",
        r"/executions/[^/]+/fork",
        r"/executions/[^/]+/cancel",
        r"/executions/[^/]+/redrive",
        r"/executions/[^/]+/unpark",
        r"/executions/[^/]+/(pause|unpause)",
        r"/hooks/[^/]+",
        r"/schedules/[^/]+/(pause|resume)",
        r"/batches/[^/]+", r"/batches/[^/]+/stop",  # bulk actions (static/bulk.js), preview included
    )
]
# Extension point for actions: list their POST routes here and add an entry to Orbit.actions
# (static/actions.js); nothing else changes.


def client_backend(client: Any) -> Backend:
    """A Backend over `orbit.Client`: its signing, retries and error shapes."""
    from orbit.client import ApiError, Unreachable

    def call(method: str, target: str, body: Any) -> tuple[int, Any]:
        try:
            return 200, client._call(method, target, body)
        except ApiError as exc:
            return exc.status, exc.body
        except Unreachable as exc:
            return 502, {"error": {"code": "UNREACHABLE", "message": str(exc)}}
        except Exception as exc:  # noqa: BLE001 - credentials, stack lookup...: say it, keep serving
            return 502, {"error": {"code": type(exc).__name__, "message": str(exc)}}

    return call


class ConsoleApp:
    """Routes one request under /console; the HTTP server around it is ConsoleServer or `orbit dev`'s."""

    def __init__(self, backend: Backend, served: ServedHosts, target: str = "") -> None:
        self.backend = backend
        self.served = served  # the Host values answered (orbit/local/origin.py)
        self.csrf = secrets.token_urlsafe(32)
        self.target = target  # what the console is pointed at, shown in its header
        self.data = ConsoleData(backend)

    def handle(self, method: str, target: str, headers: Any, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        parts = urlsplit(target)
        path = parts.path
        refused = refusal(method, headers, self.served, bool(raw))  # Host, Origin, content type
        if refused is not None:
            return _json(refused.status, refused.body())
        if path in ("", "/", PREFIX):
            return 302, {"location": PREFIX + "/"}, b""
        if not path.startswith(PREFIX + "/"):
            return _json(404, {"error": {"code": "NOT_FOUND", "message": f"no route for {path}"}})
        sub = path[len(PREFIX) :]
        if sub.startswith("/api/"):
            return self._api(method, sub[len("/api") :], parts.query, headers, raw)
        if method != "GET":
            return _json(405, {"error": {"code": "METHOD_NOT_ALLOWED", "message": "GET only"}})
        return self._static(sub)

    def _api(
        self, method: str, path: str, query: str, headers: Any, raw: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        if method == "GET":
            if path == "/_console":
                return _json(200, {"target": self.target})
            m = re.fullmatch(r"/_live/([^/]+)", path)
            if m:
                return _json(*self.data.live(unquote(m.group(1))))
            m = re.fullmatch(r"/executions/([^/]+)/workflow", path)
            if m:
                return _json(*self.data.workflow(unquote(m.group(1))))
            m = re.fullmatch(r"/_step/([^/]+)/([^/]+)", path)
            if m:
                return _json(*self.data.step(unquote(m.group(1)), unquote(m.group(2))))
            m = re.fullmatch(r"/_history/([^/]+)", path)
            if m:
                return _json(*self._history(unquote(m.group(1)), dict(parse_qsl(query))))
            if not any(p.fullmatch(path) for p in _GETS):
                return _json(
                    404, {"error": {"code": "NOT_FOUND", "message": f"the console does not read {path}"}}
                )
            clean = [(k, v) for k, v in parse_qsl(query) if v != ""]
            qs = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in clean)
            return _json(*self.backend("GET", path + ("?" + qs if qs else ""), None))
        if method != "POST":
            return _json(405, {"error": {"code": "METHOD_NOT_ALLOWED", "message": f"{method} {path}"}})
        refused = self._csrf_refusal(headers)
        if refused:
            return _json(403, {"error": {"code": "CSRF", "message": refused}})
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            return _json(400, {"error": {"code": "VALIDATION_ERROR", "message": f"body is not JSON: {exc}"}})
        m = re.fullmatch(r"/_check_start/([^/]+)", path)
        if m:
            return _json(*self.data.check_start(unquote(m.group(1)), body))
        m = re.fullmatch(r"/_check_signal/([^/]+)/([^/]+)", path)
        if m:
            eid, name = unquote(m.group(1)), unquote(m.group(2))
            return _json(*self.data.check_signal(eid, name, body.get("payload")))
        if not any(p.fullmatch(path) for p in _POSTS):
            return _json(
                404, {"error": {"code": "NOT_FOUND", "message": f"the console does not send {path}"}}
            )
        status, payload = self.backend("POST", path, body)
        return _json(202 if status == 200 else status, payload)

    def _history(self, eid: str, q: dict[str, str]) -> tuple[int, Any]:
        try:
            after, limit = int(q.get("after_seq") or 0), int(q.get("limit") or 100)
        except ValueError:
            return 400, {"error": {"code": "VALIDATION_ERROR", "message": "after_seq and limit are integers"}}
        types = {t for t in (q.get("types") or "").split(",") if t}
        return self.data.history_page(eid, max(0, after), min(max(1, limit), 1000), types)

    def _csrf_refusal(self, headers: Any) -> str | None:
        token = headers.get("x-orbit-csrf") or ""
        if not hmac.compare_digest(token.encode(), self.csrf.encode()):
            return "missing or wrong X-Orbit-CSRF token; reload the console"
        origin = headers.get("origin")
        if origin and urlsplit(origin).netloc != (headers.get("host") or ""):
            return f"cross-origin request from {origin} refused"
        if "application/json" not in (headers.get("content-type") or ""):
            return "actions must be sent as application/json"
        return None

    def _static(self, sub: str) -> tuple[int, dict[str, str], bytes]:
        name = "index.html" if sub in ("", "/") else sub.lstrip("/")
        path = (STATIC / name).resolve()
        if STATIC.resolve() not in path.parents or not path.is_file():
            return _json(404, {"error": {"code": "NOT_FOUND", "message": f"no file {name}"}})
        body = path.read_bytes()
        if name == "index.html":  # the CSRF token, readable only by pages of this origin
            body = body.replace(b"__CSRF__", self.csrf.encode())
        ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if ctype.startswith("text/") or ctype.endswith("javascript"):
            ctype += "; charset=utf-8"
        cache = "no-store" if name == "index.html" else "max-age=300"
        return 200, {"content-type": ctype, "cache-control": cache, "content-security-policy": CSP}, body


def framing_problem(headers: Any, limit: int) -> tuple[int, str, str] | None:
    """Why a request's body cannot be read: chunked, a Content-Length that is not a non-negative
    integer (a traceback and a wait forever before), or one over `limit`."""
    if headers.get("transfer-encoding"):
        return 400, "BAD_FRAMING", "chunked request bodies are not supported; send Content-Length"
    header = headers.get("content-length")
    if header is None:
        return None
    if not re.fullmatch(r"[0-9]{1,18}", header.strip()):
        return 400, "BAD_FRAMING", f"Content-Length must be a non-negative integer, not {header[:40]!r}"
    if int(header) > limit:
        return 413, "PAYLOAD_TOO_LARGE", f"request body: {int(header)} bytes; at most {limit}"
    return None


def _json(status: int, payload: Any) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps(payload, default=str).encode()
    return status, {"content-type": "application/json", "cache-control": "no-store"}, body


def write_response(
    handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes
) -> None:
    handler.send_response(status)
    for k, v in headers.items():
        handler.send_header(k, v)
    handler.send_header("x-content-type-options", "nosniff")
    handler.send_header("referrer-policy", "no-referrer")
    handler.send_header("content-length", str(len(body)))
    try:
        handler.end_headers()
        handler.wfile.write(body)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the browser went elsewhere before the answer came back


def allowed_hosts(host: str, port: int) -> ServedHosts:
    """The Host headers the console answers: localhost, 127.0.0.1 and [::1] with its port, and the
    address `--host` named (a DNS-rebound name is refused). Bound to every address (`0.0.0.0`),
    also this machine's host names and any IP literal with its port."""
    return ServedHosts(port, host)


class ConsoleServer:
    """`orbit ui`: the console alone, on loopback unless `host` says otherwise."""

    def __init__(self, backend: Backend, host: str = "127.0.0.1", port: int = 8780, target: str = "") -> None:
        self.httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.app = ConsoleApp(backend, allowed_hosts(host, self.port), target)
        self.url = f"http://{host}:{self.port}{PREFIX}/"
        self._thread: threading.Thread | None = None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = READ_TIMEOUT_S  # a client silent mid-request is dropped, not waited for

            def _serve(self) -> None:
                raw = self._body()
                if raw is None:
                    return
                write_response(self, *server.app.handle(self.command, self.path, self.headers, raw))

            def _body(self) -> bytes | None:
                """The request body, or None once a framing error was answered (400/413, one line)."""
                problem = framing_problem(self.headers, MAX_CONSOLE_BODY)
                length = 0 if problem else int(self.headers.get("content-length") or 0)
                try:
                    raw = self.rfile.read(length) if length else b""
                except OSError:
                    raw = b""
                if not problem and len(raw) != length:
                    problem = 400, "BAD_FRAMING", f"the body ended after {len(raw)} of {length} bytes"
                if problem is None:
                    return raw
                self.close_connection = True  # an unread body must not be taken for the next request
                status, code, message = problem
                write_response(self, *_json(status, {"error": {"code": code, "message": message}}))
                return None

            do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def start(self) -> ConsoleServer:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="orbit-console", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def mount_on(dev: Any) -> ConsoleApp:
    """Serve the console from `orbit dev`'s server (a `DevServer`) under /console/, calling its API
    in process; `/` redirects there."""
    app = ConsoleApp(dev.call, allowed_hosts("127.0.0.1", dev.port), dev.url)

    def serve(handler: BaseHTTPRequestHandler, method: str, target: str, raw: bytes) -> None:
        write_response(handler, *app.handle(method, target, handler.headers, raw))

    dev.mount(PREFIX, serve, root=True)
    return app


def serve_console(backend: Backend, host: str, port: int, target: str) -> int:
    from orbit.errors import OrbitError

    try:
        server = ConsoleServer(backend, host, port, target)
    except OSError as exc:
        raise OrbitError(
            f"cannot listen on {host}:{port} ({exc.strerror}); pick another with --port"
        ) from None
    print(f"Orbit console: {server.url}  (API: {target})", flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"warning: listening on {host}, reachable beyond this machine; the console has no login",
            file=sys.stderr,
            flush=True,
        )
    try:
        server.httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("Orbit console: stopped", flush=True)
    finally:
        server.httpd.server_close()
    return 0
