"""The crash matrix of the durable-function checkpoint path: Orbit dies before and after each write
(the history commit of every API call, the index row after it) of a durable function with two
steps and a wait, then recovers as the runtime does (the timer fires what is due: an invocation
that never answered ends and the handler is invoked again). Nothing is lost and no step runs more
often than its semantics allow: an at-least-once step runs again only when the crash fell between
running it and committing its result, and every step succeeds exactly once in the history."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from orbit.adapters.memory import ManualClock, MemoryHistoryStore
from orbit.core.history.durable import DurableState
from orbit.core.history.durable_ops import INVOCATION_TIMEOUT_S
from orbit.errors import OrbitError
from orbit.service.durable import DurableApiError, DurableFunction, DurableService
from orbit.service.ports import Commit, IndexEntry

STEPS = ("s1", "s2")


class Crash(BaseException):
    """Orbit's process died at this write (nothing may catch it as an error)."""


class CrashingStore(MemoryHistoryStore):
    def __init__(self, point: tuple[int, str] | None) -> None:
        super().__init__()
        self.point, self.n, self.writes = point, 0, []

    def _write(self, what: str, go: Any) -> Any:
        self.n += 1
        self.writes.append(what)
        if self.point == (self.n, "before"):
            raise Crash
        out = go()
        if self.point == (self.n, "after"):
            raise Crash
        return out

    def commit(
        self, execution_id: str, commit: Commit, expires_at_s: int | None = None, provisional: bool = False
    ) -> None:
        kinds = ",".join(type(r.event).__name__ for r in commit.events)
        self._write(f"commit({kinds})", lambda: super(CrashingStore, self).commit(execution_id, commit))

    def put_index(
        self, entry: IndexEntry, expires_at_s: int | None = None, provisional: bool = False
    ) -> None:
        self._write(f"index({entry.status})", lambda: super(CrashingStore, self).put_index(entry))


def run(point: tuple[int, str] | None) -> tuple[CrashingStore, DurableService, str, dict[str, int]]:
    """Drive one execution to its end through the API, as the SDK and the runtime would, with
    Orbit dying at `point`; returns what the step bodies did."""
    store, clock = CrashingStore(point), ManualClock()
    counter = itertools.count()
    svc = DurableService(store, clock, lambda: f"id{next(counter)}")
    svc.register(DurableFunction("f", "python", "m.h"))
    runs = {s: 0 for s in STEPS}
    arn = ""
    for _ in range(12):  # invocations, recoveries included
        try:
            if not arn:
                arn = svc.start("f", "{}", arn=None).arn
            s, _ = svc.load(arn)
            if s.ended:
                break
            invoke(svc, arn, runs, clock)
        except Crash:
            clock.advance(INVOCATION_TIMEOUT_S * 1000 + 1000)  # the recovering timer, after the timeout
            if arn:
                try:
                    svc.recover(arn)
                except Crash:  # a crash point is hit once: the process that recovers is another
                    pass
            elif store.n and store.point and store.point[1] == "after":
                # the start itself landed but its caller never learned the ARN: the caller's
                # retry starts another execution (Invoke is not idempotent without a name)
                arn = next(iter(store._commits), "")
                arn = svc.load_id(arn)[0].arn if arn else ""
            store.point = None
            continue
    return store, svc, arn, runs


def invoke(svc: DurableService, arn: str, runs: dict[str, int], clock: ManualClock) -> None:
    begun = svc.begin_invocation(arn)
    if begun is None:
        clock.advance(1_000)
        svc.recover(arn)
        return
    s, event = begun
    token = event["CheckpointToken"]
    ops = {o["Id"]: o for o in event["InitialExecutionState"]["Operations"]}

    def checkpoint(update: dict[str, Any]) -> None:
        nonlocal token
        _, answer = svc.checkpoint(arn, token, None, [update])
        token = answer.get("CheckpointToken", token)

    for sid in STEPS:
        if ops.get(sid, {}).get("Status") == "SUCCEEDED":
            continue  # replay: the result comes from the history
        if sid == "s2":
            w = ops.get("w1")
            if w is None:
                checkpoint({"Id": "w1", "Type": "WAIT", "Action": "START", "WaitOptions": {"WaitSeconds": 5}})
                svc.finish_invocation(arn, s.request_id or "", {"Status": "PENDING"})
                clock.advance(5_000)
                svc.fire(arn)
                return
            if w.get("Status") != "SUCCEEDED":
                svc.finish_invocation(arn, s.request_id or "", {"Status": "PENDING"})
                clock.advance(5_000)
                svc.fire(arn)
                return
        if ops.get(sid, {}).get("Status") != "STARTED":
            checkpoint({"Id": sid, "Type": "STEP", "SubType": "Step", "Action": "START"})
        runs[sid] += 1  # the step body runs (at least once per attempt)
        checkpoint({"Id": sid, "Type": "STEP", "SubType": "Step", "Action": "SUCCEED", "Payload": f'"{sid}"'})
    svc.finish_invocation(arn, s.request_id or "", {"Status": "SUCCEEDED", "Result": '"done"'})


def points() -> list[tuple[int, str]]:
    store, _, _, _ = run(None)
    return [(i, v) for i in range(1, store.n + 1) for v in ("before", "after")]


def check(state: DurableState, runs: dict[str, int], store: CrashingStore, point: tuple[int, str]) -> None:
    assert state.status == "SUCCEEDED", (point, state.status)
    kinds = [e["EventType"] for e in state.events]
    for sid in STEPS:
        ok = [e for e in state.events if e.get("Id") == sid and e["EventType"] == "StepSucceeded"]
        assert len(ok) == 1, (point, kinds)
        assert 1 <= runs[sid] <= 2, (point, runs)
    assert kinds.count("ExecutionSucceeded") == 1 and kinds.count("WaitSucceeded") == 1, (point, kinds)
    assert [e["EventId"] for e in state.events] == list(range(1, len(state.events) + 1))
    rows, _ = store.list_executions(workflow="f")
    assert [r.status for r in rows if r.execution_id == state.execution_id] == ["COMPLETED"], point


def test_without_a_crash_each_step_runs_once() -> None:
    store, svc, arn, runs = run(None)
    check(svc.load(arn)[0], runs, store, (0, "none"))
    assert runs == {"s1": 1, "s2": 1}
    assert store.n >= 10  # every API call of the path is a write of its own


@pytest.mark.parametrize("point", points(), ids=lambda p: f"{p[0]}-{p[1]}")
def test_a_crash_at_any_write_loses_nothing_and_runs_no_step_twice_beyond_its_semantics(
    point: tuple[int, str],
) -> None:
    store, svc, arn, runs = run(point)
    try:
        state = svc.load(arn)[0]
    except (DurableApiError, OrbitError):
        pytest.fail(f"{point}: the execution was lost")
    check(state, runs, store, point)
    rerun = [s for s in STEPS if runs[s] == 2]
    if rerun:  # only a crash between a step's START and its SUCCEED commit may run it again
        crashed_at = store.writes[point[0] - 1]
        assert "DurableCheckpointed" in crashed_at or "DurableInvocation" in crashed_at, (point, crashed_at)
