"""Switch cost and memory per parked unit: a thread handing off through queues (how code workflows
paused before issue 27), a greenlet (how they pause now), a generator (the alternative).

    python benchmarks/bench_switch.py [--switches 20000] [--parked 10000] [--depth 12]

A switch is one round trip: hand the turn to the parked unit and get it back. A parked unit sits
`--depth` Python frames deep (about what a branch's `ctx.step` reaches before it blocks) with a
small local each; the memory is the RSS added per unit (threads: also the virtual memory, their
stacks). Each kind is measured in a child process of its own.
"""

from __future__ import annotations

import argparse
import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any


def _rss_vm_kb() -> tuple[int, int]:
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.split()[0] if v.split() else "0"
    return int(fields["VmRSS"]), int(fields["VmSize"])


def _deep(depth: int, park: Any) -> Any:
    pad = [depth] * 8  # a few locals per frame
    if depth == 0:
        return park()
    return _deep(depth - 1, park) if pad else None


def _deep_gen(depth: int) -> Any:
    pad = [depth] * 8
    if depth == 0:
        while True:
            yield None
    yield from _deep_gen(depth - 1) if pad else ()


class ThreadUnit:
    def __init__(self, depth: int) -> None:
        self.to_unit: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self.to_me: queue.SimpleQueue[bool] = queue.SimpleQueue()
        self.t = threading.Thread(target=_deep, args=(depth, self._park), daemon=True)
        self.t.start()
        self.to_me.get()

    def _park(self) -> None:
        while True:
            self.to_me.put(True)
            if not self.to_unit.get():
                return

    def switch(self) -> None:
        self.to_unit.put(True)
        self.to_me.get()

    def stop(self) -> None:
        self.to_unit.put(False)
        self.t.join()


class GreenletUnit:
    def __init__(self, depth: int) -> None:
        from greenlet import getcurrent, greenlet
        self.parent = getcurrent()
        self.g = greenlet(lambda: _deep(depth, self._park))
        self.g.switch()

    def _park(self) -> None:
        while self.parent.switch(True):
            pass

    def switch(self) -> None:
        self.g.switch(True)

    def stop(self) -> None:
        self.g.switch(False)


class GeneratorUnit:
    def __init__(self, depth: int) -> None:
        self.g = _deep_gen(depth)
        next(self.g)

    def switch(self) -> None:
        next(self.g)

    def stop(self) -> None:
        self.g.close()


KINDS = {"thread": ThreadUnit, "greenlet": GreenletUnit, "generator": GeneratorUnit}


def measure(kind: str, switches: int, parked: int, depth: int) -> dict[str, float]:
    cls = KINDS[kind]
    u = cls(depth)
    for _ in range(1000):
        u.switch()
    t0 = time.perf_counter()
    for _ in range(switches):
        u.switch()
    switch_us = (time.perf_counter() - t0) / switches * 1e6
    u.stop()
    rss0, vm0 = _rss_vm_kb()
    units = [cls(depth) for _ in range(parked)]
    rss1, vm1 = _rss_vm_kb()
    for x in units:
        x.stop()
    return {"switch_us": switch_us, "rss_kb_per_unit": (rss1 - rss0) / parked,
            "vm_kb_per_unit": (vm1 - vm0) / parked, "parked": parked}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--switches", type=int, default=20_000)
    p.add_argument("--parked", type=int, default=10_000)
    p.add_argument("--thread-parked", type=int, default=2_000, help="threads parked (fewer: they are slow)")
    p.add_argument("--depth", type=int, default=12)
    p.add_argument("--kind", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.kind:
        n = a.thread_parked if a.kind == "thread" else a.parked
        print(json.dumps(measure(a.kind, a.switches, n, a.depth)))
        return
    print(f"{'kind':<10} {'switch (round trip)':>20} {'RSS per parked unit':>20} {'virtual per unit':>17} "
          f"{'parked':>7}   (depth {a.depth} frames)")
    for kind in KINDS:
        out = subprocess.run([sys.executable, __file__, "--kind", kind, "--switches", str(a.switches),
                              "--parked", str(a.parked), "--thread-parked", str(a.thread_parked),
                              "--depth", str(a.depth)], capture_output=True, text=True, check=True)
        f = json.loads(out.stdout)
        print(f"{kind:<10} {f['switch_us']:>17.2f} µs {f['rss_kb_per_unit']:>17.1f} kB "
              f"{f['vm_kb_per_unit']:>14.0f} kB {f['parked']:>7,}")


if __name__ == "__main__":
    main()
