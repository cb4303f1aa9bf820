"""The crash matrix of durable functions on AWS (orbit/aws/durable.py, durable_answers.py): Orbit's
process dies before and after each write (every commit, every index row) and each send (every
`invoke` and `fire` message, every asynchronous Lambda invoke) on the path of a function with two
steps and a wait, in the decider (handling a decision message or an invocation's record from the
answer queue) or in the durable API's handler. The message or record being handled comes back (SQS
redelivers it); an SDK call that died is retried with the same ClientToken (botocore retries a
5xx). Nothing is lost: the execution ends SUCCEEDED, each step succeeds once and runs once, and no
message is left behind."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from orbit.adapters.memory import ManualClock, MemoryHistoryStore
from orbit.aws.durable import AwsDurable, DeployedFunctions
from orbit.aws.durable_answers import handle_answer, invocation_record
from orbit.service.ports import Commit, IndexEntry

PREFIX = "orbit-durable-"


class Crash(BaseException):
    """The process died here (nothing may catch it as an error)."""


class Points:
    def __init__(self, point: tuple[int, str] | None) -> None:
        self.point, self.n, self.names = point, 0, []

    def at(self, what: str, go: Any) -> Any:
        self.n += 1
        self.names.append(what)
        if self.point == (self.n, "before"):
            self.point = None
            raise Crash
        out = go()
        if self.point == (self.n, "after"):
            self.point = None
            raise Crash
        return out


class Store(MemoryHistoryStore):
    def __init__(self, points: Points) -> None:
        super().__init__()
        self.points = points

    def commit(self, execution_id: str, commit: Commit, expires_at_s: int | None = None,
               provisional: bool = False) -> None:
        kinds = ",".join(type(r.event).__name__ for r in commit.events)
        self.points.at(f"commit({kinds})", lambda: super(Store, self).commit(execution_id, commit))

    def put_index(self, entry: IndexEntry, expires_at_s: int | None = None,
                  provisional: bool = False) -> None:
        self.points.at(f"index({entry.status})", lambda: super(Store, self).put_index(entry))


class Queue:
    def __init__(self, clock: ManualClock, points: Points) -> None:
        self.clock, self.points, self.items = clock, points, []

    def send_decision(self, message: dict[str, Any], delay_s: int = 0) -> None:
        body = json.loads(json.dumps(message))
        self.points.at(f"send({body['op']})",
                       lambda: self.items.append([self.clock.now_ms() + delay_s * 1000, body, 1]))


class Function:
    """Step a, a 30 s wait, step b, checkpointing as the SDK does (a died call is retried)."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str, str], int] = {}  # (execution, step) -> runs
        self.durable: AwsDurable | None = None
        self.tokens = itertools.count()
        self.queue: Queue | None = None
        self.points: Points | None = None

    def invoke_async(self, name: str, event: dict[str, Any]) -> str:
        """Lambda's asynchronous invoke (a send of Orbit's: crashed at): the function runs after
        the decider returned, and its record lands on the answer queue."""
        assert self.queue is not None and self.points is not None
        queue = self.queue
        self.points.at("invoke(Event)", lambda: None)
        out, crash = self.invoke(name, event)
        record = invocation_record(f"arn:aws:lambda:us-east-1:1:function:{name}", "r", event, out, crash)
        queue.items.append([queue.clock.now_ms() + 1000, json.loads(json.dumps(record)), 1])
        return "r"

    def invoke(self, name: str, event: dict[str, Any]) -> tuple[Any, Any]:
        assert self.durable is not None
        arn, token = event["DurableExecutionArn"], event["CheckpointToken"]
        ops = {o["Id"]: o for o in event["InitialExecutionState"]["Operations"]}

        def cp(update: dict[str, Any]) -> None:
            nonlocal token
            ct = f"ct{next(self.tokens)}"
            for _ in range(2):
                try:
                    got = self.durable.checkpoint(arn, token, ct, [update])  # type: ignore[union-attr]
                except Crash:
                    continue  # the URL's function died: a 502, retried with the same ClientToken
                token = got.get("CheckpointToken", token)
                return

        for sid in ("a", "b"):
            if ops.get(sid, {}).get("Status") == "SUCCEEDED":
                continue
            if sid == "b" and ops.get("w", {}).get("Status") != "SUCCEEDED":
                if "w" not in ops:
                    cp({"Id": "w", "Type": "WAIT", "Action": "START", "WaitOptions": {"WaitSeconds": 30}})
                return {"Status": "PENDING"}, None
            cp({"Id": sid, "Type": "STEP", "SubType": "Step", "Action": "START"})
            self.runs[(arn, sid)] = self.runs.get((arn, sid), 0) + 1
            cp({"Id": sid, "Type": "STEP", "SubType": "Step", "Action": "SUCCEED", "Payload": f'"{sid}"'})
        return {"Status": "SUCCEEDED", "Result": '"done"'}, None


def run(point: tuple[int, str] | None) -> tuple[list[Any], Function, Queue, Points]:
    points, clock = Points(point), ManualClock()
    counter = itertools.count()
    store = Store(points)
    svc = DeployedFunctions(store, clock, lambda: f"id{next(counter)}", prefix=PREFIX)
    queue, fn = Queue(clock, points), Function()
    durable = AwsDurable(svc, queue, fn, clock)
    fn.durable, fn.queue, fn.points = durable, queue, points
    try:
        durable.invoke(f"{PREFIX}f", "{}", False)
    except Crash:  # the API died: the caller sees a 5xx and invokes again (a new execution)
        durable.invoke(f"{PREFIX}f", "{}", False)
    for _ in range(20_000):
        if not queue.items:
            break
        queue.items.sort(key=lambda x: x[0])
        item = queue.items.pop(0)
        clock.advance(max(0, item[0] - clock.now_ms()))
        try:
            if "requestContext" in item[1]:  # an invocation's record, from the answer queue
                handle_answer(durable, item[1], item[2])
            else:
                durable.handle(item[1], item[2])
        except Crash:  # the decider died: the message comes back after the visibility timeout
            queue.items.append([clock.now_ms() + 180_000, item[1], item[2] + 1])
    return [svc.load_id(eid)[0] for eid in store._commits], fn, queue, points


WRITES = len(run(None)[3].names)


def test_the_path_has_writes_and_sends_to_crash_at() -> None:
    names = run(None)[3].names
    assert WRITES >= 10 and any(n.startswith("send(invoke)") for n in names) \
        and any(n.startswith("send(fire)") for n in names), names
    assert names.count("invoke(Event)") == 2, names  # each invocation queued, never waited for


@pytest.mark.parametrize("point", [(n, w) for n in range(1, WRITES + 1) for w in ("before", "after")])
def test_a_crash_loses_nothing_and_runs_no_step_twice(point: tuple[int, str]) -> None:
    executions, fn, queue, points = run(point)
    where = points.names[point[0] - 1] if point[0] <= len(points.names) else "?"
    assert executions and len(executions) <= 2, where  # a start that died after its commit: two
    for s in executions:  # every execution that was started ends, each step run once
        assert s.status == "SUCCEEDED" and s.result == '"done"', (where, s.status, s.error)
        assert fn.runs.get((s.arn, "a")) == 1 and fn.runs.get((s.arn, "b")) == 1, (where, fn.runs)
        succeeded = [e.get("Id") for e in s.events if e.get("EventType") == "StepSucceeded"]
        assert sorted(succeeded) == ["a", "b"], where
    assert queue.items == [], where
