"""A fan-out cannot flood a downstream API: the worker's MaximumConcurrency bounds it.

The local stack runs the example worker the way Lambda's event source mapping does with
`ScalingConfig.MaximumConcurrency` (template parameter DefaultWorkerMaxConcurrency): that many
invocations at a time, each handling its batch's records one after the other. The task counts
how many of its calls overlap, as a downstream API would see them.
"""

from __future__ import annotations

import threading
import time

from orbit.local import LocalStack

N = 300
CAP = 3
_lock = threading.Lock()
_now = [0]
_peak = [0]
_calls = [0]


def _call_downstream(inp, ctx):
    with _lock:
        _now[0] += 1
        _calls[0] += 1
        _peak[0] = max(_peak[0], _now[0])
    time.sleep(0.002)  # the downstream call: long enough for concurrent invocations to overlap
    with _lock:
        _now[0] -= 1
    return {"v": inp["v"]}


def test_a_fan_out_never_has_more_calls_in_flight_than_the_cap():
    from orbit.worker import task

    task("e2e.cap.call")(_call_downstream)
    with LocalStack(mode="inprocess", concurrent_workers=True,
                    parameters={"DefaultWorkerMaxConcurrency": str(CAP)}) as stack:
        stack.register({"orbit": 1, "name": "e2e-cap", "version": "1", "steps": {
            "each": {"for": "{% input.items %}", "task": "e2e.cap.call", "input": {"v": "{% item %}"}}},
            "output": {"n": "{% $count(steps.each.output) %}"}})
        eid = stack.start("e2e-cap", {"items": list(range(N))})
        desc = stack.run_until_done(eid, wall_timeout_s=600)
    assert desc["status"] == "COMPLETED" and desc["output"] == {"n": N}, desc.get("error")
    assert _calls[0] == N
    # Never above the cap, and the cap is what held it back (the invocations did overlap).
    assert _peak[0] == CAP, _peak[0]
