"""Durable functions run locally: the handlers in this process, a timer thread for waits,
retries and timeouts, chained invokes as child executions. Carries out the `Followups` of every
commit of `orbit.service.durable.DurableService`.

A Python handler is the function its import path names (`package.module.function`, written by
whoever registers the function, never by a caller); it receives the durable invocation event and
a Lambda-like context, and talks back to Orbit through the SDK's own boto3 client (the
`AWS_ENDPOINT_URL_LAMBDA` of this process). Each invocation runs on a thread of its own: a
handler that blocks holds up only its own execution.
"""

from __future__ import annotations

import heapq
import importlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orbit.core.history.durable import DurableState
from orbit.service.durable import DurableApiError, DurableFunction, DurableService

HANDLER_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")
SYNC_WAIT_S = 900.0  # a synchronous Invoke waits at most as long as a Lambda invocation may run


class LambdaContext:
    """What the SDK reads of a Lambda context."""

    def __init__(self, request_id: str, fn: DurableFunction, arn: str, budget_s: float = 900.0) -> None:
        self.aws_request_id, self.function_name = request_id, fn.name
        self.invoked_function_arn, self.function_version = arn, "$LATEST"
        self.memory_limit_in_mb, self.log_group_name = 128, f"/aws/lambda/{fn.name}"
        self.log_stream_name, self.tenant_id = request_id, None
        self._deadline = time.monotonic() + budget_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def python_handler(path: str) -> Callable[..., Any]:
    if not HANDLER_PATH.match(path):
        raise ValueError(f"durable function handler {path!r} must be a Python import path module.function")
    module, _, attr = path.rpartition(".")
    fn = getattr(importlib.import_module(module), attr, None)
    if not callable(fn):
        raise ValueError(f"durable function handler {path!r}: {module} has no function {attr!r}")
    return fn


NODE_RUNNER = Path(__file__).with_name("durable_node.mjs")
NODE_HANDLER = re.compile(r"^(?P<module>[^:\x00]+\.m?js):(?P<export>[A-Za-z_$][A-Za-z0-9_$]*)$")


class NodeSandboxes:
    """Warm `node` processes (durable_node.mjs), each serving one invocation at a time, as Lambda's
    execution environments do: an idle one is reused, another is started when all are busy, and one
    whose handler exited the process is gone (its invocation crashed, Runtime.ExitError)."""

    def __init__(self) -> None:
        self._idle: list[subprocess.Popen[str]] = []
        self._lock = threading.Lock()

    def _take(self) -> subprocess.Popen[str]:
        with self._lock:
            while self._idle:
                proc = self._idle.pop()
                if proc.poll() is None:
                    return proc
        return subprocess.Popen([shutil.which("node") or "node", str(NODE_RUNNER)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, bufsize=1, env=dict(os.environ))

    def invoke(self, fn: DurableFunction, event: dict[str, Any], rid: str, arn: str,
               on_line: Callable[[str], None] | None = None) -> Any:
        m = NODE_HANDLER.match(fn.handler)
        if m is None:
            raise ValueError(f"durable function handler {fn.handler!r} must be path/to/module.mjs:export")
        proc = self._take()
        assert proc.stdin is not None and proc.stdout is not None
        msg = {"module": m["module"], "export": m["export"], "event": event, "requestId": rid,
               "functionName": fn.name, "functionArn": arn}
        try:
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()
        except OSError:
            raise SystemExit(proc.wait()) from None
        for line in proc.stdout:
            line = line.rstrip("\n")
            if line.startswith("ORBIT_ANSWER "):
                with self._lock:
                    self._idle.append(proc)
                return json.loads(line[len("ORBIT_ANSWER "):])
            if line and on_line is not None:
                on_line(line)  # its log lines (the SDK's logger writes JSON lines naming the execution)
        raise SystemExit(proc.wait())  # the handler ended the process

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for proc in idle:
            proc.kill()


class DurableRuntime:
    def __init__(self, service: DurableService) -> None:
        self.service = service
        self._lock = threading.Condition()
        self._timers: list[tuple[int, str]] = []
        self._armed: set[tuple[int, str]] = set()
        self._children: set[str] = set()
        self._ended: dict[str, DurableState] = {}
        self._stopped = False
        self.output: Callable[[str], None] | None = None  # where a Node handler's log lines go
        self.node = NodeSandboxes()
        self._thread = threading.Thread(target=self._timer_loop, name="durable-timers", daemon=True)
        self._thread.start()

    def close(self) -> None:
        with self._lock:
            self._stopped = True
            self._lock.notify_all()
        self.node.close()

    # -- calls that change an execution ---------------------------------------------------------

    def invoke(
        self,
        function: str,
        payload: str | None,
        sync: bool,
        name: str | None = None,
        parent: dict[str, str] | None = None,
        arn: str | None = None,
    ) -> DurableState:
        s = self.service.start(function, payload, name, parent, arn)
        self.react(s)
        if not sync:
            return s
        return self.wait_ended(s.arn, SYNC_WAIT_S) or self.service.load(s.arn)[0]

    def checkpoint(
        self, arn: str, token: str, client_token: str | None, updates: list[Any]
    ) -> dict[str, Any]:
        s, answer = self.service.checkpoint(arn, token, client_token, updates)
        self.react(s)
        return answer

    def callback(self, callback_id: str, outcome: str, result: str | None, error: Any) -> None:
        self.react(self.service.callback(callback_id, outcome, result, error))

    def stop(self, arn: str, error: Any) -> DurableState:
        s = self.service.stop(arn, error)
        self.react(s)
        return s

    def wait_ended(self, arn: str, timeout_s: float) -> DurableState | None:
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while arn not in self._ended:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._lock.wait(min(left, 1.0))
            return self._ended[arn]

    # -- followups ------------------------------------------------------------------------------

    def react(self, s: DurableState) -> None:
        f = self.service.follow(s)
        if f.ended:
            with self._lock:
                self._ended[s.arn] = s
                self._lock.notify_all()
            if s.parent:
                parent = self.service.child_ended(s.parent["arn"], s.parent["operation"], s)
                self.react(parent)
            return
        if f.due_ms is not None:
            with self._lock:
                if (f.due_ms, s.arn) not in self._armed:
                    self._armed.add((f.due_ms, s.arn))
                    heapq.heappush(self._timers, (f.due_ms, s.arn))
                    self._lock.notify_all()
        for child in f.children:
            with self._lock:
                if child["arn"] in self._children:
                    continue
                self._children.add(child["arn"])
            threading.Thread(target=self._start_child, args=(s.arn, child), daemon=True).start()
        if f.invoke:
            threading.Thread(target=self._invocation, args=(s.arn,), daemon=True).start()

    def _start_child(self, parent_arn: str, child: dict[str, Any]) -> None:
        try:
            self.invoke(
                str(child["function"]),
                child.get("input"),
                False,
                parent={"arn": parent_arn, "operation": child["op"]},
                arn=child["arn"],
            )
        except DurableApiError as e:
            err = {"ErrorType": e.code, "ErrorMessage": str(e)}
            failed = DurableState(status="FAILED", error=err)
            self.react(self.service.child_ended(parent_arn, child["op"], failed))

    def _invocation(self, arn: str) -> None:
        try:
            begun = self.service.begin_invocation(arn)
        except DurableApiError:  # gone, or too busy: its next commit or timer invokes it again
            return
        if begun is None:
            return
        s, event = begun
        rid = s.request_id or ""
        fn = self.service.function(s.function)
        output: Any = None
        crash: dict[str, Any] | None = None
        try:
            if fn.language == "node":
                output = self.node.invoke(fn, event, rid, self.service.function_arn(fn.name), self.output)
            else:
                handler = python_handler(fn.handler)
                output = handler(event, LambdaContext(rid, fn, self.service.function_arn(fn.name)))
            if isinstance(output, (str, bytes)):
                output = json.loads(output)
        except SystemExit as e:  # the runtime process would have died: Lambda's Runtime.ExitError
            crash = {
                "ErrorType": "Runtime.ExitError",
                "ErrorMessage": f"RequestId: {rid} Error: Runtime exited with error: exit status {e.code}",
            }
        except Exception as e:  # noqa: BLE001 - the handler's own failure: recorded on the invocation
            crash = {"ErrorType": type(e).__name__, "ErrorMessage": str(e)[:1000]}
        self.react(self.service.finish_invocation(arn, rid, output, crash))

    def _timer_loop(self) -> None:
        while True:
            with self._lock:
                if self._stopped:
                    return
                now = self.service.clock.now_ms()
                if not self._timers or self._timers[0][0] > now:
                    wait = 1.0 if not self._timers else min(1.0, (self._timers[0][0] - now) / 1000)
                    self._lock.wait(max(wait, 0.001))
                    continue
                due: set[str] = set()
                while self._timers and self._timers[0][0] <= now:
                    entry = heapq.heappop(self._timers)
                    self._armed.discard(entry)
                    due.add(entry[1])
            for arn in due:
                try:
                    self.react(self.service.fire(arn))
                except DurableApiError:
                    pass
