"""`orbit dev`: the local stack kept up, with the HTTP API served on loopback.

Requests are routed by `orbit.service.http.handle_request`, the same router the API
Lambda uses. A background thread pumps the queues and fires the schedule in
real time. Handlers share one engine in this process, so the pump and the
request threads take turns (a lock): on AWS they would be separate Lambdas.

Local-only route: `POST /_local/advance {"seconds": N}` moves virtual time
forward (and runs what became due), for trying out long sleeps and timeouts.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from orbit.errors import OrbitError

from .stack import LocalStack


class DevServer:
    def __init__(self, stack: LocalStack, port: int = 8765) -> None:
        self.stack = stack
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._pump = threading.Thread(target=self._pump_loop, name="orbit-pump", daemon=True)

    def _pump_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                with self.lock:
                    handled = self.stack.cloud.pump_once()
            except Exception as exc:  # noqa: BLE001 - keep serving; the error is printed
                print(f"orbit dev: pump error: {exc!r}", file=sys.stderr, flush=True)
                handled = 0
            if not handled:
                self.stopping.wait(0.05)

    def request(self, method: str, target: str, raw: bytes) -> tuple[int, Any]:
        from orbit.service.http import handle_request

        parts = urlsplit(target)
        if parts.path == "/_local/advance" and method == "POST":
            try:
                seconds = float(json.loads(raw or b"{}").get("seconds", 0))
            except (ValueError, AttributeError):
                return 400, {"error": {"code": "VALIDATION_ERROR", "message": 'body: {"seconds": number}'}}
            with self.lock:
                self.stack.advance(seconds)
            return 200, {"now_ms": self.stack.now_ms()}
        with self.lock:
            return handle_request(
                self.stack.engine, method, parts.path, raw or None, dict(parse_qsl(parts.query))
            )

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, payload = server.request(self.command, self.path, raw)
                body = json.dumps(payload, default=str).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 - BaseHTTPRequestHandler's names

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # one line per request would drown the progress output

        return Handler

    def serve_forever(self) -> None:
        self._pump.start()
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self.stopping.set()
            self._pump.join(timeout=5)
            self.httpd.server_close()


def serve(
    port: int,
    template: str | None,
    workers: list[str],
    definitions: list[str],
    parameters: dict[str, str] | None = None,
) -> int:
    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    with LocalStack(template=template, mode="server", workers=workers, parameters=parameters) as stack:
        names = [stack.register(Path(d)) for d in definitions]
        try:
            dev = DevServer(stack, port)
        except OSError as exc:
            raise OrbitError(
                f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); pick another with --port"
            ) from None
        print(f"Orbit dev: API on {dev.url}  (AWS emulator on {stack.endpoint_url})", flush=True)
        if names:
            print(f"registered: {', '.join(names)}", flush=True)
        if parameters:  # say what differs from the template's defaults, e.g. the HTTP task enabled
            shown = ", ".join(f"{k}={v}" for k, v in sorted(parameters.items()))
            print(f"template parameters: {shown}", flush=True)
        print(f"try: ORBIT_URL={dev.url} orbit list    (Ctrl-C to stop)", flush=True)
        try:
            dev.serve_forever()
        except KeyboardInterrupt:
            print("Orbit dev: stopped", flush=True)
    return 0
