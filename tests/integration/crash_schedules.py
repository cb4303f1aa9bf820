"""The crash matrix for schedules: a schedule fires on EventBridge Scheduler (moto, fired by this driver
on the virtual clock) into the decision queue; the real API and decider handlers claim, start, advance.

Scenario: every 15 minutes, overlap `buffer_one`, runs that sleep 20 minutes, for 100 minutes of
virtual time: runs start at their occurrence or when the run before ends (the buffered one), other
occurrences are skipped. A crash before or after any call of any handler must leave exactly the
reference run's executions (same ids), each started once and COMPLETED, the same schedule counts,
nothing pending, the AWS schedule still armed for the next fire, and empty queues.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from aws_resources import Clients, create_stack
from crash_points import Call, CrashPoint, Recorder
from crash_world import World
from moto import mock_aws
from orbit.aws import wiring as aws

SLOW = {"orbit": 1, "name": "crash-sched", "version": "1",
        "steps": {"work": {"sleep": "20m"}, "done": {"compute": "{% input.n %}", "after": ["work"]}}}
SCHEDULE = {"id": "every15", "workflow": "crash-sched", "input": {"n": 7}, "every": "15m",
            "overlap": "buffer_one", "catchup_window": "1h"}
GROUP = "orbit-crash-schedules"
ROLE = "arn:aws:iam::123456789012:role/orbit-scheduler"
RUN_FOR_MS = 100 * 60_000


class SchedulerClients(Clients):
    def __init__(self) -> None:
        import boto3

        super().__init__()
        self.scheduler = boto3.client("scheduler", region_name="us-east-1")


class ScheduleWorld(World):
    def container(self, function: str | None = None) -> aws.Services:
        svc = super().container(function)
        svc.__dict__["scheduler"] = self.clients.scheduler
        return svc

    def fire_schedules(self, until_ms: int) -> bool:
        """EventBridge Scheduler: send each due one-time schedule's input to the decision queue, once."""
        sched = self.clients.scheduler
        fired = False
        for s in sched.list_schedules(GroupName=GROUP).get("Schedules", []):
            got = sched.get_schedule(Name=s["Name"], GroupName=GROUP)
            expr = got["ScheduleExpression"]
            at = int(datetime.fromisoformat(expr[3:-1]).replace(tzinfo=ZoneInfo("UTC")).timestamp() * 1000)
            key = (s["Name"], expr)
            if got["State"] == "ENABLED" and at <= min(self.clock.now, until_ms) and key not in self.sent:
                self.clients.sqs.send_message(QueueUrl=self.stack.queues["DecisionQueue"],
                                              MessageBody=got["Target"]["Input"])
                self.sent.add(key)
                fired = True
        return fired

    def next_schedule_ms(self) -> int | None:
        sched = self.clients.scheduler
        out = []
        for s in sched.list_schedules(GroupName=GROUP).get("Schedules", []):
            got = sched.get_schedule(Name=s["Name"], GroupName=GROUP)
            expr = got["ScheduleExpression"]
            if (s["Name"], expr) not in self.sent:
                out.append(int(datetime.fromisoformat(expr[3:-1]).replace(tzinfo=ZoneInfo("UTC")).timestamp()
                               * 1000))
        return min(out, default=None)

    run_for_ms = RUN_FOR_MS

    def run(self, max_rounds: int = 600) -> None:
        from harness import load_app

        skew_ms: int = load_app("timers").SKEW_MS
        self.sent: set[tuple[str, str]] = set()
        start = self.clock.now
        end = start + self.run_for_ms
        self.api("POST", "/definitions", SLOW, 201)
        self.api("POST", "/schedules", SCHEDULE, 201)
        for _ in range(max_rounds):
            if self.pump("DecisionQueue") or self.release_due() or self.fire_schedules(end):
                continue
            fire = self.container().table_timers.next_fire_ms()
            if fire is not None and fire + skew_ms <= self.clock.now:
                self.fire_timers()
                continue
            nxt = self.next_schedule_ms()
            later = [p.due_ms for p in self.parked] + ([fire + skew_ms] if fire is not None else []) + \
                ([nxt] if nxt is not None and nxt <= end else [])
            if later:
                self.clock.now = max(self.clock.now, min(later))
                continue
            return
        raise AssertionError(f"the system did not settle in {max_rounds} rounds")


@contextmanager
def schedule_world(clients: SchedulerClients, recorder: Recorder, crash_at: CrashPoint | None
                   ) -> Iterator[ScheduleWorld]:
    saved = dict(os.environ)
    with mock_aws():
        stack = create_stack(clients.dynamodb, clients.sqs, clients.s3)
        clients.scheduler.create_schedule_group(Name=GROUP)
        os.environ.update({**stack.env(), "ORBIT_TIMERS": "table", "ORBIT_SCHEDULE_GROUP": GROUP,
                           "ORBIT_SCHEDULER_ROLE_ARN": ROLE,
                           "ORBIT_DECISION_QUEUE_ARN": stack.arns["DecisionQueue"]})
        try:
            recorder.attach(clients.scheduler)
            yield ScheduleWorld(clients, recorder, stack, None, crash_at)  # type: ignore[arg-type]
        finally:
            recorder.arm(None)
            aws.reset()
            os.environ.clear()
            os.environ.update(saved)


@dataclass
class Result:
    calls: list[Call]
    runs: dict[str, str]  # execution id -> status
    counts: dict[str, int]
    armed: str | None
    problems: list[str] = field(default_factory=list)


def observe(world: ScheduleWorld) -> Result:
    engine = world.container().engine
    desc = engine.schedules.describe("every15")
    runs = {e.execution_id: e.status for e in engine.list(workflow="crash-sched", limit=100)[0]}
    problems = []
    if desc["state"]["running"] or desc["state"]["buffered"]:
        problems.append(f"still running/buffered: {desc['state']}")
    for eid in runs:
        h = engine.history(eid)
        starts = [e for e in h if e["type"] == "WorkflowStarted"]
        if len(starts) != 1 or [e["seq"] for e in h] != list(range(1, len(h) + 1)):
            problems.append(f"{eid}: {len(starts)} WorkflowStarted, seqs {[e['seq'] for e in h]}")
    raw, _ = engine.schedules.store.get("every15")
    if raw.get("pending") or raw.get("cancels"):
        problems.append(f"claimed but never carried out: {raw.get('pending')} {raw.get('cancels')}")
    sqs = world.clients.sqs
    for q, url in world.stack.queues.items():
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages",
                                         "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        if any(int(v) for v in attrs.values()) or world.parked:
            problems.append(f"messages left on {q}: {attrs}, parked {len(world.parked)}")
    armed = engine.schedules.arm.armed("every15")
    return Result(list(world.recorder.calls), runs, dict(desc["state"]["counts"]), armed, problems)


def check(ref: Result, got: Result) -> list[str]:
    """A crash may delay a fire past a run's end (the message comes back after the queue's visibility
    timeout), so `buffer_one` may buffer an occurrence the reference skipped: which runs exist may
    differ by timing. What may not: an occurrence started twice or acted on twice, one lost, a run
    left unfinished, the next fire not armed."""
    out = list(got.problems)
    if set(got.runs.values()) - {"COMPLETED"}:
        out.append(f"runs not COMPLETED: {got.runs}")
    if len(got.runs) != got.counts.get("started", 0):
        out.append(f"{len(got.runs)} runs exist but the schedule counts {got.counts.get('started')} started")

    def acted(counts: dict[str, int]) -> int:
        return counts.get("started", 0) + counts.get("skipped_overlap", 0) - counts.get("buffered", 0)

    if acted(got.counts) != acted(ref.counts) or got.counts.get("missed_catchup"):
        out.append(f"occurrences acted on: {got.counts} vs the reference's {ref.counts}")
    if got.armed != ref.armed:
        out.append(f"AWS schedule armed {got.armed} != reference {ref.armed}")
    return out


def run_once(clients: SchedulerClients, recorder: Recorder, point: CrashPoint | None,
             minutes: int = RUN_FOR_MS // 60_000) -> tuple[Result, Any]:
    with schedule_world(clients, recorder, point) as world:
        world.run_for_ms = minutes * 60_000
        try:
            world.run()
        except AssertionError as e:
            res = Result(list(recorder.calls), {}, {}, None, [f"the run failed: {e}"])
            return res, world.crashes
        return observe(world), list(world.crashes)


def describe_calls(calls: list[Call]) -> str:
    return json.dumps([str(c) for c in calls], indent=1)


def schedule_points(calls: list[Call]) -> list[CrashPoint]:
    """What the test suite runs: after every write of the schedule path (the schedule item, the AWS
    schedule, the scheduled run's start commit and index row, the run-end notice), and before each
    write to the schedule item or the AWS schedule."""
    def on_path(c: Call) -> bool:
        return c.service == "scheduler" or c.detail.startswith(("SCHED", "EXEC")) or "child_done" in c.detail

    out = []
    for i, c in enumerate(calls):
        if c.writes and on_path(c):
            out.append(CrashPoint(i, "after"))
            if c.service == "scheduler" or c.detail.startswith("SCHED"):
                out.append(CrashPoint(i, "before"))
    return out


def main(argv: list[str]) -> int:
    """Run the whole schedule matrix as a script, printing each failing point as it is found."""
    import time

    from crash_matrix import RECORDER, ensure_env
    from crash_points import crash_points

    ensure_env()
    clients = SchedulerClients()
    t0 = time.perf_counter()
    ref, _ = run_once(clients, RECORDER, None)
    assert not ref.problems, ref.problems
    points = crash_points(ref.calls, writes_only=True)
    if "--before" in argv:
        points = crash_points(ref.calls)
    print(f"reference: {len(ref.calls)} calls, {len(points)} points, {len(ref.runs)} runs, "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    failed = 0
    for p in points:
        got, crashes = run_once(clients, RECORDER, p)
        problems = check(ref, got)
        if RECORDER.fired is None and not crashes:
            problems.append("the crash never fired")
        if problems:
            failed += 1
            print(f"{p} at {ref.calls[p.index]}: " + "; ".join(problems), flush=True)
    print(f"{len(points)} points, {failed} failed, {time.perf_counter() - t0:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    import logging
    import sys

    logging.disable(logging.CRITICAL)
    sys.exit(main(sys.argv[1:]))
