"""The worker SDK's core: `@task(name)` functions, a Lambda handler for a worker queue, a long-polling runner.

A task message is a `DispatchTask` effect (`kind: dispatch_task`). For each one
the worker:
1. decides whether the delivery can be a duplicate (worker/dedupe.py). A fresh
   one (first receive, not re-sent by the decider) reads no record at all. A
   possible duplicate reads the step's idempotency key
   (adapters/dynamodb/idempotency.py): a stored result or failure answers
   without running the function again, a key claimed by a live worker fails
   the record so SQS redelivers it later; with no record, the execution's
   history tells whether the attempt is still open (else it is acknowledged
   without running); an open one comes back later and, once settled, runs
   with the key claimed first;
2. reports `started` (which records StepDispatched; the session id is new for
   every delivery, so the decider can tell a redelivery after a lost worker).
   A task that ends within `started_grace_s` sends `started` together with its
   result, in one SQS request that usually lands in one decider batch (one
   commit instead of two), and writes no record: its result message is its
   record. A longer task claims the key with a lease and sends `started` when
   the grace runs out (with whatever its batch held: see worker/batching.py).
   A dispatch with `heartbeat_timeout_ms` sends `started` (and claims the
   lease) before the function runs: the engine's heartbeat clock starts there,
   and the function must call `ctx.heartbeat` within each heartbeat timeout
   (see worker/heartbeat.py for the throttle);
3. runs the function with a `TaskContext`, extending the message's visibility
   (and a claim's lease) in the background while it runs;
4. if it claimed the key, stores the success, or the failure with its attempt
   number (a redelivery of that attempt answers the stored error instead of
   running again; the next attempt runs), and reports a `result` echoing the
   dispatch token, so the decider can tell a current answer from a stale one.
`raise orbit.TaskError(code, message, retryable=False)` fails the step for good;
any other exception is reported as a retryable `TASK_FAILED`.

A message for a task this worker has no function for waits for one (`wait_for_worker`): it goes
back to its queue, sent again with a delay (UNSERVED_DELAYS_S), until a worker that serves the task
takes it, or the step's `queue_timeout` (QUEUE_TIMEOUT) or the execution's end makes the copy
stale (then it is dropped). Nothing is recorded and `started` is not sent, so the step stays
SCHEDULED. A step with `on_missing_worker: fail` fails at once with UNKNOWN_TASK instead.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from orbit.core.history.effects import DispatchTask
from orbit.core.history.events import TaskError
from orbit.core.history.messages import HeartbeatMessage, ResultMessage, StartedMessage
from orbit.core.history.queue_bodies import TaskCancel, TaskDispatch, task_message_from_dict
from orbit.core.history.storable import value_problem
from orbit.core.tracing import BODY_KEY, PassThrough
from orbit.errors import OrbitError
from orbit.worker import dedupe
from orbit.worker.batching import Held, KeepAlive, Once
from orbit.worker.context import TaskContext
from orbit.worker.dedupe import Delivery, TaskDeferred
from orbit.worker.heartbeat import HeartbeatThrottle
from orbit.worker.looks import Looks
from orbit.worker.tasks import _NO_DEDUPE, _TASKS_LOCK, TaskFunction, registered_tasks, storable
from orbit.worker.timers import Handle, timers

log = logging.getLogger("orbit.worker")

UNSERVED_DELAYS_S = (10, 30, 60, 120, 300)
"""How long a message for a task no worker serves waits before it is looked at again: the n-th
time it comes back it waits the n-th delay (the last one from then on). SQS allows up to 900 s."""
WAITING_KEY = "waiting_for_worker"  # in a re-sent body: how many times it came back unserved

class TaskBusy(OrbitError):
    """Another live worker holds this step's idempotency key; the message is retried later."""


class TaskUnserved(OrbitError):
    """No function for this task in this worker, and no queue to send the message back to: it is
    left to SQS, which makes it visible again after the delay set on it."""


class Worker:
    """Processes task messages with ports: `queues` (send_decision), `idempotency` (or None), `clock`."""

    def __init__(self, queues: Any, idempotency: Any, clock: Any,
                 tasks: Mapping[str, TaskFunction] | None = None, worker_id: str | None = None,
                 lease_ms: int = 300_000, heartbeat_interval_s: float = 10.0,
                 started_grace_s: float = 1.0, tracer: Any = None, references: Any = None,
                 history: Any = None, sleep: Callable[[float], None] | None = None) -> None:
        self.queues = queues
        self.idempotency = idempotency
        # Read-only `load(execution_id)` of the executions' histories: tells a possible duplicate
        # whether its attempt is still open (worker/dedupe.py). None: such a message settles, then
        # runs with its key claimed.
        self.history = history
        self.looks = Looks()  # its states read before, updated from the commits since (worker/looks.py)
        self._history_readable: bool | None = None  # dedupe.readable, asked until it is known
        self.sleep = sleep or time.sleep  # between history reads that failed (dedupe.READ_BACKOFF_S)
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
        held = Held()
        self._local.held = held
        try:
            yield
        finally:
            self._local.held = None
            self._send(*held.drain())

    def tasks(self) -> Mapping[str, TaskFunction]:
        return self._tasks if self._tasks is not None else registered_tasks()

    def process(self, body: Mapping[str, Any], extend_visibility: Callable[[int], None] | None = None,
                lease_ms: int | None = None, delivery: Delivery | None = None) -> None:
        """Handle one task message; raises (so the message is retried) only when it must be redelivered.

        `delivery`: what SQS says about this receive (its receive count, when it was sent); without
        it the message counts as a first, fresh delivery (worker/dedupe.py).

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
                self._process(body, extend_visibility, lease_ms, delivery or Delivery())
            finally:
                self._traces.pop(token, None)

    def _process(self, body: Mapping[str, Any], extend_visibility: Callable[[int], None] | None,
                 lease_ms: int | None, delivery: Delivery) -> None:
        d = task_message_from_dict(dict(body))
        if isinstance(d, TaskCancel):
            if self.idempotency is not None:
                self.idempotency.request_cancel(d.token)
            return
        lease = lease_ms or self.lease_ms
        if d.task not in self.tasks() and d.on_missing_worker != "fail":
            self._wait_for_worker(body, d, extend_visibility)
            return
        with _TASKS_LOCK:
            idem = None if d.task in _NO_DEDUPE else self.idempotency
        held: Held | None = getattr(self._local, "held", None)  # this batch's, even from the timer thread
        if held is not None:
            self._send(*held.stale(self.started_grace_s))
        claimed = Once({})  # taken by whoever claims the key: up front, or when the task runs long
        recorded = [False]  # the key is claimed: the outcome is stored (complete/fail)
        readable = self._by_history() if idem is not None else False
        if readable is None and (dedupe.suspect(body, d, delivery) or
                                 dedupe.waited(delivery, self.clock.now_ms())):
            readable = True  # unknown: a possible duplicate must look back (an unreadable history defers it)
        if idem is not None and not readable:  # no history to check: the record every time
            if not self._replay(d, idem.peek(d.idempotency_key, d.attempt), held):
                return
            recorded[0] = True
        elif idem is not None:
            claim_first = self._look_back(body, d, idem, delivery, held, extend_visibility)
            if claim_first is None:
                return  # answered from the record, or acknowledged: nothing to run
            if claim_first:
                claimed.take()
                if not self._replay(d, idem.claim(d.idempotency_key, d.token, lease, d.attempt), held):
                    return
                recorded[0] = True
        session = uuid.uuid4().hex
        started = Once(StartedMessage(d.execution_id, f"started:{d.token}:{session}", d.unit, d.token,
                                      self.worker_id, session).to_dict())

        def running_long() -> None:
            """Past the grace period (or at the first heartbeat): take the lease, report `started`,
            and send what the batch holds (it holds no more from now on: see batching.Held)."""
            if claimed.take() and idem is not None:
                # A rival claim would mean a concurrent duplicate; `complete` decides whose result counts.
                idem.claim(d.idempotency_key, d.token, lease, d.attempt)
                recorded[0] = True
            self._send(*(held.open() if held is not None else ()), *started.take())

        # With a heartbeat timeout the engine's clock starts at `started`: report it now, or the
        # grace period would eat into the first heartbeat's window unseen.
        # The grace period is a due time on the process's scheduler (worker/timers.py), not a thread.
        grace: Handle | None = None
        if d.heartbeat_timeout_ms is not None:
            running_long()
        else:
            grace = timers().after(self.started_grace_s, running_long)
        try:
            output, error = storable(*self._run(d, idem, running_long, session, lease, extend_visibility,
                                                recorded))
        finally:
            if grace is not None:
                # waits for a grace callback that fired just now: it has claimed before we read `recorded`
                timers().cancel(grace)
        if idem is not None and recorded[0]:
            if error is None:
                output = idem.complete(d.idempotency_key, d.token, {"output": output})["output"]
            else:
                idem.fail(d.idempotency_key, d.token, d.attempt, error.to_dict())
        result = self._result(d, output, error)
        if self.references is not None:
            self.references.hold_value(d.execution_id, result)
        self._answer(held, *started.take(), result)

    def _wait_for_worker(self, body: Mapping[str, Any], d: TaskDispatch,
                         extend_visibility: Callable[[int], None] | None) -> None:
        """Put the message back in its queue for a worker that serves `d.task`, unless no one waits
        for this attempt any more (its queue deadline passed, the execution moved on or ended)."""
        now = self.clock.now_ms()
        if d.deadline_ms is not None and now > d.deadline_ms + 60_000:
            log.info("task message for %s/%s (task %s) waited past its deadline: dropped",
                     d.execution_id, d.unit, d.task)
            return  # the engine has timed the attempt out (QUEUE_TIMEOUT or TIMEOUT) by now
        if self._by_history() and not dedupe.is_open(self.history, d, looks=self.looks):
            log.info("task message for %s/%s (task %s) is no longer waited for: dropped",
                     d.execution_id, d.unit, d.task)
            return
        n = d.waiting_for_worker or 0
        delay = UNSERVED_DELAYS_S[min(n, len(UNSERVED_DELAYS_S) - 1)]
        if n == 0:  # once per attempt, not at every return
            served = ", ".join(sorted(self.tasks())) or "no tasks"
            log.warning("waiting for a worker for task %r on queue %r (%s/%s attempt %d): this worker "
                        "serves %s; the message goes back to the queue until a worker serves it",
                        d.task, d.queue, d.execution_id, d.unit, d.attempt, served)
        send = getattr(self.queues, "send_task", None)
        if send is None:
            if extend_visibility is not None:
                extend_visibility(delay)
            raise TaskUnserved(f"no worker serves task {d.task!r} on queue {d.queue!r}: retried in {delay} s")
        # A new message rather than a redelivery: SQS would move the same message to the dead-letter
        # queue after maxReceiveCount receives, however long the wait is meant to last.
        again = replace(d, waiting_for_worker=n + 1).to_dict()
        trace = body.get(BODY_KEY)
        send(d.queue, again | {BODY_KEY: trace} if isinstance(trace, str) and trace else again, delay)

    def _by_history(self) -> bool | None:
        """May short tasks skip the record? Only if this process can read histories (asked until the
        answer is known; None: the probe failed otherwise, this task keeps its record)."""
        if self._history_readable is None:
            self._history_readable = dedupe.readable(self.history)
        return self._history_readable

    def _look_back(self, body: Mapping[str, Any], d: DispatchTask, idem: Any, delivery: Delivery,
                   held: Held | None, extend_visibility: Callable[[int], None] | None) -> bool | None:
        """Before running: None (nothing to run: answered from the record, or acknowledged), True (run
        with the key claimed first) or False (run; claim only if it runs long). See worker/dedupe.py."""
        suspect = dedupe.suspect(body, d, delivery)
        waited = dedupe.waited(delivery, self.clock.now_ms())
        if not (suspect or waited or d.attempt > 1):
            return False  # a fresh delivery: its result message is its record
        claim = idem.peek(d.idempotency_key, d.attempt)
        if claim.outcome == "lost":
            return True  # a long run died holding the key: it never reported, run it again
        if not self._replay(d, claim, held):
            return None
        if not (suspect or waited):
            return False  # a retry: nothing ran this attempt before
        count = delivery.receive_count if suspect else dedupe.SETTLE_RECEIVES  # one that waited never defers
        try:
            verdict = dedupe.verdict(self.history, d, count, self.sleep, self.looks)
        except dedupe.HistoryUnreadable:  # unknown is not open: back to the queue, not run
            if extend_visibility is not None:
                extend_visibility(dedupe.UNREADABLE_DELAY_S)
            raise
        if verdict == "ack":
            log.info("task message for %s/%s attempt %d is a duplicate the execution no longer waits for; "
                     "acknowledged without running", d.execution_id, d.unit, d.attempt)
            return None
        if verdict == "defer":
            if extend_visibility is not None:
                extend_visibility(dedupe.SETTLE_DELAY_S)
            raise TaskDeferred(f"step {d.unit!r} of {d.execution_id!r} (attempt {d.attempt}) may have run "
                               f"already; its answer may be in flight: retried in {dedupe.SETTLE_DELAY_S} s "
                               f"(receive {delivery.receive_count} of {dedupe.SETTLE_RECEIVES})")
        return suspect  # a settled duplicate runs with the key claimed; a message that waited as fresh

    def _replay(self, d: DispatchTask, claim: Any, held: Held | None) -> bool:
        """True when `claim` lets the attempt run; else answer from the stored outcome (or raise busy)."""
        if claim.outcome == "done":
            self._answer(held, self._result(d, (claim.result or {}).get("output"), None))
            return False
        if claim.outcome == "failed":  # this attempt failed already: the same answer, no second run
            self._answer(held, self._result(d, None, TaskError.from_dict((claim.result or {}).get("error"))))
            return False
        if claim.outcome == "busy":
            raise TaskBusy(f"step {d.unit!r} of {d.execution_id!r} is running on another worker")
        return True

    def _run(self, d: DispatchTask, idem: Any, running_long: Callable[[], None], session: str, lease_ms: int,
             extend_visibility: Callable[[int], None] | None,
             recorded: list[bool]) -> tuple[Any, TaskError | None]:
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
            if idem is not None and recorded[0]:  # only a claimed key has a lease to extend
                idem.extend(d.idempotency_key, d.token, lease_ms)

        def send_beat(details: Any) -> bool:
            if value_problem(details, "details") is not None:
                details = None  # dropped, as the decider would: the heartbeat still counts
            beats[0] += 1
            running_long()
            self._send(HeartbeatMessage(d.execution_id, f"heartbeat:{d.token}:{session}:{beats[0]}",
                                        d.unit, d.token, details).to_dict())
            extend()
            return bool(self.idempotency is not None and self.idempotency.cancelled(d.token))

        # Every heartbeat is a decision: keep them cheap (see worker_heartbeat.py).
        throttle = HeartbeatThrottle.for_dispatch(d.heartbeat_timeout_ms, self.heartbeat_interval_s,
                                                  send_beat)
        ctx = TaskContext(d.execution_id, d.unit, d.attempt, d.idempotency_key, d.token, d.deadline_ms,
                          throttle.beat, heartbeat_timeout_ms=d.heartbeat_timeout_ms, redelivery=d.redelivery)
        try:
            with KeepAlive(max(1.0, lease_ms / 3000), extend):
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
        return ResultMessage(d.execution_id, f"result:{d.token}", d.unit, d.token, output, error).to_dict()

    def _answer(self, held: Held | None, *messages: dict[str, Any]) -> None:
        messages = tuple(self._traced(m) for m in messages)
        if held is None or not held.add(messages):
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


