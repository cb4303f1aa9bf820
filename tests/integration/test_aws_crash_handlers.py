"""The crash matrix for `on_signal` handlers: a crash before and after each write and send, from the
API's signal on (the instances start, dispatch their tasks and end; the main flow resumes, sleeps
and ends), loses nothing and runs nothing twice. The invariants are crash_matrix.py's: the execution
ends COMPLETED with the reference output, its history is gap-free with one final WorkflowCompleted,
each unit (instances and their steps included) succeeded once, each task attempt ran at most once.
Two arrivals of `item` and one of `approval` are sent together; the main flow then sleeps longer
than any redelivery takes, so both instances end before it does, on every crash path.
`python tests/integration/test_aws_crash_handlers.py` runs every point.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest
from crash_matrix import Reference, reference_run, run_point
from crash_points import Call, CrashPoint, crash_points
from crash_world import Scenario

HANDLED = Scenario(({
    "orbit": 1, "name": "crashmx-handlers", "version": "1",
    "signals": {"approval": {"schema": {"type": "object"}}},
    "steps": {
        "approve": {"wait_for": "approval"},
        "cool": {"sleep": "6h", "after": ["approve"]},
    },
    "on_signal": {"item": {"concurrency": 2, "steps": {
        "add": {"task": "crashmx.double", "input": {"v": "{% event.v %}"}},
        "tag": {"compute": "{% steps.add.output.v2 & '/' & main.steps.approve.status %}"},
    }}},
    "output": {"by": "{% steps.approve.output.by %}"}},), {"v": 1},
    ("approval", {"payload": {"by": "ops"}, "id": "approval-1"}),
    handled=(("item", {"payload": {"v": 3}, "id": "item-1"}),
             ("item", {"payload": {"v": 4}, "id": "item-2"})))


def signal_points(ref: Reference, before_share: float = 1.0) -> list[CrashPoint]:
    """Every write/send from the first signal's API call on, crashing after it landed, and before
    it (`before_share` < 1: a seeded sample of those)."""
    start = min(i for i, c in enumerate(ref.calls) if c == Call("api", "sqs", "SendMessage",
                                                                  "DecisionQueue: signal"))
    points = [p for p in crash_points(ref.calls, writes_only=True) if p.index >= start]
    after = [p for p in points if p.variant == "after"]
    before = [p for p in points if p.variant == "before"]
    if before_share < 1:
        before = random.Random(3).sample(before, round(len(before) * before_share))
    return sorted(after + before, key=lambda p: (p.index, p.variant))


@pytest.fixture(scope="module")
def reference(clients: Any) -> Reference:
    return reference_run(clients, HANDLED)


def test_the_reference_runs_two_instances_beside_the_main_flow(clients: Any, reference: Reference) -> None:
    assert reference.output == {"by": "ops"}
    assert sorted(k for k, _ in reference.runs) == ["crash-1:on_signal:item@6:add",
                                                     "crash-1:on_signal:item@9:add"]


@pytest.mark.parametrize("shard", range(2))
def test_every_crash_point_from_the_signals_on_keeps_the_invariants(clients: Any, reference: Reference,
                                                                    shard: int) -> None:
    points = signal_points(reference, before_share=0.5)[shard::2]
    assert len(points) >= 8
    failed = [o for o in (run_point(clients, reference, p) for p in points) if not o.ok]
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
    t0 = time.perf_counter()
    ref = reference_run(Clients(), HANDLED)
    outcomes = [run_point(Clients(), ref, p) for p in signal_points(ref)]
    bad = [o for o in outcomes if not o.ok]
    print(f"{len(ref.calls)} calls, {len(outcomes)} crash points, {len(bad)} broken, "
          f"{time.perf_counter() - t0:.1f} s")
    for o in bad:
        print(" ", o)
    sys.exit(1 if bad else 0)
