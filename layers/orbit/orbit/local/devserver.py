"""`orbit dev`: the local stack kept up, with the HTTP API served on loopback.

Requests are routed by `orbit.service.http.handle_request`, the same router the API
Lambda uses. A background thread pumps the queues and fires the schedule in
real time. Handlers share one engine in this process, so the pump and the
request threads take turns (a lock): on AWS they would be separate Lambdas.

It behaves like a real HTTP server toward hostile clients (see docs/security.md):
request bodies over `orbit.service.http.MAX_BODY_BYTES` are a 413 before they are read,
a bad or missing `Content-Length` (or a chunked body) is a 400, unsupported
methods get a JSON 405, a client that stops sending mid-request is dropped after
`READ_TIMEOUT_S`, the listen backlog is 128, and the engine lock is taken only
once the whole request has been read, never across a read.

The workflow author's code run inside a request (a code workflow's query handler, an update's
validator, with the replay before them) runs on a thread of its own while the request lets go of
the lock, bounded by `user_code_timeout_s` (orbit/local/bounded.py): a handler that loops is
answered with a USER_CODE_TIMEOUT error and holds up no other request. An inline step or a task
that raises SystemExit fails its invocation, as a Lambda's would, and the pump goes on.
Invocations run beside the pump, each on a thread of its own (orbit/local/dev_invocations.py): a
worker's without the lock (task code does not use the engine), a decider's under it but for the
time an inline step's task runs. So while a task sleeps, timers fire (its step's `timeout` is
recorded at the deadline), other executions are decided and requests answered. Workflow code that
loops in a decision is stopped by the stall guard (orbit/service/stall.py) on these threads too.

Local-only route: `POST /_local/advance {"seconds": N}` moves virtual time
forward (and runs what became due), for trying out long sleeps and timeouts
(`orbit advance DURATION` sends it).

It prints one line when an execution started through its API starts, and one
when it ends, on stdout; handlers' logs go to stderr. Another app can be
mounted under a path prefix (`mount`): `orbit dev` mounts the web console at
`/console/` (`orbit.console.mount_on`), calling the same router in process.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from orbit.errors import OrbitError

from .bounded import USER_CODE_TIMEOUT_S, EngineLock, run_bounded
from .http_framing import READ_TIMEOUT_S, DevHTTPServer, handler_for
from .origin import ServedHosts
from .stack import LocalStack
from .text import cut
from .timeline import fmt_duration

MAX_ADVANCE_S = 100 * 365 * 86_400  # a hundred years of virtual time in one request

# an app mounted on the dev server: (handler, method, target, raw body) -> writes the response
Mounted = Callable[[BaseHTTPRequestHandler, str, str, bytes], None]


class DevServer:
    def __init__(self, stack: LocalStack, port: int = 8765, read_timeout_s: float = READ_TIMEOUT_S,
                 user_code_timeout_s: float = USER_CODE_TIMEOUT_S) -> None:
        self.stack = stack
        self.read_timeout_s = read_timeout_s
        self.user_code_timeout_s = user_code_timeout_s
        self.lock = EngineLock()
        self.stopping = threading.Event()
        self.httpd = DevHTTPServer(("127.0.0.1", port), self._handler_class())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.served = ServedHosts(self.port, "127.0.0.1")  # the Host values answered (local/origin.py)
        self.mounts: list[tuple[str, Mounted]] = []
        self._pump = threading.Thread(target=self._pump_loop, name="orbit-pump", daemon=True)
        self.out = stack.cloud.console
        self.running: dict[str, str] = {}  # executions started here and not yet ended -> workflow
        self._settled = threading.Event()  # an invocation beside the pump ended: look for ended runs
        from .dev_lines import StartLines

        self.lines = StartLines(stack, self.running, self.say)  # forks, redrives, schedules' runs
        if stack.cloud.emulator.mode == "server":  # moto behind HTTP takes concurrent clients
            from .dev_invocations import Invocations, attach, cap_of

            self.invocations = Invocations(lambda p: cap_of(p, is_worker), self._invoked)
            attach(stack.cloud.pollers, self.invocations, is_worker, self._locked)

    def _locked(self, call: Callable[[], Any]) -> Any:
        """A decider's invocation, on its own thread: under the engine lock, let go of while an
        inline step's task runs (orbit.service.inline.while_elsewhere)."""
        from orbit.service.inline import releasing

        with self.lock, releasing(self.lock.released):
            return call()

    def _invoked(self, poller: Any, result: Any) -> None:
        self.stack.cloud._note(poller, result)  # errors and the poll hook, as for the pump's own
        self._settled.set()

    def say(self, line: str) -> None:
        # one line, control characters escaped: names, ids and error messages are caller text
        print(cut(line, None), file=self.out, flush=True)

    def _report_ended(self) -> None:
        """One line for each execution started here that has ended since the last look."""
        from .stack import TERMINAL

        for eid, workflow in list(self.running.items()):
            try:
                desc = self.stack.describe(eid)
            except OrbitError:
                continue
            if desc["status"] in TERMINAL:
                del self.running[eid]
                took = (desc.get("finished_at_ms") or 0) - (desc.get("created_at_ms") or 0)
                err = desc.get("error") or {}
                why = f"  {err.get('code')}: {err.get('message')}" if err else ""
                took_text = fmt_duration(max(took, 0))
                self.say(f"ended   {workflow} {eid}: {desc['status']} after {took_text}{why}")

    def _pump_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                with self.lock:
                    handled = self.stack.cloud.pump_once()
                    settled = self._settled.is_set()
                    self._settled.clear()
                    if handled or settled:
                        self.lines.look()
                    if (handled or settled) and self.running:
                        self._report_ended()
            except BaseException as exc:  # noqa: BLE001 - keep serving, SystemExit from user code too
                print(cut(f"orbit dev: pump error: {exc!r}", None), file=sys.stderr, flush=True)
                handled = 0
            if not handled:
                self.stopping.wait(0.05)

    def mount(self, prefix: str, app: Mounted, root: bool = False) -> None:
        """Serve `app(handler, method, target, raw)` for paths under `prefix` (and `/` with `root`)."""
        self.mounts.append((prefix, app))
        if root:
            self.mounts.append(("/", app))

    def call(self, method: str, target: str, body: Any) -> tuple[int, Any]:
        """The API in process, for a mounted app: (status, JSON answer)."""
        return self.request(method, target, b"" if body is None else json.dumps(body).encode())

    def request(self, method: str, target: str, raw: bytes,
                headers: dict[str, str] | None = None) -> tuple[int, Any]:
        from orbit.service.inline import releasing
        from orbit.service.user_code import runner

        try:  # query handlers and update validators: bounded, lock let go; inline tasks: lock let go
            with runner(self._user_code), releasing(self.lock.released):
                return self._request(method, target, raw, headers)
        except (SystemExit, KeyboardInterrupt) as exc:  # from user code run in the request (a start
            # decides at once, inline steps included): that request fails, the server goes on
            return 500, {"error": {"code": "USER_CODE_ERROR", "message": cut(
                f"{method} {urlsplit(target).path} stopped: code it ran raised {type(exc).__name__}: {exc}",
                None)}}

    def _user_code(self, fn: Callable[[], Any], what: str) -> Any:
        with self.lock.released():
            return run_bounded(fn, self.user_code_timeout_s, what)

    def _request(self, method: str, target: str, raw: bytes,
                 headers: dict[str, str] | None = None) -> tuple[int, Any]:
        from orbit.service.http import handle_request

        parts = urlsplit(target)
        if parts.path == "/_local/advance" and method == "POST":
            try:
                seconds = float(json.loads(raw or b"{}").get("seconds", 0))
            except (ValueError, TypeError, AttributeError, RecursionError):
                return 400, {"error": {"code": "VALIDATION_ERROR", "message": 'body: {"seconds": number}'}}
            if not 0 <= seconds <= MAX_ADVANCE_S:  # also refuses NaN: the clock only moves forward
                return 400, {"error": {"code": "VALIDATION_ERROR",
                                       "message": f"seconds must be between 0 and 100 years, not {seconds}"}}
            with self.lock:
                self.stack.advance(seconds)
                self.lines.look(force=True)
                if self.running:
                    self._report_ended()
            return 200, {"now_ms": self.stack.now_ms()}
        if parts.path == "/_local/events" and method == "POST":  # `orbit events put` (docs/triggers.md)
            from .trigger_sources import put_local_event

            with self.lock:
                return put_local_event(self.stack, raw)
        from .update_wait import is_update, serve_update

        if is_update(method, parts.path):  # waits between pump turns, not holding the lock
            def ask(body: bytes) -> tuple[int, Any]:
                with self.lock:
                    return handle_request(self.stack.engine, method, parts.path, body,
                                          dict(parse_qsl(parts.query)))
            return serve_update(ask, raw)
        with self.lock:
            status, body = handle_request(
                self.stack.engine, method, parts.path, raw or None, dict(parse_qsl(parts.query)), headers
            )
            if method == "POST" and parts.path.rstrip("/") == "/executions" and status in (200, 201):
                self._report_started(raw, body)
            self.lines.answered(method, parts.path, status, body)
            if method == "POST" and parts.path.rstrip("/") == "/definitions" and status == 201:
                for line in unserved_lines([self.stack.engine.registry.get(body["name"], body["version"])]):
                    self.say(line)  # `orbit register` against orbit dev: said where its steps will wait
            return status, body

    def _report_started(self, raw: bytes, body: Any) -> None:
        eid = body.get("id") if isinstance(body, dict) else None
        if not isinstance(eid, str) or eid in self.running:
            return
        try:
            workflow = str(json.loads(raw).get("workflow"))
        except (ValueError, AttributeError):
            workflow = "?"
        self.lines.started(eid, workflow)
        self._report_ended()  # refused input, for one, ends it at once

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return handler_for(self, self.read_timeout_s)

    def serve_forever(self) -> None:
        self._pump.start()
        try:
            self.httpd.serve_forever(poll_interval=0.2)
        finally:
            self.stopping.set()
            self._pump.join(timeout=5)
            self.httpd.server_close()


def unserved_lines(definitions: list[Any]) -> list[str]:
    """One line per task the definitions use that no `@orbit.worker.task` of this process serves."""
    from orbit.core.runtime.dsl.interpreter import default_queue
    from orbit.worker.tasks import registered_tasks

    served = registered_tasks()
    missing: dict[str, tuple[str, str]] = {}  # task -> (first place that uses it, its queue)
    for d in definitions:
        for step in getattr(d, "steps", {}).values():  # a code workflow's tasks are known only when it runs
            for body, where in ((step, step.name), (step.compensate, f"{step.name}.compensate")):
                if body is None or body.kind != "task" or not body.task or body.inline:
                    continue
                if body.task not in served:
                    queue = body.queue or default_queue(body.task)
                    missing.setdefault(body.task, (f"{d.name}: steps.{where}", queue))
    return [f"no worker serves task {task} ({where}): its steps wait in queue {queue} until one does "
            f"(pass --workers FILE.py with @task({task!r}))"
            for task, (where, queue) in sorted(missing.items())]


def is_worker(poller: Any) -> bool:
    """A poller of a task queue: every queue but the decision queue and the durable functions'
    answer queue, which the decider drains, and the queues the triggers function reads (it starts
    executions: docs/triggers.md)."""
    if poller.mapping.function.logical_id == "TriggersFunction":
        return False
    if poller.mapping.queue.arn == poller.mapping.function.env.get("ORBIT_DURABLE_ANSWER_QUEUE_ARN"):
        return False
    return bool(poller.mapping.queue.url != poller.mapping.function.env.get("ORBIT_DECISION_QUEUE_URL"))


def serve(
    port: int,
    template: str | None,
    workers: list[str],
    definitions: list[str],
    parameters: dict[str, str] | None = None,
    on_start: list[Callable[[DevServer], None]] | None = None,
    apps: list[str] | None = None,
) -> int:
    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    with LocalStack(
        template=template, mode="server", workers=workers, parameters=parameters, logs_to_stderr=True,
        app=list(apps) if apps else None,
    ) as stack:
        names = [stack.register(Path(d)) for d in definitions]
        app_lines = []
        for dep in stack.cloud.app_deployments:  # registered by their Custom::OrbitDefinition resources
            ids = [stack.cloud.app_resources[lid]["PhysicalResourceId"] for lid, _, _ in dep.custom]
            workers_of = ", ".join(sorted(m.function.logical_id for m in dep.mappings)) or "none"
            app_lines.append(f"app stack {dep.stack_name}: {', '.join(ids) or 'no resources'}; "
                             f"workers: {workers_of}")
            names += [stack.cloud.app_resources[lid]["Data"]["Name"] for lid, kind, _ in dep.custom
                      if kind == "Custom::OrbitDefinition"]
        try:
            dev = DevServer(stack, port)
        except OSError as exc:
            raise OrbitError(
                f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); pick another with --port"
            ) from None
        dev.say(f"Orbit dev: API on {dev.url}  (AWS emulator on {stack.endpoint_url})")
        for announce in on_start or []:
            announce(dev)
        for line in app_lines:
            dev.say(line)
        if names:
            dev.say(f"registered: {', '.join(names)}")
        for line in unserved_lines([stack.engine.registry.get(n) for n in names]):
            dev.say(line)  # its steps would wait in their queue: say so before anyone starts one
        if parameters:  # say what differs from the template's defaults, e.g. the HTTP task enabled
            shown = ", ".join(f"{k}={v}" for k, v in sorted(parameters.items()))
            dev.say(f"template parameters: {shown}")
        dev.say(f"try: ORBIT_URL={dev.url} orbit list    (Ctrl-C to stop)")
        try:
            dev.serve_forever()
        except KeyboardInterrupt:
            dev.say("Orbit dev: stopped")
    return 0
