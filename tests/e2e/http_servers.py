"""Loopback HTTP servers for the e2e tests: a quiet handler base, a server on a free port that is
always shut down, and the echo server the HTTP-step tests call."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Quiet(BaseHTTPRequestHandler):
    """A handler that logs nothing, with helpers to read the body and send a JSON answer."""

    def read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """`http://127.0.0.1:<port>` of a threaded server running `handler`, shut down on exit."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def echo(received: list[Any], wrap: Callable[[Any], Any] = lambda body: body) -> type[Quiet]:
    """A handler that records each POSTed JSON body in `received` and answers `wrap(body)`."""

    class Echo(Quiet):
        def do_POST(self) -> None:  # the stdlib's name
            body = json.loads(self.read_body())
            received.append(body)
            self.reply(200, json.dumps(wrap(body)).encode())

    return Echo


@contextmanager
def dev_serving(server: Any) -> Iterator[Any]:
    """An `orbit dev` server (orbit.local.devserver.DevServer) answering on its own thread while
    the block runs; shut down and joined after it."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        thread.join(timeout=10)
