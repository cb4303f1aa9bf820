"""Signal-with-start under a burst for one id (docs/triggers.md): cost, conflicts, order.

    python benchmarks/bench_signal_with_start.py [--callers 50] [--rounds 3]

Each round: `--callers` threads, each its own Engine (its own cache, like separate API Lambda
containers) over one shared in-memory store that answers each load and commit after a
DynamoDB-like round trip (LATENCY_S), call `signal_with_start` for the same id at the same moment.
Printed per round: the wall time of the burst, p50 / p99 / max call latency, the conflicting
writes that were retried, and checks: one execution, every signal once, and for every pair of
calls where one returned before the other began, its signal is earlier in the history.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time
from typing import Any

from bench_contention import Clock, SlowStore
from orbit.adapters.memory import MemoryPayloadStore, MemoryQueues, MemoryRegistry, MemoryTimers, SeededIds
from orbit.core.definition import parse_definition
from orbit.errors import ConflictError
from orbit.service.engine import Engine
from orbit.service.signal_start import signal_with_start


class CountingStore(SlowStore):
    conflicts = 0

    def commit(
        self, execution_id: str, commit: Any, expires_at_s: int | None = None, provisional: bool = False
    ) -> None:
        try:
            super().commit(execution_id, commit, expires_at_s, provisional)
        except ConflictError:
            CountingStore.conflicts += 1
            raise


def one_round(callers: int, round_no: int) -> dict[str, Any]:
    store, registry = CountingStore(), MemoryRegistry()
    CountingStore.conflicts = 0
    registry.register(
        parse_definition(
            {
                "orbit": 1,
                "name": "cart",
                "version": "1",
                "signals": {"item": {}},
                "steps": {"w": {"wait_for": "checkout"}},
            }
        )
    )
    engines = [
        Engine(
            store,
            MemoryQueues(),
            MemoryTimers(),
            MemoryPayloadStore(),
            registry,
            Clock(),
            SeededIds(f"r{round_no}-{i}"),
        )
        for i in range(callers)
    ]
    eid = f"cart-{round_no}"
    spans: dict[int, tuple[float, float]] = {}
    barrier = threading.Barrier(callers)

    def call(i: int) -> None:
        barrier.wait()
        began = time.perf_counter()
        signal_with_start(engines[i], eid, "cart", "item", i, {"cart": round_no}, signal_id=f"s{i}")
        spans[i] = (began, time.perf_counter())

    started = time.perf_counter()
    threads = [threading.Thread(target=call, args=(i,)) for i in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    got = [
        r.event.payload for r in store.history(eid, 0, 100_000).records if r.event.TYPE == "SignalReceived"
    ]
    assert sorted(got) == list(range(callers)), "every signal once"
    pos = {n: k for k, n in enumerate(got)}
    assert all(
        pos[i] < pos[j] for i, (_, end) in spans.items() for j, (begin, _) in spans.items() if end < begin
    )
    lat = sorted((e - b) * 1000 for b, e in spans.values())
    return {
        "wall_s": wall,
        "p50": statistics.median(lat),
        "p99": lat[int(0.99 * (len(lat) - 1))],
        "max": lat[-1],
        "conflicts": CountingStore.conflicts,
    }


def main() -> None:
    logging.disable(logging.ERROR)
    ap = argparse.ArgumentParser()
    ap.add_argument("--callers", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(f"{args.callers} concurrent signal-with-start calls for one id, store round trip 4 ms")
    for r in range(args.rounds):
        f = one_round(args.callers, r)
        print(
            f"  round {r}: burst {f['wall_s']:.2f} s, call latency p50 {f['p50']:.0f} ms, "
            f"p99 {f['p99']:.0f} ms, "
            f"max {f['max']:.0f} ms, conflicting writes retried {f['conflicts']}; one execution, "
            f"{args.callers} signals once each, in call order"
        )


if __name__ == "__main__":
    main()
