"""What `recall` costs (orbit/service/inline.py): a decider that must run a code workflow's
ctx.run step it did not replay itself replays the workflow once to get the function back.

    .venv/bin/python benchmarks/bench_inline_recall.py

For histories of 0, 10, 100 and 1000 recorded ctx.step calls before a pending ctx.run closure:
the time of one recall with empty caches (a cold process), median and best of 20. A recall only
happens when the function is not in the process's table (a hand-over or restart).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import orbit
from orbit.service.inline import dispatch_of, recall
from orbit.service.replay_host import default_runtime

from tests.unit.inline_world import World


def add(input, ctx): return {"v": input["v"] + 1}

@orbit.workflow("bench-recall", build="b1")
def flow(ctx, input):
    n = input["n"]
    v = 0
    for i in range(n):
        v = ctx.step("t.add", {"v": v})["v"]
    k = input["k"]
    return ctx.run(lambda: v * k, name="last")

for n in (0, 10, 100, 1000):
    w = World({"t.add": add})
    w.registry.register(flow)
    eid = w.api.start("bench-recall", None, {"n": n, "k": 2}, f"e{n}")
    # run workers until the ctx.run step is scheduled
    w.decider.inline = None  # keep the inline step scheduled: no runner here
    for _ in range(10 * n + 50):
        batch = [m for m in w.queues.receive_decisions(w.clock.now_ms()) if not m["id"].startswith("inline:")]
        if batch:
            w.decider.handle_batch(batch, [1] * len(batch))
        for q in list(w.queues.tasks):
            for body in w.queues.receive_tasks(q, w.clock.now_ms()):
                w.worker.process(body)
    state = w.api.load_state(eid)
    d = dispatch_of(state, f"{n+1}.last")
    times = []
    for _ in range(20):
        default_runtime().closures.clear()
        default_runtime().forget()
        t = time.perf_counter()
        recall(w.api, eid, [d], state)
        times.append(time.perf_counter() - t)
        assert default_runtime().closures.get(eid, d.unit) is not None
    times.sort()
    print(f"history of {n} recorded calls: recall median {times[10]*1000:.2f} ms, min {times[0]*1000:.2f} ms")
print(f"load average {os.getloadavg()[0]:.2f}")
