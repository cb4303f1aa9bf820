"""The worker SDK's core: `@task(name)` functions, a Lambda handler for a worker queue, a long-polling runner.

A task message is a `DispatchTask` effect (`kind: dispatch_task`). For each one
the worker:
1. reads the step's idempotency key (adapters/dynamodb/idempotency.py). A key
   already COMPLETED answers with the stored result without running the
   function again: a redelivered message, or a dispatch re-sent from the
   commit log after a decider crash, costs no second side effect. A key
   claimed by a live worker fails the record so SQS redelivers it later. A
   task still running after `started_grace_s` claims the key with a lease;
2. reports `started` (which records StepDispatched; the session id is new for
   every delivery, so the decider can tell a redelivery after a lost worker).
   A task that ends within `started_grace_s` sends `started` together with its
   result, in one SQS request that usually lands in one decider batch (one
   commit instead of two); a longer task sends it when the grace runs out. A
   dispatch with `heartbeat_timeout_ms` sends `started` (and claims the lease)
   before the function runs: the engine's heartbeat clock starts there, and the
   function must call `ctx.heartbeat` within each heartbeat timeout (see
   orbit/worker_heartbeat.py for the throttle);
3. runs the function with a `TaskContext`, extending the message's visibility
   and the claim's lease in the background while it runs;
4. stores a success, or the failure with its attempt number (a redelivery of
   that attempt answers the stored error instead of running again; the next
   attempt runs), and reports a `result` echoing the dispatch token, so the
   decider can tell a current answer from a stale one.
`raise orbit.TaskError(code, message, retryable=False)` fails the step for good;
any other exception is reported as a retryable `TASK_FAILED`.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from orbit.core.history.effects import DispatchTask, effect_from_dict
from orbit.core.history.events import TaskError
from orbit.core.tracing import BODY_KEY, PassThrough
from orbit.errors import OrbitError, ValidationError
from orbit.worker.heartbeat import HeartbeatThrottle

TaskFunction = Callable[[Any, "TaskContext"], Any]
log = logging.getLogger("orbit.worker")

_TASKS: dict[str, TaskFunction] = {}
_NO_DEDUPE: set[str] = set()
_TASKS_LOCK = threading.Lock()


def task(name: str, *, dedupe: bool = True) -> Callable[[TaskFunction], TaskFunction]:
    """Register `fn(input, ctx) -> output` as the worker for task `name` (process-wide).

    `dedupe=False` is for tasks that are idempotent by nature (a read, an upsert
    keyed by the idempotency key): no idempotency record is read or written,
    which saves about a third of a step's table cost; a redelivery runs it again.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("task name must be a non-empty string", "task")

    def register(fn: TaskFunction) -> TaskFunction:
        if not callable(fn):
            raise ValidationError(f"@task({name!r}) needs a function (input, ctx) -> output", "task")
        with _TASKS_LOCK:
            _TASKS[name] = fn
            (_NO_DEDUPE.discard if dedupe else _NO_DEDUPE.add)(name)
        return fn

    return register


def registered_tasks() -> dict[str, TaskFunction]:
    with _TASKS_LOCK:
        return dict(_TASKS)


class TaskBusy(OrbitError):
    """Another live worker holds this step's idempotency key; the message is retried later."""


@dataclass
class TaskContext:
    execution_id: str
    step: str
    attempt: int
    idempotency_key: str
    token: str
    deadline_ms: int | None = None
    _beat: Callable[[Any], bool] | None = field(default=None, repr=False)
    _cancelled: bool = field(default=False, repr=False)
    # The step's heartbeat_timeout: call `heartbeat` more often than this, or the attempt fails
    # with HEARTBEAT_TIMEOUT. Nothing heartbeats for the task on its own.
    heartbeat_timeout_ms: int | None = None

    def heartbeat(self, details: Any = None) -> None:
        """Tell the engine the task is alive (a StepHeartbeat) and learn whether it was cancelled.

        Throttled (orbit/worker_heartbeat.py): call it as often as convenient."""
        if self._beat is not None and self._beat(details):
            self._cancelled = True

    @property
    def cancelled(self) -> bool:
        """True once the engine withdrew this attempt (seen at the latest heartbeat); stop early."""
        return self._cancelled


class _KeepAlive:
    """While a task runs, extend its message visibility and its claim every `period_s`."""

    def __init__(self, period_s: float, extend: Callable[[], None]) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(period_s, extend), daemon=True)

    def _loop(self, period_s: float, extend: Callable[[], None]) -> None:
        while not self._stop.wait(period_s):
            try:
                extend()
            except Exception:  # a failed extension must never kill the task; the next one may work
                log.warning("could not extend the task's visibility/lease", exc_info=True)

    def __enter__(self) -> _KeepAlive:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class Worker:
    """Processes task messages with ports: `queues` (send_decision), `idempotency` (or None), `clock`."""

    def __init__(self, queues: Any, idempotency: Any, clock: Any,
                 tasks: Mapping[str, TaskFunction] | None = None, worker_id: str | None = None,
                 lease_ms: int = 300_000, heartbeat_interval_s: float = 10.0,
                 started_grace_s: float = 1.0, tracer: Any = None, references: Any = None) -> None:
        self.queues = queues
        self.idempotency = idempotency
        self.clock = clock
        self._tasks = tasks
        # The Lambda log stream names one execution environment: a good worker identity.
        stream = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "worker")
        self.worker_id = worker_id or f"{stream}/{os.getpid()}"
        self.lease_ms = lease_ms
        self.heartbeat_interval_s = heartbeat_interval_s
        self.started_grace_s = started_grace_s
        self._local = threading.local()  # the calling thread's held answers, inside `batch()`
        self.tracer = tracer or PassThrough()
        # Holds a result's S3 objects for its execution until the decider records them (retention).
        self.references = references
        self._traces: dict[str, str] = {}  # dispatch token -> header its answers carry (any thread)

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Hold the answers of quick tasks and send them in one request when the batch ends.

        The Lambda handler wraps each SQS batch in it: ten quick tasks cost one
        SendMessageBatch instead of ten requests. A task that runs long flushes
        what is held first, so a slow record never delays the others' results
        by more than the grace period. Records are reported done only after the
        flush, so a failed send fails the batch and SQS redelivers it.
        """
        held = _Held()
        self._local.held = held
        try:
            yield
        finally:
            self._local.held = None
            self._send(*held.drain())

    def tasks(self) -> Mapping[str, TaskFunction]:
        return self._tasks if self._tasks is not None else registered_tasks()

    def process(self, body: Mapping[str, Any], extend_visibility: Callable[[int], None] | None = None,
                lease_ms: int | None = None) -> None:
        """Handle one task message; raises (so the message is retried) only when it must be redelivered.

        The attempt runs in a span of its execution's trace (the header the dispatch carried); every
        message it sends (started, heartbeats, the result) carries that span on."""
        names = {"execution_id": body.get("execution_id"), "step": body.get("unit"),
                 "attempt": body.get("attempt"), "task": body.get("task")}
        parent = body.get(BODY_KEY)
        with self.tracer.span("orbit.step", parent if isinstance(parent, str) else None,
                              {k: v for k, v in names.items() if v is not None}) as span:
            token = str(body.get("token") or "")
            if span.header and token:
                self._traces[token] = span.header
            try:
                self._process(body, extend_visibility, lease_ms)
            finally:
                self._traces.pop(token, None)

    def _process(self, body: Mapping[str, Any], extend_visibility: Callable[[int], None] | None,
                 lease_ms: int | None) -> None:
        kind = body.get("kind")
        if kind == "cancel_task":
            if self.idempotency is not None:
                self.idempotency.request_cancel(str(body.get("token", "")))
            return
        effect = effect_from_dict(dict(body))
        if not isinstance(effect, DispatchTask):
            raise ValidationError(f"a worker queue carries dispatch_task/cancel_task, not {kind!r}",
                                  "message.kind")
        lease = lease_ms or self.lease_ms
        d = effect
        with _TASKS_LOCK:
            idem = None if d.task in _NO_DEDUPE else self.idempotency
        if idem is not None:
            claim = idem.peek(d.idempotency_key, d.attempt)
            if claim.outcome == "done":
                self._answer(getattr(self._local, "held", None),
                             self._result(d, (claim.result or {}).get("output"), None))
                return
            if claim.outcome == "failed":  # this attempt failed already: the same answer, no second run
                self._answer(getattr(self._local, "held", None),
                             self._result(d, None, TaskError.from_dict((claim.result or {}).get("error"))))
                return
            if claim.outcome == "busy":
                raise TaskBusy(f"step {d.unit!r} of {d.execution_id!r} is running on another worker")
        session = uuid.uuid4().hex
        started = _Once({"kind": "started", "execution_id": d.execution_id,
                         "id": f"started:{d.token}:{session}", "unit": d.unit, "token": d.token,
                         "worker_id": self.worker_id, "worker_session": session})
        claimed = _Once({})
        held: _Held | None = getattr(self._local, "held", None)  # this batch's, even from the timer thread

        def running_long() -> None:
            """Past the grace period (or at the first heartbeat): take the lease, report `started`."""
            if claimed.take() and idem is not None:
                # A rival claim would mean a concurrent duplicate; `complete` decides whose result counts.
                idem.claim(d.idempotency_key, d.token, lease, d.attempt)
            self._send(*(held.drain() if held is not None else ()), *started.take())

        # With a heartbeat timeout the engine's clock starts at `started`: report it now, or the
        # grace period would eat into the first heartbeat's window unseen.
        timer: threading.Timer | None = None
        if d.heartbeat_timeout_ms is not None:
            running_long()
        else:
            timer = threading.Timer(self.started_grace_s, running_long)
            timer.daemon = True
            timer.start()
        try:
            output, error = self._run(d, idem, running_long, session, lease, extend_visibility)
        finally:
            if timer is not None:
                timer.cancel()
        if idem is not None:
            if error is None:
                output = idem.complete(d.idempotency_key, d.token, {"output": output})["output"]
            else:
                idem.fail(d.idempotency_key, d.token, d.attempt, error.to_dict())
        result = self._result(d, output, error)
        if self.references is not None:
            self.references.hold_value(d.execution_id, result)
        self._answer(held, *started.take(), result)

    def _run(self, d: DispatchTask, idem: Any, running_long: Callable[[], None], session: str, lease_ms: int,
             extend_visibility: Callable[[int], None] | None) -> tuple[Any, TaskError | None]:
        fn = self.tasks().get(d.task)
        if fn is None:
            # "in this worker", not "on this queue": run locally, one process serves every queue
            served = ", ".join(sorted(self.tasks()))
            serves = f"it serves: {served}" if served else "it serves no tasks"
            return None, TaskError("UNKNOWN_TASK", f"no worker function is registered for task {d.task!r} "
                                   f"in this worker ({serves})", retryable=False)
        beats = [0]

        def extend() -> None:
            if extend_visibility is not None:
                extend_visibility(max(1, lease_ms // 1000))
            if idem is not None:
                idem.extend(d.idempotency_key, d.token, lease_ms)

        def send_beat(details: Any) -> bool:
            beats[0] += 1
            running_long()
            self._send({"kind": "heartbeat", "execution_id": d.execution_id,
                        "id": f"heartbeat:{d.token}:{session}:{beats[0]}",
                        "unit": d.unit, "token": d.token, "details": details})
            extend()
            return bool(self.idempotency is not None and self.idempotency.cancelled(d.token))

        # Every heartbeat is a decision: keep them cheap (see worker_heartbeat.py).
        throttle = HeartbeatThrottle.for_dispatch(d.heartbeat_timeout_ms, self.heartbeat_interval_s,
                                                  send_beat)
        ctx = TaskContext(d.execution_id, d.unit, d.attempt, d.idempotency_key, d.token, d.deadline_ms,
                          throttle.beat, heartbeat_timeout_ms=d.heartbeat_timeout_ms)
        try:
            with _KeepAlive(max(1.0, lease_ms / 3000), extend):
                return fn(d.input, ctx), None
        except TaskError as e:
            return None, e
        except Exception as e:  # worker code failed: report it, retryable, instead of losing the message
            code = getattr(fn, "__code__", None)  # name the user's function, not the Lambda serving it
            where = f"{getattr(fn, '__qualname__', fn)}" + (
                f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else "")
            log.exception("task %s (%s/%s) raised in %s", d.task, d.execution_id, d.unit, where,
                          extra={"task_function": where})
            return None, TaskError("TASK_FAILED", f"{type(e).__name__}: {e}", retryable=True)
        finally:
            throttle.close()

    @staticmethod
    def _result(d: DispatchTask, output: Any, error: TaskError | None) -> dict[str, Any]:
        msg: dict[str, Any] = {"kind": "result", "execution_id": d.execution_id, "id": f"result:{d.token}",
                               "unit": d.unit, "token": d.token}
        if error is None:
            msg["output"] = output
        else:
            msg["error"] = error.to_dict()
        return msg

    def _answer(self, held: _Held | None, *messages: dict[str, Any]) -> None:
        messages = tuple(self._traced(m) for m in messages)
        if held is not None:
            held.add(messages)
        else:
            self._send(*messages)

    def _send(self, *messages: dict[str, Any]) -> None:
        """Several messages in one request where the Queues adapter can (SqsQueues.send_decisions)."""
        if not messages:
            return
        messages = tuple(self._traced(m) for m in messages)
        many = getattr(self.queues, "send_decisions", None)
        if many is not None:
            many(list(messages))
        else:
            for m in messages:
                self.queues.send_decision(m)


    def _traced(self, m: dict[str, Any]) -> dict[str, Any]:
        header = self._traces.get(str(m.get("token") or ""))
        return {**m, BODY_KEY: header} if header and BODY_KEY not in m else m


class _Held:
    """Answers waiting for the end of a batch; drained by the batch's thread or a task's timer."""

    def __init__(self) -> None:
        self._items: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, messages: tuple[dict[str, Any], ...]) -> None:
        with self._lock:
            self._items.extend(messages)

    def drain(self) -> list[dict[str, Any]]:
        with self._lock:
            items, self._items = self._items, []
        return items


class _Once:
    """A message that must be sent exactly once, by whichever thread gets to it first."""

    def __init__(self, message: dict[str, Any]) -> None:
        self._message: dict[str, Any] | None = message
        self._lock = threading.Lock()

    def take(self) -> tuple[dict[str, Any], ...]:
        with self._lock:
            message, self._message = self._message, None
        return (message,) if message is not None else ()
