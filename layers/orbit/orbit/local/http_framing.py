"""The HTTP framing of `orbit dev`: what reaches the router, and how hostile clients are answered.

Every answer is JSON (`{"error": {"code", "message"}}`), including the ones the
standard library would give as an HTML page (malformed request lines, unknown methods).
"""

from __future__ import annotations

import json
import re
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import urlsplit

from orbit.service.http import MAX_BODY_BYTES

from .origin import ServedHosts, refusal

READ_TIMEOUT_S = 10.0
"""A client silent this long in the middle of a request (headers or body) is disconnected."""
LISTEN_BACKLOG = 128
SERVED_METHODS = ("GET", "POST", "PUT", "DELETE")  # PUT/DELETE reach the router, which answers 405/404


class _Requests(Protocol):
    served: ServedHosts

    def request(self, method: str, target: str, raw: bytes,
                headers: dict[str, str] | None = None) -> tuple[int, Any]: ...


class DevHTTPServer(ThreadingHTTPServer):
    request_queue_size = LISTEN_BACKLOG  # the standard library's 5 resets connections under load
    daemon_threads = True


def handler_for(server: _Requests, read_timeout_s: float = READ_TIMEOUT_S) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = read_timeout_s  # a socket timeout on every read: a slow client costs only its thread
        error_content_type = "application/json"
        default_request_version = "HTTP/1.0"  # so even a malformed request line gets a status line back

        def _serve(self) -> None:
            raw = self._read_body()
            if raw is None:
                return  # answered already (400/413) and the connection is closed
            path = urlsplit(self.path).path
            for prefix, app in getattr(server, "mounts", ()):  # e.g. the web console under /console/
                if path == prefix or path.startswith(prefix.rstrip("/") + "/") and prefix != "/":
                    app(self, self.command, self.path, raw)
                    return
            # Only now, with the request read in full, does the engine lock come into play.
            if path.startswith("/webhooks/"):  # a webhook trigger reads its signature header
                status, payload = server.request(self.command, self.path, raw, dict(self.headers.items()))
            else:
                status, payload = server.request(self.command, self.path, raw)
            self._reply(status, payload)

        def _read_body(self) -> bytes | None:
            if self.headers.get("transfer-encoding"):
                self._refuse(400, "BAD_FRAMING",
                             "chunked request bodies are not supported; send Content-Length")
                return None
            header = self.headers.get("content-length")
            if header is None:
                header = "0"
            if not re.fullmatch(r"[0-9]{1,18}", header.strip()):  # not isdigit(): "²" is a digit
                self._refuse(400, "BAD_FRAMING",
                             f"Content-Length must be a non-negative integer, not {header!r}")
                return None
            length = int(header)
            if length > MAX_BODY_BYTES:
                self._refuse(413, "PAYLOAD_TOO_LARGE",
                             f"request body: {length} bytes; at most {MAX_BODY_BYTES}")
                return None
            # Before the body is read or anything routed: a page of another origin, or a rebound
            # name, is refused on every route, the mounted console's included (local/origin.py).
            refused = refusal(self.command, self.headers, server.served, length > 0)
            if refused is not None:
                self._refuse(refused.status, refused.code, refused.message)
                return None
            try:
                raw = self.rfile.read(length) if length else b""
            except (TimeoutError, socket.timeout, OSError):
                raw = b""
            if len(raw) != length:
                self._refuse(400, "BAD_FRAMING",
                             f"the body ended after {len(raw)} of the {length} bytes Content-Length said")
                return None
            return raw

        def _refuse(self, status: int, code: str, message: str) -> None:
            self.close_connection = True  # the unread rest of the body must not be taken for a request
            self._reply(status, {"error": {"code": code, "message": message}}, close=True)

        def _reply(self, status: int, payload: Any, close: bool = False,
                   headers: dict[str, str] | None = None) -> None:
            body = json.dumps(payload, default=str).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                if close:
                    self.send_header("connection", "close")
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)
            except OSError:
                self.close_connection = True  # the client went away; nothing to tell it

        def _not_allowed(self) -> None:
            self._reply(405, {"error": {"code": "METHOD_NOT_ALLOWED",
                                        "message": f"{self.command} is not supported; use GET or POST"}},
                        headers={"allow": "GET, POST"})

        do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 - BaseHTTPRequestHandler's names
        do_HEAD = do_OPTIONS = do_PATCH = do_TRACE = do_CONNECT = _not_allowed  # noqa: N815

        def handle_one_request(self) -> None:
            try:
                super().handle_one_request()
            except (TimeoutError, socket.timeout):
                self.close_connection = True  # silent in the headers: drop it, nothing was accepted

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            # Malformed request lines and headers, unknown methods: JSON like every other answer.
            if code == 501:  # a method no handler exists for
                self.close_connection = True
                self._not_allowed()
                return
            self.close_connection = True
            self._reply(code, {"error": {"code": "BAD_REQUEST" if code == 400 else f"HTTP_{code}",
                                         "message": message or explain or "malformed request"}}, close=True)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per request would drown the progress output

    return Handler
