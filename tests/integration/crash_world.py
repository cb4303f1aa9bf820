"""A fresh stack on moto driven like AWS drives it, on a virtual clock, with crashes that kill a container.

`World.run()` plays one workflow end to end through the real handlers (API ->
decider -> worker -> decider ..., the timers function, a signal from the
client). The event source mapping is modelled as AWS runs it: a batch goes to
the handler; records it reported failed, and every record of an invocation that
crashed, stay on the queue and come back after the queue's visibility timeout
(parked hidden, released when the virtual clock passes it). A crash also
throws away the services (the container is gone: the engine's state cache, the
registry cache); each function has its own warm container, so one that did not crash
keeps its (possibly stale) cached states. A client whose API call died
retries it, the same request. The timers function that died runs again at its
next schedule.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aws_resources import _TEMPLATE, Clients, Stack, create_stack
from crash_points import Crash, CrashPoint, Recorder
from harness import HANDLERS, LambdaContext, load_app, load_event, sqs_event
from moto import mock_aws
from orbit import TaskError, worker
from orbit.aws import wiring as aws

CHILD = {"orbit": 1, "name": "crashmx-child", "version": "1",
         "steps": {"double": {"task": "crashmx.double", "input": {"v": "{% input.v %}"}}},
         "output": "{% steps.double.output %}"}
# A task that heartbeats (lease claim, visibility extension) and returns a value above the 32 KB
# inline limit (S3); a fan-out of three tasks (batched sends, batches of several records); a task
# that fails its first attempt (retried on a timer, after longer than the task queue's visibility
# timeout); a signal; then a child workflow.
PARENT = {
    "orbit": 1, "name": "crashmx", "version": "1",
    "steps": {
        "fetch": {"task": "crashmx.fetch", "input": {"n": "{% input.n %}"}},
        "flaky": {"task": "crashmx.flaky", "input": {"v": "{% steps.fetch.output.value %}"},
                  "retry": {"max_attempts": 3, "backoff": "20m"}},
        "each": {"for": "{% [1, 2, 3] %}", "task": "crashmx.double", "input": {"v": "{% item %}"},
                 "after": ["fetch"]},
        "approve": {"wait_for": "approval"},
        "child": {"workflow": "crashmx-child", "after": ["approve"],
                  "input": {"v": "{% steps.flaky.output.v %}"}},
    },
    "output": {"blob": "{% $length(steps.fetch.output.blob) %}", "flaky": "{% steps.flaky.output %}",
               "each": "{% steps.each.output.v2 %}", "by": "{% steps.approve.output.by %}",
               "child": "{% steps.child.output %}"},
    "signals": {"approval": {"schema": {"type": "object", "required": ["by"]}}},
    # search attributes: rows written with the first index row, and one more once approved
    "attributes": {"n": "{% input.n %}", "by": "{% steps.approve.output.by %}"},
}


@dataclass(frozen=True)
class Scenario:
    """What the client does: register `definitions`, start the first one, signal when all is quiet."""

    definitions: tuple[dict[str, Any], ...]
    input: Any
    signal: tuple[str, dict[str, Any]] | None = None  # (name, request body)
    # A code workflow instead: its name, the unit keys it runs, the build deployed at the start.
    code: tuple[str, tuple[str, ...], Any] | None = None
    # Operator actions (`deploy:<build>`, `unpark`; see crash_code.py): `before_signal` when all is
    # quiet, as the signal is sent; `after_signal` as soon as no message is queued or hidden.
    before_signal: tuple[str, ...] = ()
    after_signal: tuple[str, ...] = ()
    # Once the execution has ended: fix the workers (FIXED), then POST /executions/{id}/<op> with
    # this body (op: redrive or fork), and let the system run again.
    recover: tuple[str, dict[str, Any]] | None = None
    # Signals an `on_signal` handler takes, sent (in this order) just before `signal`.
    handled: tuple[tuple[str, dict[str, Any]], ...] = ()
    # Started by signal-with-start (docs/triggers.md) carrying `signal`, instead of a start + a signal.
    with_start: bool = False
    # Started by a trigger (test_aws_crash_triggers.py): these events, as a trigger's rule wraps them,
    # are sent to the trigger queue (each may be the same event again) instead of a start.
    trigger_events: tuple[dict[str, Any], ...] = ()

    @property
    def workflow(self) -> str:
        return self.code[0] if self.code else str(self.definitions[-1]["name"])

    def steps(self, workflow: str) -> list[str]:
        if self.code and workflow == self.code[0]:
            return list(self.code[1])
        return next(list(d["steps"]) for d in self.definitions if d["name"] == workflow)


REALISTIC = Scenario((CHILD, PARENT), {"n": 20},
                     ("approval", {"payload": {"by": "ops"}, "id": "approval-1"}))
EXECUTION = "crash-1"
QUEUES = {k: v["Properties"] for k, v in _TEMPLATE["Resources"].items() if v["Type"] == "AWS::SQS::Queue"}
VISIBLE_LATER_S = 36_000  # a parked record stays hidden (real time) until the virtual clock releases it


class VirtualClock:
    def __init__(self, now_ms: int = 1_767_225_600_000) -> None:  # 2026-01-01T00:00:00Z
        self.now = now_ms

    def now_ms(self) -> int:
        return self.now


# Side effects of the test tasks: runs per (idempotency key, attempt), and the runs of the invocation
# in progress (to know which ones a crash interrupted).
RUNS: Counter[tuple[str, int]] = Counter()
INVOCATION_RUNS: list[tuple[str, int]] = []


def _ran(ctx: worker.TaskContext) -> None:
    RUNS[(ctx.idempotency_key, ctx.attempt)] += 1
    INVOCATION_RUNS.append((ctx.idempotency_key, ctx.attempt))


@worker.task("crashmx.fetch")
def fetch(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    _ran(ctx)
    ctx.heartbeat({"fetched": 0})  # a long task: claims its key, reports `started`, extends visibility
    return {"value": int(input["n"]) * 2, "blob": "x" * 40_000}


@worker.task("crashmx.flaky")
def flaky(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    _ran(ctx)
    if ctx.attempt == 1:
        raise TaskError("FLAKY", "first attempts always fail", retryable=True)
    return {"v": input["v"] + 1, "attempt": ctx.attempt}


@worker.task("crashmx.double")
def double(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    _ran(ctx)
    return {"v2": input["v"] * 2}


FIXED = [False]  # Scenario.recover: a bug fixed between the failure and the redrive


@worker.task("crashmx.fixable")
def fixable(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    """Fails for good (until FIXED) when the input says `broken`."""
    _ran(ctx)
    if input.get("broken") and not FIXED[0]:
        raise TaskError("BUG", "a bug, fixed before the redrive", retryable=False)
    return {"v2": input["v"] * 2}


@dataclass
class Parked:
    due_ms: int
    queue: str
    receipt: str


@dataclass
class CrashRecord:
    handler: str
    call: str
    # (key, attempt) whose function ran in the dead invocation before any result left it: the
    # process died mid-task, so the redelivery runs it again (at-least-once, by design).
    interrupted: list[tuple[str, int]] = field(default_factory=list)


class World:
    def __init__(self, clients: Clients, recorder: Recorder, stack: Stack, scenario: Scenario,
                 crash_at: CrashPoint | None) -> None:
        self.clients, self.recorder, self.stack, self.scenario = clients, recorder, stack, scenario
        self.clock = VirtualClock()
        self.parked: list[Parked] = []
        self.crashes: list[CrashRecord] = []
        self.signalled = False
        self.actions_done = 0
        self.visibility_ms = {q: 1000 * int(p.get("VisibilityTimeout", 30)) for q, p in QUEUES.items()}
        recorder.attach(clients.dynamodb, clients.sqs, clients.s3, clients.secretsmanager)
        recorder.arm(crash_at)
        RUNS.clear()
        FIXED[0] = False
        self.recovered = False
        self.containers: dict[str, aws.Services] = {}  # function -> its warm container's services

    def container(self, function: str | None = None) -> aws.Services:
        """The services of `function`'s warm container (one per function, as Lambda keeps them);
        a new one (cold: nothing cached) when it has none. No function: a fresh one, for checks."""
        from orbit.adapters.dynamodb import DynamoRegistry

        svc = self.containers.get(function) if function else None
        if svc is None:
            svc = aws.build_services(os.environ, self.clock)
            svc.__dict__.update(dynamodb=self.clients.dynamodb, sqs=self.clients.sqs, s3=self.clients.s3,
                                secretsmanager=self.clients.secretsmanager)
            # The registry's pointer cache lives 2 s: on the virtual clock, so a run is the same however
            # slowly the machine runs it (the crash points of two runs must line up).
            svc.__dict__["registry"] = DynamoRegistry(self.clients.dynamodb, self.stack.table, svc.payloads,
                                                      self.clock, monotonic=lambda: self.clock.now / 1000)
            # The worker's grace period is wall-clock time: a loaded machine must not turn a quick task
            # into a long one (a claim, an early flush of the batch's answers) and shift the calls.
            # The long task says so itself, with a heartbeat.
            svc.worker.started_grace_s = 30.0
            if function:
                self.containers[function] = svc
        return svc

    # ------------------------------------------------------------ invocations
    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        rec = self.recorder
        INVOCATION_RUNS.clear()
        # The handlers call orbit.aws.wiring.services(): point it at this function's container.
        aws._cached = self.container(function)
        rec.handler, first = function, len(rec.calls)
        try:
            return load_app(function).handler(event, LambdaContext(function))
        except Crash:
            self.crashes.append(CrashRecord(function, str(rec.fired), self._interrupted(first)))
            del self.containers[function]  # the container died with everything it cached
            raise
        finally:
            rec.handler, rec.dead = None, False
            aws._cached = None

    def _interrupted(self, first: int) -> list[tuple[str, int]]:
        """Runs of the dead invocation whose results never left it: no `result` reached the decision
        queue before the crash (the call that crashed completed only in the `after` variant)."""
        rec = self.recorder
        mine = rec.calls[first:]
        done = mine if rec.crash_at is not None and rec.crash_at.variant == "after" else mine[:-1]
        if any(c.service == "sqs" and c.detail.startswith("DecisionQueue:") and "result" in c.detail
               for c in done):
            return []
        return list(INVOCATION_RUNS)

    def api(self, method: str, path: str, body: Any, expect: int) -> Any:
        """A client call; a 5xx-like death of the API function is retried (same request)."""
        import json

        for _ in range(3):
            event = load_event("api_describe.json")
            event["rawPath"] = path
            event["requestContext"]["http"].update(method=method, path=path)
            event["body"] = json.dumps(body)
            event["queryStringParameters"] = None
            try:
                response = self.invoke("api", event)
            except Crash:
                continue
            got = json.loads(response["body"])
            assert response["statusCode"] == expect, f"{method} {path}: {response['statusCode']} {got}"
            return got
        raise AssertionError(f"{method} {path} crashed three times")

    def pump(self, queue: str) -> int:
        """One poll of the event source mapping."""
        sqs, url = self.clients.sqs, self.stack.queues[queue]
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                  AttributeNames=["All"]).get("Messages", [])
        if not got:
            return 0
        try:
            response = self.invoke(HANDLERS[queue], sqs_event(got, self.stack.arns[queue]))
            failed = {f["itemIdentifier"] for f in (response or {}).get("batchItemFailures", [])}
        except Crash:
            failed = {m["MessageId"] for m in got}
        for m in got:
            if m["MessageId"] in failed:
                sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"],
                                              VisibilityTimeout=VISIBLE_LATER_S)
                due = self.clock.now + self.visibility_ms[queue]
                self.parked.append(Parked(due, queue, m["ReceiptHandle"]))
            else:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        return len(got)

    def release_due(self) -> int:
        due = [p for p in self.parked if p.due_ms <= self.clock.now]
        for p in due:
            self.clients.sqs.change_message_visibility(QueueUrl=self.stack.queues[p.queue],
                                                       ReceiptHandle=p.receipt, VisibilityTimeout=0)
            self.parked.remove(p)
        return len(due)

    def release_trigger_checks(self, before: int | None) -> bool:
        """The earliest delayed message on the trigger queue (a buffer's check), if it comes due before
        anything else (`before`: the next parked message or timer), becomes visible, the virtual clock
        moved to its time: moto delays on the wall clock."""
        import json
        import sys

        name = self.stack.queues["TriggerQueue"].rsplit("/", 1)[1]
        models = sys.modules["moto.sqs.models"]
        delayed = [m for regions in models.sqs_backends.values() for backend in regions.values()
                   for q in backend.queues.values() if q.name == name for m in q._messages if m.delayed]
        if not delayed:
            return False
        first = min(delayed, key=lambda m: json.loads(m.body).get("orbit_buffer", {}).get("at", 0))
        at = int(json.loads(first.body).get("orbit_buffer", {}).get("at") or 0)
        if before is not None and at > before:
            return False
        self.clock.now = max(self.clock.now, at)
        first.delayed_until = 0.0
        return True

    def fire_timers(self) -> None:
        try:
            self.invoke("timers", load_event("timers_schedule.json"))
        except Crash:
            self.clock.now += 60_000  # the schedule runs it again a minute later

    def act(self, action: str) -> None:
        """An operator action: deploy a code build (no AWS call: the functions' code changes),
        `orbit unpark`, `orbit pause` / `unpause` or an update through the API."""
        from crash_code import deploy

        self.actions_done += 1
        if action.startswith("deploy:"):
            deploy(action.removeprefix("deploy:"))
        elif action == "unpark":
            self.api("POST", f"/executions/{EXECUTION}/unpark", {}, 202)
        elif action in ("pause", "unpause"):  # test_aws_crash_pause.py
            self.api("POST", f"/executions/{EXECUTION}/{action}", {"reason": "crash matrix"}, 202)
        elif action.startswith("update:"):  # crash_updates.py
            from crash_updates import send_update

            send_update(self, action.removeprefix("update:"))
        else:
            raise AssertionError(f"unknown action {action!r}")

    # ---------------------------------------------------------------- the run
    def run(self, max_rounds: int = 400) -> None:
        """Register, start, then let the system run until nothing is left to do (and with
        `Scenario.recover`, fix the workers, redrive or fork, and run until nothing is left again)."""
        sc = self.scenario
        if sc.code:
            from crash_code import deploy

            deploy(sc.code[2])
        for definition in sc.definitions:
            self.api("POST", "/definitions", definition, 201)
        if sc.trigger_events:  # test_aws_crash_triggers.py: the driver's sends are not crash points
            import json

            for event in sc.trigger_events:
                self.clients.sqs.send_message(QueueUrl=self.stack.queues["TriggerQueue"],
                                              MessageBody=json.dumps(event))
        elif sc.with_start and sc.signal is not None:  # test_aws_crash_signal_start.py
            name, body = sc.signal
            self.api("POST", f"/executions/{EXECUTION}/signal-with-start",
                     {"workflow": sc.workflow, "signal": name, "payload": body.get("payload"),
                      "signal_id": body.get("id"), "input": sc.input}, 202)
            self.signalled = True
        else:
            start = {"workflow": sc.workflow, "id": EXECUTION, "input": sc.input}
            self.api("POST", "/executions", start, 201)
        self.settle(max_rounds)
        if sc.recover is not None:
            FIXED[0] = True
            op, body = sc.recover
            self.api("POST", f"/executions/{EXECUTION}/{op}", body, 201 if op == "fork" else 200)
            self.recovered = True
            self.settle(max_rounds)

    def settle(self, max_rounds: int = 400) -> None:
        skew_ms: int = load_app("timers").SKEW_MS
        sc = self.scenario
        for _ in range(max_rounds):
            queues = ("TriggerQueue",) * bool(sc.trigger_events) + ("DecisionQueue", "DefaultTaskQueue")
            if sum(self.pump(q) for q in queues) or self.release_due():
                continue
            fire = self.container().table_timers.next_fire_ms()
            if fire is not None and fire + skew_ms <= self.clock.now:
                self.fire_timers()
                continue
            if self.signalled and not self.parked and self.actions_done < len(sc.after_signal):
                self.act(sc.after_signal[self.actions_done])  # nothing queued or hidden: act now
                continue
            later = [p.due_ms for p in self.parked] + ([fire + skew_ms] if fire is not None else [])
            if sc.trigger_events and self.release_trigger_checks(min(later, default=None)):
                continue  # a trigger buffer's delayed check came due (test_aws_crash_trigger_batch.py)
            if later:
                self.clock.now = max(self.clock.now, min(later))
                continue
            if not self.signalled and self.actions_done < len(sc.before_signal):
                self.act(sc.before_signal[self.actions_done])
                continue
            if sc.signal is not None and not self.signalled:  # only the signal is missing: send it
                for name, body in sc.handled:
                    self.api("POST", f"/executions/{EXECUTION}/signals/{name}", body, 202)
                self.api("POST", f"/executions/{EXECUTION}/signals/{sc.signal[0]}", sc.signal[1], 202)
                self.signalled, self.actions_done = True, 0
                continue
            return
        raise AssertionError(f"the system did not settle in {max_rounds} rounds")


@contextmanager
def fresh_world(clients: Clients, recorder: Recorder, scenario: Scenario,
                crash_at: CrashPoint | None) -> Iterator[World]:
    """A new stack (own moto state) with the functions' environment; restored afterwards."""
    saved = dict(os.environ)
    with mock_aws():
        stack = create_stack(clients.dynamodb, clients.sqs, clients.s3)
        # the archive on: its write at each execution's end is one of the crash points
        os.environ.update({**stack.env(), "ORBIT_TIMERS": "table", "ORBIT_ARCHIVE_DAYS": "365"})
        try:
            yield World(clients, recorder, stack, scenario, crash_at)
        finally:
            if scenario.code:
                from crash_code import restore

                restore()
            recorder.arm(None)
            aws.reset()
            os.environ.clear()
            os.environ.update(saved)
