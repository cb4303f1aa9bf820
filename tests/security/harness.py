"""The security suite's two ways of holding a hostile case (issue 25, "How we will know it works").

- `in_child(body, why)`: the case runs in a fresh interpreter against the handlers (the real Engine
  behind `handle_request`, as the API function runs it, over the memory adapters; a decider with an
  inline runner), with a time limit. A regression that loops or blocks fails its test with `why`
  instead of hanging the suite, and a crash of the interpreter (a recursion in C, memory) is the
  child's, not pytest's.
- `DevProcess`: a real `orbit dev` in a child process, serving `fixtures/sec_plain.yaml` with the
  inline tasks of `fixtures/sec_workers.py` (the only code it may run). Every request has a time
  limit, and after each hostile request the server must still answer a plain one.

Time limits are generous for a loaded 2-core machine: what is asserted is the answer (a clear,
one-line error), and the limit only turns "never answers" into a failure.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
CHILD_TIMEOUT_S = 30.0
REQUEST_TIMEOUT_S = 15.0

PRELUDE = """
import json, sys
from orbit.service.http import handle_request
from orbit.service.inline import InlineRunner
from orbit.testing.simulator import Simulator
from orbit.worker.inline import InlineTasks

def emit(value):
    print("RESULT " + json.dumps(value, default=repr))

def definition(name, steps, **extra):
    return {"orbit": 1, "name": name, "version": "1", "steps": steps, **extra}

def world():
    '''The engine the API and the decider run, on memory adapters: it serves the inline task
    `sec.echo` (what InlineTaskModules registered) and runs inline steps itself.'''
    sim = Simulator(start_ms=1_767_225_600_000)
    sim.engine.inline = InlineRunner(InlineTasks((), tasks={"sec.echo": lambda value, ctx: value}), "sec")
    return sim

def call(sim, method, path, body=None, query=None):
    status, answer = handle_request(sim.engine, method, path, body, query)
    return [status, answer]
"""


def in_child(body: str, why: str, timeout_s: float = CHILD_TIMEOUT_S, setup: str = "") -> Any:
    """Run PRELUDE, `setup` and `body` in a fresh interpreter; returns what it passed to `emit`."""
    code = PRELUDE + textwrap.dedent(setup) + textwrap.dedent(body)
    try:
        done = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True,
                              timeout=timeout_s, cwd=ROOT)  # on stdin: a hostile text may be megabytes
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer within {timeout_s:g} s: {why}")
    assert done.returncode == 0, f"the child died ({done.returncode}): {done.stderr[-2000:]}"
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert lines, f"the child emitted nothing: {done.stdout[-1000:]} {done.stderr[-1000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def one_line_error(body: Any) -> str:
    """The error's message, checked to be one line that names something (issue 25: every refusal
    is one clear line naming what and where)."""
    assert isinstance(body, dict) and "error" in body, body
    message = body["error"]["message"]
    assert isinstance(message, str) and message and "\n" not in message and "Traceback" not in message, body
    return message


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DevProcess:
    """`orbit dev fixtures/sec_plain.yaml --workers fixtures/sec_workers.py` on a free port."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.host = f"127.0.0.1:{self.port}"
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "orbit.cli.main", "dev", str(FIXTURES / "sec_plain.yaml"),
             "--workers", str(FIXTURES / "sec_workers.py"), "--port", str(self.port)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self._ready = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()  # a full pipe would block the server
        if not self._ready.wait(60):
            self.stop()
            pytest.fail("orbit dev did not start within 60 s: " + "".join(self.lines[-20:]))

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if f"http://{self.host}" in line:
                self._ready.set()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=20)

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
                raw: bytes | None = None, timeout: float = REQUEST_TIMEOUT_S) -> tuple[int, Any]:
        """One request with a time limit: (status, the JSON answer or its text). `body` is sent as
        JSON with `Content-Type: application/json` unless `raw` or `headers` say otherwise."""
        assert self.proc.poll() is None, "orbit dev exited: " + "".join(self.lines[-20:])
        sent = {"Host": self.host}
        data = raw
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in sent.items():
                conn.putheader(name, value)
            if data is not None:
                conn.putheader("Content-Length", str(len(data)))
            conn.endheaders()
            if data is not None:
                try:
                    conn.send(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # refused on its headers (413): the server answered and closed before the body
            resp = conn.getresponse()
            text = resp.read().decode("utf-8", "replace")
        except (TimeoutError, socket.timeout):
            pytest.fail(f"orbit dev gave no answer within {timeout:g} s to {method} {path}")
        finally:
            conn.close()
        try:
            return resp.status, json.loads(text or "null")
        except ValueError:
            return resp.status, text

    def still_serves(self, eid: str) -> None:
        """A plain execution started after the hostile request completes: nothing was held or lost."""
        status, body = self.request("POST", "/executions", {"workflow": "sec-plain", "id": eid,
                                                            "input": {"n": 1}})
        assert status == 201, body
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        while True:
            status, body = self.request("GET", f"/executions/{eid}")
            if body.get("status") == "COMPLETED":
                assert body["output"] == 2, body
                return
            assert time.monotonic() < deadline, f"the plain execution did not complete: {body}"
            time.sleep(0.05)
