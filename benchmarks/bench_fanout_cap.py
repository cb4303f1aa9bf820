"""A wide fan-out against a worker capped by MaximumConcurrency: peak calls in flight and wall time.

    python benchmarks/bench_fanout_cap.py [--size 10000] [--caps 2,5,10] [--call-ms 5]

Each run starts ONE execution whose `for` step dispatches `size` tasks at once (no per-step
concurrency), on the local stack with `concurrent_workers=True` and DefaultWorkerMaxConcurrency set
to the cap: the example worker then runs `cap` invocations at a time, as Lambda's event source
mapping does. The task stands in for a downstream API call (`--call-ms` of sleep) and counts how
many of its calls overlap. Prints, per cap: peak calls in flight, calls made, wall time, and the
downstream rate that implies. The peak never exceeds the cap, whatever the fan-out.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any


class Downstream:
    def __init__(self, call_s: float) -> None:
        self.call_s = call_s
        self.lock = threading.Lock()
        self.now = self.peak = self.calls = 0

    def __call__(self, inp: Any, ctx: Any) -> Any:
        with self.lock:
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.call_s)
        with self.lock:
            self.now -= 1
        return {"v": inp["v"]}


def run(size: int, cap: int, call_ms: float) -> dict[str, Any]:
    from orbit.local import LocalStack
    from orbit.worker import task

    downstream = Downstream(call_ms / 1000)
    name = f"bench.cap.call{cap}"
    task(name)(downstream)
    with LocalStack(mode="inprocess", concurrent_workers=True,
                    parameters={"DefaultWorkerMaxConcurrency": str(cap)}) as stack:
        stack.register({"orbit": 1, "name": f"bench-cap-{cap}", "version": "1", "steps": {
            "each": {"for": "{% input.items %}", "task": name, "input": {"v": "{% item %}"}}},
            "output": {"n": "{% $count(steps.each.output) %}"}})
        started = time.perf_counter()
        eid = stack.start(f"bench-cap-{cap}", {"items": list(range(size))})
        desc = stack.run_until_done(eid, wall_timeout_s=3600)
        wall = time.perf_counter() - started
    assert desc["status"] == "COMPLETED" and desc["output"] == {"n": size}, desc.get("error")
    return {"cap": cap, "peak": downstream.peak, "calls": downstream.calls, "wall_s": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--caps", default="2,5,10")
    parser.add_argument("--call-ms", type=float, default=5.0)
    args = parser.parse_args()
    print(f"fan-out of {args.size}, each task one {args.call_ms:g} ms downstream call")
    print(f"{'cap':>4} {'peak in flight':>15} {'calls':>7} {'wall s':>8} {'calls/s':>8}")
    for cap in (int(c) for c in args.caps.split(",")):
        r = run(args.size, cap, args.call_ms)
        rate = r["calls"] / r["wall_s"]
        print(f"{r['cap']:>4} {r['peak']:>15} {r['calls']:>7} {r['wall_s']:>8.1f} {rate:>8.1f}")


if __name__ == "__main__":
    main()
