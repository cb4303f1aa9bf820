"""The crash matrix for redrive and fork: a crash before and after each write and send of the
recovery (the API call that redrives or forks, and everything that follows it) loses nothing and
runs nothing twice. The invariants are crash_matrix.py's: every execution (original, child, fork)
ends COMPLETED with the reference output, its history is gap-free with one final
WorkflowCompleted (a redriven one ended once before each ExecutionRedriven), each unit succeeded
once (a fork's reused units count as its own), each task attempt ran at most once.
`python tests/integration/test_aws_crash_recovery.py` runs every point of both scenarios.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest
from crash_matrix import Reference, reference_run, run_point
from crash_points import Call, CrashPoint, crash_points
from crash_world import Scenario

KID = {"orbit": 1, "name": "crashmx-fix-kid", "version": "1",
       "steps": {"x": {"task": "crashmx.fixable", "input": {"v": "{% input.v %}", "broken": True}}},
       "output": "{% steps.x.output.v2 %}"}
REDRIVE = Scenario((KID, {
    "orbit": 1, "name": "crashmx-redrive", "version": "1",
    "steps": {
        "first": {"task": "crashmx.double", "input": {"v": "{% input.v %}"}},
        "each": {"for": "{% [1, 2, 3] %}", "task": "crashmx.fixable", "after": ["first"],
                 "input": {"v": "{% item %}", "broken": "{% item = 2 %}"}},
        "kid": {"workflow": "crashmx-fix-kid", "input": {"v": "{% steps.first.output.v2 %}"}},
    },
    "output": {"first": "{% steps.first.output.v2 %}", "each": "{% steps.each.output.v2 %}",
               "kid": "{% steps.kid.output %}"}}), {"v": 5}, recover=("redrive", {"id": "redrive-req-1"}))
FORK = Scenario(({
    "orbit": 1, "name": "crashmx-fork", "version": "1",
    "steps": {
        "a": {"task": "crashmx.double", "input": {"v": "{% input.v %}"}},
        "b": {"task": "crashmx.double", "input": {"v": "{% steps.a.output.v2 %}"}},
        "c": {"task": "crashmx.double", "input": {"v": "{% steps.b.output.v2 %}"}},
    },
    "output": "{% steps.c.output.v2 %}"},), {"v": 1},
    recover=("fork", {"from_step": "b", "id": "crash-1-fork"}))
SCENARIOS = {"redrive": REDRIVE, "fork": FORK}
RECOVERY = {"redrive": Call("api", "dynamodb", "PutItem", "EXEC/C"),
            "fork": Call("api", "dynamodb", "PutItem", "EXEC/C")}


def recovery_points(ref: Reference, name: str, before_share: float = 1.0) -> list[CrashPoint]:
    """Every write/send from the recovery's API call on, crashing before and after it landed
    (`before_share` < 1: a seeded sample of the `before` ones)."""
    start = recovery_start(ref)
    points = [p for p in crash_points(ref.calls, writes_only=True) if p.index >= start]
    after = [p for p in points if p.variant == "after"]
    before = [p for p in points if p.variant == "before"]
    if before_share < 1:
        before = random.Random(5).sample(before, round(len(before) * before_share))
    return sorted(after + before, key=lambda p: (p.index, p.variant))


def recovery_start(ref: Reference) -> int:
    """The first call of the recovery's API request: the API's first call after the start's."""
    api = [i for i, c in enumerate(ref.calls) if c.handler == "api"]
    starts = [i for i in api if i > 0 and ref.calls[i - 1].handler != "api"]
    return starts[-1]


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def reference(request: Any, clients: Any) -> tuple[str, Reference]:
    return request.param, reference_run(clients, SCENARIOS[request.param])


def test_the_reference_recovers(reference: tuple[str, Reference]) -> None:
    name, ref = reference
    assert ref.output == ({"first": 10, "each": [2, 4, 6], "kid": 20} if name == "redrive" else 8)
    tail = ref.calls[recovery_start(ref):]
    assert tail[0].handler == "api" and any(c == RECOVERY[name] for c in tail)
    if name == "redrive":  # the child is redriven by its parent, through the decision queue
        assert any(c.detail == "DecisionQueue: redrive" for c in tail)
    else:  # the fork's first commit links the original to it
        assert any(c.detail == "DecisionQueue: fork_created" for c in tail)


def test_every_recovery_crash_point_keeps_the_invariants(clients: Any,
                                                         reference: tuple[str, Reference]) -> None:
    name, ref = reference
    points = recovery_points(ref, name, before_share=0.5)
    assert len(points) >= 10
    failed = [o for o in (run_point(clients, ref, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)


if __name__ == "__main__":
    import os
    import time
    import warnings

    from aws_resources import Clients
    from crash_matrix import ensure_env

    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    warnings.filterwarnings("ignore", "No application metrics")
    ensure_env()
    clients = Clients()
    bad = 0
    for name, sc in SCENARIOS.items():
        t0 = time.perf_counter()
        ref = reference_run(clients, sc)
        points = recovery_points(ref, name)
        outcomes = [run_point(clients, ref, p) for p in points]
        bad += sum(not o.ok for o in outcomes)
        print(f"{name}: {len(ref.calls)} calls, {len(points)} crash points from call #{recovery_start(ref)}, "
              f"{sum(not o.ok for o in outcomes)} broken, {time.perf_counter() - t0:.1f} s")
        for o in outcomes:
            if not o.ok:
                print(" ", o)
    sys.exit(1 if bad else 0)
