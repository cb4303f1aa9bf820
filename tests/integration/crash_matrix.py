"""The crash-point matrix: a reference run, then one run per crash point, each checked for the invariants.

Invariants after a crash at any call (crash_world.World.run settles the system first):
- the execution ends COMPLETED with the reference run's output, and the index lists it COMPLETED;
- every history (parent and child) has seqs 1..n: no gap, no fork; one terminal event, last;
- each step succeeded exactly once; no StepScheduled twice for one (step, attempt);
- each task side effect ran at most once per (idempotency key, attempt), except a run whose worker
  died before any result left the process (the function ran, nothing recorded it: at-least-once);
- the DLQs and the queues are empty;
- every item the ended executions left (commits, snapshot, index row, hooks, payload references)
  carries its expiry, and none of their timers is left.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from crash_points import Call, CrashPoint, Recorder, crash_points
from crash_world import EXECUTION, REALISTIC, RUNS, Scenario, World, fresh_world
from orbit.errors import OrbitError

RECORDER = Recorder()
TERMINAL = ("WorkflowCompleted", "WorkflowFailed", "WorkflowCancelled", "WorkflowTimedOut")


@dataclass
class Reference:
    scenario: Scenario
    calls: list[Call]
    output: Any
    runs: Counter[tuple[str, int]]


@dataclass
class Outcome:
    point: CrashPoint | None
    call: Call | None
    problems: list[str] = field(default_factory=list)
    reruns_after_death: int = 0  # runs allowed by the at-least-once exception
    crashes: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self) -> str:
        head = f"crash {self.point} at {self.call}"
        return head + ("" if self.ok else ":\n    " + "\n    ".join(self.problems))


def check(world: World, output: Any) -> tuple[list[str], int]:
    """The invariants, as a list of what is wrong (empty: all hold) and the allowed re-runs used."""
    engine = world.container().engine  # a cold one: everything read from the table
    problems: list[str] = []
    desc = engine.describe(EXECUTION)
    if desc["status"] != "COMPLETED" or desc.get("output") != output:
        problems.append(f"execution ended {desc['status']} with output {desc.get('output')!r} "
                        f"(error {desc.get('error')!r}); the reference ended COMPLETED with {output!r}")
    sc = world.scenario
    parent = engine.history(EXECUTION)
    children = sorted({(e["child_id"], e["workflow"]) for e in parent if e["type"] == "ChildStarted"})
    forks = [e["fork_id"] for e in parent if e["type"] == "ForkCreated"]
    if sc.recover is not None and sc.recover[0] == "fork" and forks != [sc.recover[1]["id"]]:
        problems.append(f"the original links to the forks {forks}, not to [{sc.recover[1]['id']!r}]")
    for fork in forks:
        desc = engine.describe(fork)
        if desc["status"] != "COMPLETED" or desc.get("output") != output:
            problems.append(f"fork {fork} ended {desc['status']} with output {desc.get('output')!r}")
        children += sorted({(e["child_id"], e["workflow"]) for e in engine.history(fork)
                            if e["type"] == "ChildStarted"})
    for eid, workflow in [(EXECUTION, sc.workflow), *[(f, sc.workflow) for f in forks], *children]:
        try:
            events = parent if eid == EXECUTION else engine.history(eid)
        except OrbitError as e:  # a child whose start was lost
            problems.append(f"{eid}: no history ({e})")
            continue
        problems += _check_history(eid, sc.steps(workflow), events)
    listed = {e.execution_id: e.status for e in engine.list(workflow=sc.workflow)[0]}
    expected = {eid: "COMPLETED" for eid in [EXECUTION, *forks]}
    if listed != expected:
        problems.append(f"the index lists {listed}, not {expected}")
    allowed = Counter(k for c in world.crashes for k in c.interrupted)
    for key, n in sorted(RUNS.items()):
        if n > 1 + allowed[key]:
            problems.append(f"task {key[0]} attempt {key[1]} ran {n} times "
                            f"({allowed[key]} re-run(s) allowed after a worker died mid-task)")
    problems += _check_retention(world, {EXECUTION, *(eid for eid, _ in children)})
    problems += _check_archive(engine, [EXECUTION, *forks, *(eid for eid, _ in children)])
    problems += _check_attributes(engine, sc)
    problems += _check_slots(world)
    depths = {q: _depth(world, url) for q, url in world.stack.queues.items()}
    if any(depths.values()) or world.parked:
        problems.append(f"messages left: {depths}, parked {len(world.parked)}")
    used = sum(min(max(0, n - 1), allowed[k]) for k, n in RUNS.items())
    return problems, used


def _check_history(eid: str, steps: list[str], events: list[dict[str, Any]]) -> list[str]:
    out = []
    seqs = [e["seq"] for e in events]
    if seqs != list(range(1, len(seqs) + 1)):
        out.append(f"{eid}: history seqs are not 1..{len(seqs)}: {seqs}")
    # One terminal event, last (the link to a fork may follow it); a redriven execution ended once
    # more before each redrive.
    ends = [e["type"] for e in events if e["type"] in TERMINAL]
    redrives = sum(e["type"] == "ExecutionRedriven" for e in events)
    final = [e["type"] for e in events if e["type"] != "ForkCreated"][-1:]
    if ends[-1:] != ["WorkflowCompleted"] or "WorkflowCompleted" in ends[:-1] or len(ends) != redrives + 1 \
            or final != ["WorkflowCompleted"]:
        out.append(f"{eid}: terminal events {ends}, last event {final}")
    # Every step, and every unit a `for` step fanned out to (`each[0]`, ...), succeeds once (a fork
    # takes the units that ended before its step from the original instead).
    # ... and so does every on_signal instance and each of its units (`on_signal:NAME@SEQ[:step]`).
    units = set(steps) | {e["step"] for e in events if e["type"] in ("StepScheduled", "HandlerStarted")}
    # (a timer ends with TimerFired; an instance's compute steps are never scheduled)
    succeeded = Counter(e["step"] for e in events if e["type"] in ("StepSucceeded", "TimerFired"))
    units |= {u for u in succeeded if u.startswith("on_signal:")}
    succeeded.update(k for e in events if e["type"] == "ExecutionForked" for k in e["units"])
    strays = {u for u in units if u not in steps and u.split("[", 1)[0] not in steps
              and not u.startswith("on_signal:")}
    if any(succeeded[u] != 1 for u in units) or set(succeeded) - units or strays:
        out.append(f"{eid}: StepSucceeded per unit {dict(succeeded)}, expected once each of "
                   f"{sorted(units)}")
    # A step attempt is decided once; a worker that vanished mid-attempt is recorded as
    # StepAttemptUncertain followed by StepScheduled(redelivery=True) for the same attempt.
    scheduled = Counter((e["step"], e["attempt"]) for e in events
                        if e["type"] == "StepScheduled" and not e.get("redelivery"))
    twice = {k: v for k, v in scheduled.items() if v > 1}
    if twice:
        out.append(f"{eid}: StepScheduled more than once for (step, attempt): {twice}")
    uncertain: set[tuple[Any, Any]] = set()
    for e in events:
        attempt = (e.get("step"), e.get("attempt"))
        if e["type"] == "StepAttemptUncertain":
            uncertain.add(attempt)
        if e["type"] == "StepScheduled" and e.get("redelivery") and attempt not in uncertain:
            out.append(f"{eid}: seq {e['seq']} re-schedules {e['step']} attempt {e['attempt']} as a "
                       "redelivery without a StepAttemptUncertain before it")
    return out


def _check_retention(world: World, ended: set[str]) -> list[str]:
    """Retention survived the crash: the recovery gave every item of the ended executions its expiry,
    the same second on each of an execution's own items (commits, snapshot, index rows, payload
    references, hooks: readers judge by the newest commit), never NO_EXPIRY (a young end keeps the
    provisional expiry its items were written with, service/retention.py). Dedupe records and a
    worker's hold expire on their own clocks, no later than the retention."""
    from orbit.service.retention import NO_EXPIRY_S

    out = []
    seconds: dict[str, set[int]] = {}
    kw: dict[str, Any] = {"TableName": world.stack.table}
    while True:
        page = world.clients.dynamodb.scan(**kw)
        for item in page["Items"]:
            pk, sk = item["pk"]["S"], item["sk"]["S"]
            if pk.startswith("EXEC#"):
                owner = pk[5:]
            elif pk.startswith("BLOB#") and sk.startswith(("R#", "W#")):
                owner = sk[2:]
            elif pk.startswith("TIMERPTR#"):
                owner = pk[9:]
            else:  # hooks and timer items name their execution
                owner = item.get("execution_id", {}).get("S")
            if owner not in ended:
                continue
            if pk.startswith("TIMER"):
                out.append(f"{owner}: timer item {pk} / {sk} left after the execution ended")
            elif "expires_at" not in item:
                out.append(f"{owner}: {pk} / {sk} has no expiry")
            elif not pk.startswith("IDEM#") and not sk.startswith("W#"):
                seconds.setdefault(owner, set()).add(int(item["expires_at"]["N"]))
        if "LastEvaluatedKey" not in page:
            break
        kw["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    for owner, found in sorted(seconds.items()):
        if len(found) != 1 or NO_EXPIRY_S in found:
            out.append(f"{owner}: its items expire at {sorted(found)}, not at one second before NO_EXPIRY")
    return out


def _check_archive(engine: Any, ended: list[str]) -> list[str]:
    """The archive survived the crash: every ended execution's object holds exactly its history."""
    from orbit.service.archive import decode_archive

    out = []
    for eid in ended:
        data = engine.archive.get(eid)
        if data is None:
            out.append(f"{eid}: ended without an archive")
        elif [r.to_dict() for r in decode_archive(data, eid).records] != engine.recorded_history(eid):
            out.append(f"{eid}: its archive is not its history")
    return out


def _check_attributes(engine: Any, sc: Scenario) -> list[str]:
    """Every search attribute the execution ended with finds it through the index."""
    block = next((d.get("attributes") for d in sc.definitions if d["name"] == sc.workflow), None)
    if not block:
        return []
    attributes = engine.describe(EXECUTION).get("attributes") or {}
    if set(attributes) != set(block):
        return [f"attributes {attributes} lack some of {sorted(block)}"]
    return [f"--where {k}={v!r} does not list {EXECUTION}" for k, v in attributes.items()
            if EXECUTION not in [e.execution_id for e in engine.list(where={k: v})[0]]]


def _check_slots(world: World) -> list[str]:
    """Flow control (docs/flow-control.md): once all is quiet no slot is held, nobody waits, no
    granted ticket is kept: a slot lost to a crash is a bug."""
    from orbit.adapters.dynamodb.limits import DynamoLimits

    return [f"slots lost on {c.scope}: held by {sorted(c.holders)}, {c.waiting_total} waiting, "
            f"{len(c.granted)} granted tickets kept"
            for c in DynamoLimits(world.clients.dynamodb, world.stack.table).list_counters()
            if c.holders or c.waiting_total or c.granted]


def _depth(world: World, url: str) -> int:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
             "ApproximateNumberOfMessagesDelayed"]
    attrs = world.clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(v) for v in attrs.values())


def reference_run(clients: Any, scenario: Scenario = REALISTIC) -> Reference:
    with fresh_world(clients, RECORDER, scenario, None) as world:
        world.run()
        calls = list(RECORDER.calls)
        output = world.container().engine.describe(EXECUTION).get("output")
        problems, _ = check(world, output)
        assert not problems and not world.crashes, problems
        return Reference(scenario, calls, output, Counter(RUNS))


def run_point(clients: Any, ref: Reference, point: CrashPoint) -> Outcome:
    """The workflow again, in a fresh stack, dying at `point`; then the invariants."""
    outcome = Outcome(point, ref.calls[point.index])
    with fresh_world(clients, RECORDER, ref.scenario, point) as world:
        try:
            world.run()
        except AssertionError as e:
            outcome.problems.append(f"the run failed: {e}")
        calls = RECORDER.calls
        outcome.crashes = len(world.crashes)
        seen = min(len(calls), point.index + 1)
        if calls[:seen] != ref.calls[:seen]:
            first = next(i for i in range(seen) if calls[i] != ref.calls[i])
            outcome.problems.append(f"the run diverged from the reference before the crash, at call "
                                    f"#{first}: {calls[first]} instead of {ref.calls[first]}")
        elif RECORDER.fired is None and not world.crashes:
            outcome.problems.append(f"the crash never fired (the run made {len(calls)} calls)")
        if not outcome.problems:
            problems, outcome.reruns_after_death = check(world, ref.output)
            outcome.problems += problems
    return outcome


def sample(ref: Reference, seed: int = 7, before_share: float = 1 / 3) -> list[CrashPoint]:
    """What the test suite runs: every write/send call crashing after it landed, and a seeded
    sample of the `before` points (the full matrix: `--all`)."""
    writes = crash_points(ref.calls, writes_only=True)
    after = [p for p in writes if p.variant == "after"]
    before = [p for p in crash_points(ref.calls) if p.variant == "before"]
    rng = random.Random(seed)
    return sorted(after + rng.sample(before, round(len(before) * before_share)),
                  key=lambda p: (p.index, p.variant))


def ensure_env() -> None:
    """What conftest.py sets, for running this as a script."""
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_SECURITY_TOKEN": "testing", "AWS_SESSION_TOKEN": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "1",
                 "POWERTOOLS_METRICS_NAMESPACE": "Orbit", "POWERTOOLS_SERVICE_NAME": "orbit",
                 "POWERTOOLS_LOG_LEVEL": "ERROR"}.items():
        os.environ.setdefault(k, v)
    os.environ.pop("AWS_ENDPOINT_URL", None)


def main(argv: list[str]) -> int:
    """`--all`: every crash point (reads `before` only); `--twice`: every write/send crashing after
    it landed and again at the same call of the recovery; default: the test suite's sample."""
    ensure_env()
    from aws_resources import Clients

    clients = Clients()
    t0 = time.perf_counter()
    ref = reference_run(clients)
    points = crash_points(ref.calls) if "--all" in argv else sample(ref)
    if "--twice" in argv:  # every write/send crashing after it landed, and again in the recovery
        points = [CrashPoint(p.index, p.variant, again=True) for p in crash_points(ref.calls, True)
                  if p.variant == "after"]
    kinds = Counter(f"{c.handler} {c.service}.{c.op}" for c in ref.calls)
    print(f"reference run: {len(ref.calls)} calls by the handlers, {time.perf_counter() - t0:.2f} s")
    for k, v in sorted(kinds.items()):
        print(f"  {v:4d}  {k}")
    failed: list[Outcome] = []
    reran: list[Outcome] = []
    twice = 0
    t1 = time.perf_counter()
    for p in points:
        o = run_point(clients, ref, p)
        twice += o.crashes == 2
        reran += [o] if o.reruns_after_death else []
        if not o.ok:
            failed.append(o)
            print(o, flush=True)
    took = time.perf_counter() - t1
    print(f"task re-runs allowed because the worker died before its result left it, at {len(reran)} points:")
    for o in reran:
        print(f"  {o.point} {o.call}: {o.reruns_after_death}")
    print(f"crash points run: {len(points)}, passed: {len(points) - len(failed)}, failed: {len(failed)} "
          f"({took:.1f} s, {took / max(1, len(points)) * 1000:.0f} ms each)"
          + (f"; {twice} of them crashed twice" if "--twice" in argv else ""))
    return 1 if failed else 0
