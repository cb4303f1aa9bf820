"""Issue 24, findings 5 and 6, each as one scripted event sequence through the real handlers on moto,
next to a control that passes.

Finding 5 (a branch resumes past a lost commit) needs no fault, only a second decider environment:
a second `Services` (its own engine, state cache, inline runner and code runtime, so its own paused
code-workflow instances) over the same table and queues; the decider handler runs "in" it while
`aws._cached` points at it. Finding 6 (a late copy runs again when one read is throttled) throttles
the worker's history reads (a botocore hook raising what the SDK raises once its retries give up).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orbit
import pytest
from botocore.exceptions import ClientError
from harness import load_event, sqs_event
from orbit import worker
from orbit.aws import wiring as aws
from orbit.service.replay_host import CodeRuntime, default_runtime
from orbit.worker import dedupe
from orbit.workflow import REGISTRY, CodeRegistry

RUNS: Counter[str] = Counter()  # side effects: runs per idempotency key (worker) or inline argument


# ---------------------------------------------------------------------------------------- finding 5
def bump(v: int) -> int:
    """The inline (at_least_once) step of branch A: runs in the decider, decided into its commit."""
    RUNS[f"bump:{v}"] += 1
    return v + 1


@worker.task("f5.b")
def b_step(input: Any, ctx: worker.TaskContext) -> Any:
    RUNS[ctx.idempotency_key] += 1
    return input["i"] * 10


def two_branches(ctx: Any, input: Any) -> Any:
    def a(c: Any) -> Any:
        c.wait_for("a_go")
        v = c.run(bump, 1)  # decided in the same commit as the signal that led to it
        c.sleep("16m")
        return v

    def b(c: Any) -> Any:
        c.wait_for("b_go")
        return [c.step("f5.b", {"i": i}) for i in range(3)]  # three commits of the other environment

    return ctx.parallel(a, b)


F5 = orbit.workflow("f5-branches", registry=CodeRegistry())(two_branches)
A = "1.parallel()/0/"
A_EVENTS = [("WaitStarted", A + "1.wait_for(a_go)"), ("StepSucceeded", A + "1.wait_for(a_go)"),
            ("StepScheduled", A + "2.bump"), ("StepSucceeded", A + "2.bump"),
            ("TimerStarted", A + "3.sleep()"), ("TimerFired", A + "3.sleep()")]


@pytest.fixture
def f5_deployed() -> Iterator[None]:
    held = REGISTRY.all()
    REGISTRY.replace([*held, F5])
    try:
        yield
    finally:
        REGISTRY.replace(held)


def environment(clock: Any, clients: Any) -> Any:
    """A decider environment of its own: services over the same stack, with their own caches."""
    svc = aws.build_services(os.environ, clock)
    svc.__dict__.update(dynamodb=clients.dynamodb, sqs=clients.sqs, s3=clients.s3)
    return svc


@contextmanager
def running_in(svc: Any) -> Iterator[None]:
    """The handlers of this process use `svc` (another Lambda environment of the same functions)."""
    saved = aws._cached
    aws._cached = svc
    try:
        yield
    finally:
        aws._cached = saved


def decide_in(cloud: Any, svc: Any) -> None:
    """Every decision message queued now and after, decided in environment `svc`; tasks run meanwhile."""
    with running_in(svc):
        while cloud.pump("DecisionQueue") + cloud.pump("DefaultTaskQueue"):
            pass


def history(cloud: Any, eid: str) -> list[dict[str, Any]]:
    status, events = cloud.api("GET", f"/executions/{eid}/history")
    assert status == 200
    return events  # type: ignore[no-any-return]


def play_finding_5(cloud: Any, clock: Any, clients: Any, eid: str, two_environments: bool) -> list[int]:
    """Environment 1 decides the start (and keeps the paused instance); environment 2 takes signal
    b_go and branch B's three steps; environment 1, on its cached state, takes a_go: branch A runs its
    inline step and asks for its sleep; that commit loses, and environment 1 reloads and decides
    again. Then the sleep's wake, decided by a third environment that starts now (nothing cached:
    a cold replay, which on the old code parked the execution with NON_DETERMINISM). Returns the
    attempts after which environment 1 lost a commit."""
    env1 = aws.services()
    env2 = environment(clock, clients) if two_environments else env1
    env3 = environment(clock, clients) if two_environments else env1
    for svc in {id(env1): env1, id(env2): env2, id(env3): env3}.values():
        svc.engine.code_runtime = CodeRuntime()  # its own paused instances (a process of its own)
    lost: list[int] = []
    env1.engine.backoff = lost.append  # called once per lost commit race
    RUNS.clear()
    assert cloud.api("POST", "/executions", {"workflow": "f5-branches", "id": eid, "input": {}})[0] == 201
    decide_in(cloud, env1)
    assert cloud.api("POST", f"/executions/{eid}/signals/b_go", {"payload": 1})[0] == 202
    decide_in(cloud, env2)
    assert cloud.api("POST", f"/executions/{eid}/signals/a_go", {"payload": 2})[0] == 202
    decide_in(cloud, env1)
    clock.advance(17 * 60_000)
    with running_in(env1):
        cloud.invoke("timers", load_event("timers_schedule.json"))
    if two_environments:
        default_runtime().forget()  # a new process: the process's own runtime holds nothing either
    decide_in(cloud, env3)
    return lost


def check_finding_5(cloud: Any, eid: str) -> None:
    events = history(cloud, eid)
    parked = [e for e in events if e["type"] == "ExecutionParked"]
    assert not parked, parked[0]
    kinds = {kind for kind, _ in A_EVENTS}
    a_events = [(e["type"], e.get("step")) for e in events
                if str(e.get("step", "")).startswith(A) and e["type"] in kinds]
    # branch A's calls, in the order the code makes them: the sleep only after the step's result
    assert a_events == A_EVENTS, a_events
    status, desc = cloud.api("GET", f"/executions/{eid}")
    assert (desc["status"], desc.get("output")) == ("COMPLETED", [2, [0, 10, 20]]), desc
    assert RUNS["bump:1"] >= 1  # at_least_once: once more after the lost commit is allowed


def test_finding_5_a_branch_does_not_resume_past_a_lost_commit(cloud: Any, clock: Any, clients: Any,
                                                                f5_deployed: None) -> None:
    lost = play_finding_5(cloud, clock, clients, "f5-two", two_environments=True)
    assert lost == [0], "the scripted sequence must make environment 1 lose one commit"
    check_finding_5(cloud, "f5-two")


def test_finding_5_control_one_environment(cloud: Any, clock: Any, clients: Any, f5_deployed: None) -> None:
    lost = play_finding_5(cloud, clock, clients, "f5-one", two_environments=False)
    assert lost == []
    check_finding_5(cloud, "f5-one")
    assert RUNS["bump:1"] == 1


# ---------------------------------------------------------------------------------------- finding 6
@worker.task("f6.once")
def once(input: Any, ctx: worker.TaskContext) -> Any:
    RUNS[ctx.idempotency_key] += 1
    return {"v": 1}


F6 = {"orbit": 1, "name": "f6", "version": "1", "steps": {"a": {"task": "f6.once", "input": {}}},
      "output": "{% steps.a.output.v %}"}


class Throttle:
    """While on, every DynamoDB request on an execution's partition (EXEC#) fails as the SDK fails one
    throttled past its retries: the worker's history reads (its probe and its look-back)."""

    def __init__(self, client: Any) -> None:
        self.client, self.on, self.refused = client, False, 0

    def __call__(self, params: Any, model: Any, **_: Any) -> None:
        if self.on and b"EXEC#" in (params.get("body") or b""):
            self.refused += 1
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException",
                                         "Message": "Rate of requests exceeds the allowed throughput"}},
                              model.name)

    @contextmanager
    def installed(self) -> Iterator[Throttle]:
        self.client.meta.events.register("before-call.dynamodb", self)
        try:
            yield self
        finally:
            self.client.meta.events.unregister("before-call.dynamodb", self)


def late_copy(cloud: Any, clients: Any, body: str, clock: Any) -> dict[str, Any]:
    """SQS hands the dispatch over again, ten minutes after it was sent, as a first receive."""
    url = cloud.stack.queues["DefaultTaskQueue"]
    clients.sqs.send_message(QueueUrl=url, MessageBody=body)
    m = clients.sqs.receive_message(QueueUrl=url, AttributeNames=["All"],
                                    MessageAttributeNames=["All"])["Messages"][0]
    assert m["Attributes"]["ApproximateReceiveCount"] == "1"
    m["Attributes"]["SentTimestamp"] = str(clock.now - 10 * 60_000)
    return m  # type: ignore[no-any-return]


def hand_over(cloud: Any, clients: Any, m: dict[str, Any]) -> set[str]:
    """The worker function gets the message; it is deleted unless reported failed (then visible again
    at once, as its visibility timeout ran out). Returns the ids reported failed."""
    url = cloud.stack.queues["DefaultTaskQueue"]
    response = cloud.invoke("example_worker", sqs_event([m], cloud.stack.arns["DefaultTaskQueue"]))
    failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
    if m["MessageId"] in failed:
        clients.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"],
                                              VisibilityTimeout=0)
    else:
        clients.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    return failed


def play_finding_6(cloud: Any, clients: Any, clock: Any, eid: str, throttled: bool,
                   probe_known: bool) -> tuple[set[str], list[float], Throttle]:
    """Step a runs and is recorded (the execution completes). Ten minutes later its dispatch comes again
    as a first receive; the worker's history read is throttled (or not: the control). `probe_known`:
    the worker already knows it may read histories (else its probe is throttled too: a fresh
    environment). Returns (ids reported failed, the worker's waits between reads, the throttle)."""
    RUNS.clear()
    svc = aws.services()
    slept: list[float] = []
    svc.worker.sleep = slept.append
    assert cloud.api("POST", "/definitions", F6)[0] == 201
    assert cloud.api("POST", "/executions", {"workflow": "f6", "id": eid, "input": {}})[0] == 201
    cloud.pump("DecisionQueue")
    url = cloud.stack.queues["DefaultTaskQueue"]
    first = clients.sqs.receive_message(QueueUrl=url, AttributeNames=["All"],
                                        MessageAttributeNames=["All"])["Messages"][0]
    assert hand_over(cloud, clients, first) == set()  # a fresh delivery: runs, its result is its record
    cloud.run_until_idle()
    assert cloud.api("GET", f"/executions/{eid}")[1]["status"] == "COMPLETED"
    assert RUNS[f"{eid}:a"] == 1
    if not probe_known:
        svc.worker._history_readable = None  # another worker environment, which has not asked yet
    clock.advance(10 * 60_000)
    copy = late_copy(cloud, clients, first["Body"], clock)
    throttle = Throttle(clients.dynamodb)
    with throttle.installed():
        throttle.on = throttled
        failed = hand_over(cloud, clients, copy)
    return failed, slept, throttle


@pytest.mark.parametrize("probe_known", [True, False], ids=["probe-known", "probe-throttled"])
def test_finding_6_a_late_copy_does_not_run_again_when_the_history_read_is_throttled(
        cloud: Any, clients: Any, clock: Any, probe_known: bool) -> None:
    eid = f"f6-{int(probe_known)}"
    failed, slept, throttle = play_finding_6(cloud, clients, clock, eid, True, probe_known)
    assert RUNS[f"{eid}:a"] == 1, "the late copy ran the task again"
    assert len(failed) == 1, "the unanswered question must send the message back to the queue"
    assert slept == [*dedupe.READ_BACKOFF_S] and throttle.refused >= dedupe.READ_ATTEMPTS
    # The read works again: the copy comes back (a redelivery now), finds the attempt answered, is acked.
    url = cloud.stack.queues["DefaultTaskQueue"]
    again = clients.sqs.receive_message(QueueUrl=url, AttributeNames=["All"],
                                        MessageAttributeNames=["All"])["Messages"][0]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"
    assert hand_over(cloud, clients, again) == set()
    assert RUNS[f"{eid}:a"] == 1
    assert cloud.depth("DefaultTaskQueue") == 0 and cloud.depth("DefaultTaskDLQ") == 0
    events = history(cloud, eid)
    assert [e["type"] for e in events].count("StepSucceeded") == 1
    assert "StaleResultIgnored" not in [e["type"] for e in events]


def test_finding_6_control_the_late_copy_is_acknowledged_when_the_history_reads(
        cloud: Any, clients: Any, clock: Any) -> None:
    failed, slept, throttle = play_finding_6(cloud, clients, clock, "f6-ctl", False, True)
    assert failed == set() and slept == [] and throttle.refused == 0
    assert RUNS["f6-ctl:a"] == 1
    assert cloud.depth("DefaultTaskQueue") == 0
