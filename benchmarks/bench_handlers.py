"""`on_signal` handlers: what an arrival costs (a script that prints figures, not a timed test).

    python benchmarks/bench_handlers.py [--quick]

1. N arrivals of one signal, each running a two-step handler (a task, then a compute), while the
   main flow sleeps, end to end on the simulator (the real Engine over the memory adapters):
   wall time per arrival at N = 100 and N = 1,000, serialised (concurrency 1) and at
   concurrency 50. The cost per arrival should stay level as N grows: a decision looks at the
   live instances only, never at the ended ones.
2. The same main flow with a 1,000-element `for` step running and no handler: the decision
   cost a definition pays for having `on_signal` at all (the once-per-decision scan of the
   active units), against the same definition without it.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from orbit.testing.simulator import Simulator, hang

T0 = 1_700_000_000_000


def definition(concurrency: int, handlers: bool = True, fan: int = 0) -> dict[str, Any]:
    steps: dict[str, Any] = {"nap": {"sleep": "30d"}}
    if fan:
        steps["each"] = {"for": f"{{% [1..{fan}] %}}", "task": "w.slow", "input": "{% item %}"}
    d: dict[str, Any] = {"orbit": 1, "name": "bench-handlers", "version": "1", "steps": steps}
    if handlers:
        d["on_signal"] = {"x": {"concurrency": concurrency, "steps": {
            "work": {"task": "w.work", "input": "{% event %}"},
            "note": {"compute": "{% steps.work.output + 1 %}"}}}}
    return d


def arrivals(n: int, concurrency: int) -> float:
    sim = Simulator(start_ms=T0, seed="bench")
    sim.register(definition(concurrency))
    sim.worker("w.work", lambda inp, ctx: inp)
    eid = sim.start("bench-handlers", {}, id="b1")
    sim.run_until_idle()
    t0 = time.perf_counter()
    for i in range(n):
        sim.signal(eid, "x", i)
    sim.run_until_idle()
    took = time.perf_counter() - t0
    ended = sum(1 for k, s in sim.describe(eid)["steps"].items() if k.count(":") == 1
                and s["status"] == "SUCCEEDED")
    assert ended == n, (ended, n)
    return took / n


def scan_cost(with_handlers: bool, fan: int, messages: int) -> float:
    sim = Simulator(start_ms=T0, seed="bench")
    sim.register(definition(1, handlers=with_handlers, fan=fan))
    sim.worker("w.slow", hang())  # the elements stay running: every decision sees 1,000 active units
    eid = sim.start("bench-handlers", {}, id="b1")
    sim.run_until_idle()
    engine = sim.engine
    t0 = time.perf_counter()
    for i in range(messages):  # a heartbeat-free message that makes the runtime run: a wake
        engine.handle({"kind": "wake", "execution_id": eid, "id": f"wake-{i}"})
    return (time.perf_counter() - t0) / messages


def main() -> None:
    quick = "--quick" in sys.argv
    sizes = (100, 300) if quick else (100, 1000)
    print("1. arrivals of one signal, two-step handler, main flow asleep (simulator, per arrival)")
    for concurrency in (1, 50):
        for n in sizes:
            per = arrivals(n, concurrency) * 1000
            print(f"   concurrency {concurrency:>2}, {n:>5} arrivals: {per:7.2f} ms")
    fan, msgs = (300, 50) if quick else (1000, 200)
    print(f"2. one decision with a {fan}-element `for` step running (a wake, nothing due), per decision")
    base = scan_cost(False, fan, msgs)
    with_h = scan_cost(True, fan, msgs)
    print(f"   without on_signal: {base * 1000:6.2f} ms   with on_signal: {with_h * 1000:6.2f} ms")


if __name__ == "__main__":
    main()
