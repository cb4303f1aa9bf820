"""The delivery-chaos harness: the real handlers on moto, a seeded delivery layer, a virtual clock.

One seed is one world: a fresh moto account with template.yaml's table and queues, a few
executions of the workloads (chaos_workloads.py) started through the API function, and an event
loop that plays SQS's event source mappings, the timers function's schedule and the client's
signals on a virtual clock. Between the queues and the handlers sits the delivery layer. The
handlers send to moto's queues for real; after every invocation the harness moves what they sent
into its own model of each queue (body, attributes, MessageId, receive count, virtual send time,
when it is visible again), and hands records to the handlers from there. While the faults are on
it injects, from the seed:

- duplicates: a record twice in one batch, and late spurious copies (the same MessageId, a first
  receive, handed over 1 to 20 minutes later);
- reordering: a batch is a random sample of the visible messages in random order (sizes 1-10);
- lost deletes: a message its handler finished stays on the queue and comes back (receive
  count + 1) after the queue's visibility timeout;
- throttling: a botocore `before-call` hook on the clients raises the error the SDK gives up with
  (ProvisionedThroughputExceededException, ThrottlingException, SlowDown) on a fraction of the
  handlers' DynamoDB, SQS and S3 calls: what the handler sees after the SDK's own retries;
- two decider environments (and two worker environments), each with its own services (state
  cache, registry cache, inline runner) and its own code runtime (paused code-workflow
  instances); every batch goes to one of them at random, also after the faults stop.

A record the handler reports failed (or every record of an invocation that raised) stays hidden
until the visibility timeout, as with ReportBatchItemFailures; a message received more than the
queue's maxReceiveCount goes to the dead-letter list. After the faults stop the world drains to
quiescence (nothing queued or hidden, no timer left) and `check` states the invariants.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (HERE, ROOT / "tests" / "integration"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
             "AWS_SECURITY_TOKEN": "testing", "AWS_SESSION_TOKEN": "testing",
             "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "1",
             "POWERTOOLS_METRICS_NAMESPACE": "Orbit", "POWERTOOLS_SERVICE_NAME": "orbit"}.items():
    os.environ.setdefault(k, v)
os.environ.pop("AWS_ENDPOINT_URL", None)
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "CRITICAL")  # thousands of invocations per run
os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")

import chaos_durable  # noqa: E402
import chaos_triggers as T  # noqa: E402
import chaos_workloads as W  # noqa: E402
from aws_resources import _TEMPLATE, Clients, Stack  # noqa: E402
from botocore.awsrequest import AWSResponse  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
from chaos_timers import DELAYS, LEAD_S  # noqa: E402
from harness import load_app, load_event  # noqa: E402
from orbit.aws import wiring as aws  # noqa: E402
from orbit.local.pump import to_record  # noqa: E402
from orbit.service import replay_host as code_runtime  # noqa: E402

QUEUES = {k: v["Properties"] for k, v in _TEMPLATE["Resources"].items() if v["Type"] == "AWS::SQS::Queue"}
SERVED = {"DecisionQueue": "decider", "DefaultTaskQueue": "worker", "DurableAnswerQueue": "decider"}
WRITES = frozenset({"PutItem", "UpdateItem", "TransactWriteItems", "BatchWriteItem", "DeleteItem"})
TERMINAL = ("WorkflowCompleted", "WorkflowFailed", "WorkflowCancelled", "WorkflowTimedOut")
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
# Longest legitimate run: 36 min of sleeps plus faults (a message comes back at most 4 times, after
# 180 s or 900 s each). A lost timer shows as a 30-day wait timeout or a 7-day step deadline.
LATE_MS = 24 * 3_600_000


class _Sink(io.TextIOBase):
    def write(self, s: str) -> int:
        return len(s)


_SINK = _Sink()


def repro_command(seed: int) -> str:
    return f".venv/bin/python -m tests.chaos.run --seeds {seed} --verbose"


@dataclass(frozen=True)
class Profile:
    """How often each fault happens while the faults are on (per message, batch or call)."""

    dup_in_batch: float = 0.05  # a record handed over twice in its batch
    dup_late: float = 0.05  # a sent message gets a late copy (1-20 min later, first receive)
    reorder: float = 0.5  # a batch is a random sample in random order (else oldest first)
    lost_delete: float = 0.05  # a finished message is not deleted
    throttle: float = 0.02  # a handler's AWS call fails with a throttling error
    fault_ticks: int = 150  # deliveries with faults on; then the faults stop
    executions: int = 2  # workloads per seed (drawn at random, distinct)
    envs: int = 2  # decider (and worker) environments
    # Not a fault (it goes on after the faults stop): before a decider's write, the other decider
    # environment decides a batch (two environments at once).
    interleave: float = 0.3
    workloads: tuple[str, ...] = ()  # drawn from these only (default: all)
    # Timers on the second (chaos_timers.py): sqs-delay timers with the 15-minute hand-over lead,
    # delays held by the model; `dup_early`: a delayed message gets a copy 1-60 s before its time.
    on_the_second: bool = False
    dup_early: float = 0.0
    # Triggers (chaos_triggers.py): these trigger workloads' events, through two triggers environments
    triggers: tuple[str, ...] = ()

    @property
    def holds_delays(self) -> bool:
        """The model holds DelaySeconds (moto would on wall time): timers on the second, the
        durable functions' `fire` messages (chaos_durable.py), the trigger buffers' checks."""
        return self.on_the_second or "durable" in self.workloads or bool(self.triggers)

    @classmethod
    def none(cls) -> Profile:
        """No injected fault; two environments, which also decide at once now and then."""
        return cls(dup_in_batch=0, dup_late=0, reorder=0, lost_delete=0, throttle=0, fault_ticks=0)


class VirtualClock:
    def __init__(self) -> None:
        self.now = START_MS

    def now_ms(self) -> int:
        return self.now


@dataclass
class Msg:
    queue: str
    mid: str
    body: str
    attributes: dict[str, Any]  # MessageAttributes (the trace header)
    sent_ms: int
    visible_ms: int
    receives: int = 0
    first_receive_ms: int | None = None
    fault_failures: int = 0  # deliveries lost to an injected fault
    late_copy: bool = False  # SQS's late spurious copy, handed over as a first receive


class Context:
    """A Lambda context: the request id from the seed (ids that reach the history must not vary)."""

    def __init__(self, name: str, request_id: str, timeout_s: int = 30) -> None:
        self.function_name = name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        self.memory_limit_in_mb = 512
        self.aws_request_id = request_id
        self.log_group_name = f"/orbit/chaos/{name}"
        self.log_stream_name = "2026/01/01/[$LATEST]chaos"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class Throttle:
    """The botocore hook: attached once to the session's clients, armed per world."""

    def __init__(self) -> None:
        self.world: World | None = None
        self._attached: set[int] = set()

    def attach(self, *clients: Any) -> None:
        for c in clients:
            if id(c) not in self._attached:
                c.meta.events.register("before-call", self._before, unique_id="orbit-chaos-throttle")
                c.meta.events.register("after-call", self._after, unique_id="orbit-chaos-conflict")
                self._attached.add(id(c))

    def _before(self, model: Any, params: Any, **_: Any) -> Any:
        w = self.world
        if w is None or w.running is None:
            return  # the harness's own calls
        service, op = model.service_model.service_name, model.name
        w.calls += 1
        if service == "sqs" and op.startswith("SendMessage"):
            w.dirty.add(str((json.loads(params.get("body") or b"{}")).get("QueueUrl", "")))
        if w.faulty and w.rng.random() < w.profile.throttle:
            self._throttle(w, service, op)
        if service == "dynamodb" and op in WRITES and w.running.startswith(("decider#", "triggers#")) \
                and not w.nested \
                and len(w.envs["decider"]) > 1 and w.rng.random() < w.profile.interleave:
            w.meanwhile()
        if service == "sqs" and op == "ChangeMessageVisibility":
            # A receipt handle of the model (a worker deferring a possible duplicate, or heartbeating):
            # applied to the model, answered as SQS answers it; moto never knew the handle.
            body = json.loads(params.get("body") or b"{}")
            w.change_visibility(str(body.get("ReceiptHandle")), int(body.get("VisibilityTimeout", 0)))
            return AWSResponse("https://sqs.us-east-1.amazonaws.com/", 200, {}, None), {}
        return None

    def _after(self, model: Any, parsed: Any, **_: Any) -> None:
        """A decider's conditional write that lost to the other environment's commit, made while the
        two ran at once: the at_least_once inline results it carried were never recorded, so a
        re-run of those attempts is the at-least-once the docs allow (docs/inline-steps.md)."""
        w = self.world
        if w is None or w.running is None or not w.running.startswith("decider#"):
            return
        code = (parsed or {}).get("Error", {}).get("Code") if isinstance(parsed, dict) else None
        lost = code in ("ConditionalCheckFailedException", "TransactionCanceledException")
        if model.name in WRITES and lost and W.CURRENT[0] in w.overlapped:
            w.failed_after[W.CURRENT[0]] = len(W.LEDGER)

    @staticmethod
    def _throttle(w: World, service: str, op: str) -> None:
        code = {"dynamodb": "ThrottlingException" if op.startswith("Transact")
                else "ProvisionedThroughputExceededException",
                "sqs": "ThrottlingException", "s3": "SlowDown"}.get(service, "ThrottlingException")
        w.throttled += 1
        w.throttled_in.add(W.CURRENT[0])
        w.failed_after[W.CURRENT[0]] = len(W.LEDGER)
        w.trace.append(f"throttle {w.running} {service}.{op}")
        raise ClientError({"Error": {"Code": code, "Message": "Rate exceeded (orbit chaos)"},
                           "ResponseMetadata": {"HTTPStatusCode": 400, "MaxAttemptsReached": True,
                                                "RetryAttempts": 4}}, op)


THROTTLE = Throttle()


class Env:
    """One warm Lambda environment: its services (caches) and its code runtime (paused instances)."""

    def __init__(self, name: str, world: World) -> None:
        from orbit.adapters.dynamodb import DynamoRegistry

        self.name = name
        c = world.clients
        svc = aws.build_services(os.environ, world.clock)
        svc.__dict__.update(dynamodb=c.dynamodb, sqs=c.sqs, s3=c.s3, secretsmanager=c.secretsmanager)
        svc.__dict__["registry"] = DynamoRegistry(c.dynamodb, world.stack.table, svc.payloads, world.clock,
                                                  monotonic=lambda: world.clock.now / 1000)
        svc.worker.started_grace_s = 30.0  # wall clock: a loaded machine must not change the calls
        self.services = svc
        self.runtime = code_runtime.CodeRuntime()


@dataclass
class Execution:
    id: str
    workload: W.Workload
    started: bool = False
    signals: list[tuple[str, Any, str]] = field(default_factory=list)  # not yet accepted
    arn: str = ""  # a durable function's execution ARN (chaos_durable.py)


@dataclass
class Result:
    seed: int
    problems: list[str]
    seconds: float
    invocations: int
    throttled: int
    trace: list[str]
    flags: str = ""  # the run's options, for the reproduction command

    @property
    def ok(self) -> bool:
        return not self.problems

    def report(self) -> str:
        if self.ok:
            return f"seed {self.seed}: ok ({self.invocations} invocations, {self.seconds:.2f}s)"
        return (f"seed {self.seed}: FAILED ({self.invocations} invocations, {self.seconds:.2f}s)\n    "
                + "\n    ".join(self.problems) + f"\n  reproduce: {repro_command(self.seed)}{self.flags}")


class World:
    def __init__(self, seed: int, clients: Clients, stack: Stack, profile: Profile) -> None:
        self.seed, self.clients, self.stack, self.profile = seed, clients, stack, profile
        self.rng = random.Random(seed)
        self.clock = VirtualClock()
        self.served = dict(SERVED)
        self.arns = dict(stack.arns)
        self.feed = T.Feed()
        if profile.triggers:  # the trigger queue, and the user's queue an sqs trigger names
            self.served |= {"TriggerQueue": "triggers", T.USER_QUEUE: "triggers"}
            url = clients.sqs.create_queue(QueueName=T.USER_QUEUE,
                                           Attributes={"VisibilityTimeout": "60"})["QueueUrl"]
            stack.queues[T.USER_QUEUE] = url
            self.arns[T.USER_QUEUE] = clients.sqs.get_queue_attributes(
                QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            self.feed = T.build_feed(seed, random.Random(f"feed-{seed}"), profile.triggers)
        self.queues: dict[str, list[Msg]] = {q: [] for q in self.served}
        self.dead: dict[str, list[Msg]] = {q: [] for q in self.served}
        self.excused: list[Msg] = []  # dead-lettered after a fault hit every delivery
        self.redriven: list[str] = []  # their ids, once the operator moved them back (redrive_excused)
        self.throttled_in: set[int] = set()  # invocations with a throttled call
        props = {**QUEUES, T.USER_QUEUE: {"VisibilityTimeout": 60,
                                          "RedrivePolicy": {"maxReceiveCount": T.USER_MAX_RECEIVES}}}
        self.visibility_ms = {q: 1000 * int(props[q].get("VisibilityTimeout", 30)) for q in self.served}
        self.max_receives = {q: int(props[q]["RedrivePolicy"]["maxReceiveCount"]) for q in self.served}
        self.urls = {url: q for q, url in stack.queues.items()}
        self.envs = {f: [Env(f"{f}#{i + 1}", self) for i in range(profile.envs)]
                     for f in ("decider", "worker")}
        self.envs |= {f: [Env(f, self)] for f in ("api", "timers", "durable")}
        if profile.triggers:
            self.envs["triggers"] = [Env(f"triggers#{i + 1}", self) for i in range(profile.envs)]
        self.checker = Env("checker", self)
        self.running: str | None = None  # the environment whose handler runs now
        self.faulty = True
        self.ticks = self.invocations = self.calls = self.throttled = 0
        self.failed_after: dict[int, int] = {}  # invocation -> runs in the ledger when it last failed
        self.dirty: set[str] = set()
        self.nested = False  # a `meanwhile` invocation runs
        self.overlapped: set[int] = set()  # invocations another one ran beside
        self.handles: dict[str, Msg] = {}
        self.spurious: Counter[tuple[str, Any]] = Counter()  # (key, attempt) handed over twice at once
        self.msg_counter = 0
        self.trace: list[str] = []
        self.executions: list[Execution] = []
        self._fire: tuple[int, int | None] = (-1, None)

    # ------------------------------------------------------------------------------ invocations
    def invoke(self, env: Env, function: str, event: dict[str, Any]) -> Any:
        self.invocations += 1
        number = self.invocations
        outer = (W.CURRENT[0], aws._cached, code_runtime._DEFAULT, self.running)  # a nested invocation's
        W.CURRENT[0] = number
        aws._cached, code_runtime._DEFAULT = env.services, env.runtime
        self.running = env.name
        try:
            with contextlib.redirect_stdout(_SINK):  # the handlers' EMF metrics and logs
                return load_app(function).handler(event, Context(function, f"{self.seed}-{number}"))
        except Exception:
            self.failed_after[number] = len(W.LEDGER)
            raise
        finally:
            self.running = None
            self.collect()
            W.CURRENT[0], aws._cached, code_runtime._DEFAULT, self.running = outer

    def meanwhile(self) -> None:
        """Something else happens while a decider is about to write: the other decider environment
        decides a batch, a worker answers, or the client sends a signal (environments run at once)."""
        options = [q for q in self.served if any(m.visible_ms <= self.clock.now for m in self.queues[q])]
        if any(e.started for e in self.executions) and any(e.signals for e in self.executions):
            options.append("client")
        if not options:
            return
        choice = self.rng.choice(options)
        running, self.nested = self.running, True
        self.overlapped.add(W.CURRENT[0])
        self.trace.append(f"  meanwhile, beside {running}:")
        try:
            if choice == "client":
                self.client_step(signals_only=True)
            else:
                self.deliver(choice, besides=running)
        finally:
            self.nested = False

    def collect(self) -> None:
        """Move what the handlers sent to moto's queues into the model (the harness's calls: no faults)."""
        sqs = self.clients.sqs
        for url in sorted(self.dirty):
            queue = self.urls.get(url)
            if queue not in self.queues:
                continue
            while True:
                got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=36_000,
                                          MessageAttributeNames=["All"]).get("Messages", [])
                if not got:
                    break
                sqs.delete_message_batch(QueueUrl=url, Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)])
                for m in got:
                    self.msg_counter += 1
                    mid = f"m{self.msg_counter}"
                    delay_ms = DELAYS.take(m["Body"]) * 1000 if self.profile.holds_delays else 0
                    msg = Msg(queue, mid, m["Body"], m.get("MessageAttributes") or {}, self.clock.now,
                              self.clock.now + delay_ms)
                    self.queues[queue].append(msg)
                    if delay_ms and self.faulty and self.rng.random() < self.profile.dup_early:
                        early = msg.visible_ms - self.rng.randint(1, min(60, delay_ms // 1000)) * 1000
                        self.queues[queue].append(Msg(queue, mid, msg.body, msg.attributes, msg.sent_ms,
                                                      early, late_copy=True))
                        self.trace.append(f"early copy of {mid} at -{(msg.visible_ms - early) // 1000}s")
                    if self.faulty and self.rng.random() < self.profile.dup_late:
                        late = self.clock.now + self.rng.randint(60, 1200) * 1000
                        copy = Msg(queue, mid, msg.body, msg.attributes, msg.sent_ms, late, late_copy=True)
                        self.queues[queue].append(copy)
                        self.trace.append(f"late copy of {mid} at +{(late - self.clock.now) // 1000}s")
        self.dirty.clear()

    def deliver(self, queue: str, besides: str | None = None) -> None:
        """One poll of `queue`'s event source mapping and one invocation of its function."""
        now = self.clock.now
        visible = [m for m in self.queues[queue] if m.visible_ms <= now]
        size = self.rng.randint(1, 10)
        if self.faulty and self.rng.random() < self.profile.reorder:
            batch = self.rng.sample(visible, min(size, len(visible)))
        else:
            batch = sorted(visible, key=lambda m: (m.visible_ms, m.sent_ms))[:size]
        records, handed = [], []
        for m in batch:
            m.receives += 1
            m.first_receive_ms = m.first_receive_ms or now
            m.visible_ms = now + self.visibility_ms[queue]
            if m.receives > self.max_receives[queue]:  # SQS moves it instead of handing it over
                self.queues[queue].remove(m)
                if m.fault_failures >= self.max_receives[queue]:
                    # Every delivery was lost to an injected fault (a throttled call in its invocation,
                    # a lost delete): SQS's contract, not a defect. Noted, not counted.
                    self.excused.append(m)
                    self.trace.append(f"{m.mid} to the DLQ of {queue} (every delivery hit a fault)")
                else:
                    self.dead[queue].append(m)
                    self.trace.append(f"{m.mid} to the DLQ of {queue}")
                continue
            handed.append(m)
            records.append(self._record(m, f"{m.mid}/{m.receives}"))
            if m.late_copy and m.receives == 1:
                # docs/api.md ("What remains at-least-once"): a late first-receive copy of an attempt
                # still open runs at once (the worker cannot tell it from the only copy behind a
                # backlog); if the first run's result waits for redelivery, the step ran twice.
                for d in _bodies(m.body):
                    if d.get("kind") == "dispatch_task":
                        self.spurious[(f"{d.get('execution_id')}:{d.get('unit')}", d.get("attempt"))] += 1
            if self.faulty and self.rng.random() < self.profile.dup_in_batch:
                records.append(self._record(m, f"{m.mid}/{m.receives}/dup"))
                self.trace.append(f"duplicate of {m.mid} in the batch")
                for d in _bodies(m.body):  # docs/api.md: a fresh spurious copy can run too
                    if d.get("kind") == "dispatch_task":
                        self.spurious[(f"{d.get('execution_id')}:{d.get('unit')}", d.get("attempt"))] += 1
        if not records:
            return
        if self.faulty and self.rng.random() < self.profile.reorder:
            self.rng.shuffle(records)
        env = self.rng.choice([e for e in self.envs[self.served[queue]] if e.name != besides])
        function = {"decider": "decider", "worker": "example_worker"}.get(self.served[queue], "triggers")
        event = {"Records": [to_record(r, self.arns[queue]) for r in records]}
        self.trace.append(f"t+{(now - START_MS) // 1000}s {env.name} <- "
                          + ", ".join(f"{m.mid}#{m.receives}:{kinds(m.body)}" for m in handed))
        invoked = self.invocations + 1  # this invocation's number (a `meanwhile` one comes after)
        try:
            response = self.invoke(env, function, event)
            failed = {f["itemIdentifier"] for f in (response or {}).get("batchItemFailures", [])}
        except Exception as e:  # noqa: BLE001 - the invocation failed: every record comes back later
            self.trace.append(f"  invocation failed: {type(e).__name__}: {e}"[:300])
            failed = {m.mid for m in handed}
        # a throttled call in this invocation, or in one that ran beside it (numbered after it)
        throttled = any(n >= invoked for n in self.throttled_in)
        for m in handed:
            if m.mid in failed:
                m.fault_failures += throttled
                continue  # hidden until the visibility timeout, then redelivered
            if self.faulty and self.rng.random() < self.profile.lost_delete:
                self.trace.append(f"  lost delete of {m.mid}")
                m.fault_failures += 1
                continue
            self.queues[queue].remove(m)
        if failed:
            self.trace.append(f"  failed: {sorted(failed)}")

    def answer(self, body: str) -> None:
        """Lambda's destination sends an asynchronous invocation's record (chaos_durable.py): on the
        answer queue, sometimes twice (a late copy)."""
        self.msg_counter += 1
        mid = f"m{self.msg_counter}"
        queue = "DurableAnswerQueue"
        self.queues[queue].append(Msg(queue, mid, body, {}, self.clock.now, self.clock.now))
        self.trace.append(f"    record {mid} of the invocation on the answer queue")
        if self.faulty and self.rng.random() < self.profile.dup_late:
            late = self.clock.now + self.rng.randint(60, 1200) * 1000
            self.queues[queue].append(Msg(queue, mid, body, {}, self.clock.now, late, late_copy=True))
            self.trace.append(f"late copy of {mid} at +{(late - self.clock.now) // 1000}s")

    def change_visibility(self, handle: str, seconds: int) -> None:
        m = self.handles.get(handle)
        if m is not None and m in self.queues[m.queue] and handle == f"{m.mid}/{m.receives}":
            m.visible_ms = self.clock.now + 1000 * seconds
            self.trace.append(f"  visibility of {m.mid} set to {seconds}s")

    def _record(self, m: Msg, handle: str) -> dict[str, Any]:
        self.handles[handle] = m
        return {"MessageId": m.mid, "ReceiptHandle": handle, "Body": m.body,
                "MD5OfBody": hashlib.md5(m.body.encode()).hexdigest(),  # noqa: S324 - what SQS sends
                "MessageAttributes": m.attributes,
                "Attributes": {"ApproximateReceiveCount": str(m.receives), "SentTimestamp": str(m.sent_ms),
                               "SenderId": "AIDAORBITCHAOS",
                               "ApproximateFirstReceiveTimestamp": str(m.first_receive_ms)}}

    def api(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        event = load_event("api_describe.json")
        event["rawPath"] = path
        event["requestContext"]["http"].update(method=method, path=path)
        event["body"] = json.dumps(body)
        event["queryStringParameters"] = None
        try:
            response = self.invoke(self.envs["api"][0], "api", event)
        except Exception as e:  # noqa: BLE001 - any failure of the API call is the caller's answer
            return 599, str(e)
        return response["statusCode"], json.loads(response["body"])

    def fire_timers(self) -> None:
        try:
            self.invoke(self.envs["timers"][0], "timers", load_event("timers_schedule.json"))
            self.trace.append(f"t+{(self.clock.now - START_MS) // 1000}s timers fired")
        except Exception as e:  # noqa: BLE001 - the schedule runs it again a minute later
            self.trace.append(f"t+{(self.clock.now - START_MS) // 1000}s timers failed: {e}"[:300])
            self.clock.now += 60_000

    def next_fire_ms(self) -> int | None:
        """The earliest timer in the table (read again only after an invocation could change it)."""
        if self._fire[0] != self.invocations:
            self._fire = (self.invocations, self.checker.services.table_timers.next_fire_ms())
        return self._fire[1]

    # ------------------------------------------------------------------------------------ the run
    def setup(self) -> None:
        names = sorted(self.profile.workloads or W.WORKLOADS)
        picked = self.rng.sample(names, min(self.profile.executions, len(names)))
        for i, name in enumerate(picked):
            wl = W.WORKLOADS.get(name) or W.EXTRA[name]
            eid = f"{name}-{self.seed}-{i}"
            ex = Execution(eid, wl, signals=[(s, p, f"{eid}:{s}") for s, p in wl.signals])
            self.executions.append(ex)
        if any(e.workload.durable for e in self.executions):
            chaos_durable.attach(self)
        faulty, self.faulty = self.faulty, False
        extra = T.definitions(self.arns[T.USER_QUEUE]) if self.profile.triggers else ()
        for d in (*W.DEFINITIONS, *extra):  # registered before any fault: a deployment, not traffic
            status, got = self.api("POST", "/definitions", d)
            assert status == 201, f"registering {d['name']}: {status} {got}"
        self.faulty = faulty

    def client_step(self, signals_only: bool = False) -> bool:
        """The client's next action (a start or a signal), retried later when the API failed."""
        pending = [e for e in self.executions if not e.started]
        if pending and not signals_only:
            ex = pending[0]
            if ex.workload.durable:
                ex.started = chaos_durable.start(self, ex) == 202
                return True
            status, got = self.api("POST", "/executions", {"workflow": ex.workload.workflow, "id": ex.id,
                                                           "input": ex.workload.input})
            self.trace.append(f"t+{(self.clock.now - START_MS) // 1000}s start {ex.id}: {status}")
            ex.started = status in (200, 201)
            if status not in (200, 201, 599) and status < 500:
                raise AssertionError(f"start {ex.id}: {status} {got}")
            return True
        waiting = [e for e in self.executions if e.signals and e.started]
        if not waiting:
            return False
        ex = self.rng.choice(waiting)
        name, payload, sid = ex.signals[0]
        if ex.workload.by_batch:  # a bulk action signals it (service/batches.py), once
            where = f'workflow = {ex.workload.workflow} AND status = RUNNING AND id STARTS_WITH "{ex.id}"'
            status, got = self.api("POST", "/batches/signal", {"where": where, "signal": name,
                                                               "payload": payload, "id": f"bulk-{ex.id}"})
        else:
            body = {"payload": payload, "id": sid}
            status, got = self.api("POST", f"/executions/{ex.id}/signals/{name}", body)
        self.trace.append(f"t+{(self.clock.now - START_MS) // 1000}s signal {sid}: {status}")
        if status in (200, 202):
            ex.signals.pop(0)
        elif status < 500:
            raise AssertionError(f"signal {sid}: {status} {got}")
        return True

    def rel(self) -> int:
        return (self.clock.now - START_MS) // 1000

    def emit(self) -> None:
        """The feed's next event: onto its queue (moto, then the model, with the faults of any
        send), or a signal-with-start call (retried 5 s later when the API failed)."""
        ev = self.feed.events[0]
        if ev.queue == "api":
            if not T.api_signal_with_start(self, ev):  # retried before the calls after it (a
                at = self.clock.now - START_MS + 5_000  # client that waits for each answer)
                for later in self.feed.events:
                    if later.queue == "api":
                        later.at_ms = max(later.at_ms, at)
                self.feed.events.sort(key=lambda e: e.at_ms)  # stable: the failed call stays first
                return
        else:
            url = self.stack.queues[ev.queue]
            self.clients.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(ev.body))
            self.dirty.add(url)
            self.collect()
            self.trace.append(f"t+{self.rel()}s event {ev.key} -> {ev.queue}")
        self.feed.sent.append(self.feed.events.pop(0))

    def run(self, max_ticks: int = 3000) -> None:
        self.setup()
        skew_ms: int = load_app("timers").SKEW_MS
        if self.profile.on_the_second:  # the tick that finds a table timer within the lead hands it over
            skew_ms = -LEAD_S * 1000
        while True:
            self.ticks += 1
            if self.ticks > max_ticks:
                raise Stuck(f"the system did not settle in {max_ticks} steps")
            if self.faulty and self.ticks > self.profile.fault_ticks:
                self.faulty = False
                self.trace.append(f"t+{(self.clock.now - START_MS) // 1000}s faults stop")
            self.clock.now += self.rng.randint(0, 2000)  # an invocation takes a while
            has_client_work = any(not e.started or e.signals for e in self.executions)
            if has_client_work and (not any(e.started for e in self.executions) or self.rng.random() < 0.15):
                self.client_step()
                continue
            event = self.feed.due(self.clock.now - START_MS)
            if event is not None and self.rng.random() < 0.5:
                self.emit()
                continue
            ready = [q for q in self.served if any(m.visible_ms <= self.clock.now for m in self.queues[q])]
            if ready:
                self.deliver(self.rng.choice(ready))
                continue
            fire = self.next_fire_ms()
            if fire is not None and fire + skew_ms <= self.clock.now:
                self.fire_timers()
                continue
            if has_client_work:
                self.client_step()
                continue
            if event is not None:
                self.emit()
                continue
            later = [m.visible_ms for q in self.queues.values() for m in q]
            later += [fire + skew_ms] if fire is not None else []
            later += [START_MS + t] if (t := self.feed.next_ms()) is not None else []
            if later:
                self.clock.now = max(self.clock.now, min(later))
                continue
            if self.faulty:  # quiet before the faults stopped on their own: stop them now
                self.faulty = False
                continue
            if self.excused:  # the operator answers the DLQ alarm: a redrive to the source queue
                self.redrive_excused()
                continue
            return

    def redrive_excused(self) -> None:
        """Messages SQS dead-lettered because a fault hit every delivery go back to their queue, as
        an SQS DLQ redrive (StartMessageMoveTask) moves them: new deliveries (receive count 0). By
        SQS's contract such a message is dead-lettered; what Orbit owes is that a redrive then
        finishes the work (docs/operations.md: the DLQ alarms), which `check` verifies."""
        for m in self.excused:
            m.receives, m.fault_failures, m.first_receive_ms = 0, 0, None
            m.visible_ms = self.clock.now
            self.queues[m.queue].append(m)
            self.redriven.append(m.mid)
        self.trace.append(f"t+{(self.clock.now - START_MS) // 1000}s the operator redrives the DLQ: "
                          + ", ".join(m.mid for m in self.excused))
        self.excused.clear()


class Stuck(AssertionError):
    pass


def _bodies(body: str) -> list[dict[str, Any]]:
    try:
        b = json.loads(body)
    except ValueError:
        return []
    inner = b.get("messages") if isinstance(b, dict) and b.get("kind") == "bundle" else None
    items = inner if isinstance(inner, list) else [b]
    return [m for m in items if isinstance(m, dict)]


def kinds(body: str) -> str:
    return "+".join(f"{m.get('kind')}({m.get('execution_id', '')}:{m.get('unit') or m.get('id') or ''})"
                    for m in _bodies(body)) or "?"
