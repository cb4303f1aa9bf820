"""Deciders racing on one execution: how many messages give up after MAX_CONFLICT_RETRIES.

    python benchmarks/bench_contention.py [--deciders 12] [--rounds 5]

Each round starts one execution waiting for a signal, then `--deciders` threads, each its own
Engine (its own cache, like separate Lambda invocations) over one shared in-memory store,
handle one signal message each at the same moment. The store answers each load and commit
after a DynamoDB-like round trip (LATENCY_S), so the commits really race. A message that
loses MAX_CONFLICT_RETRIES races in a row gives up (on AWS it would wait for SQS to redeliver
it). Printed: give-ups per round without backoff (every retry at once) and with the engine's
jittered exponential backoff, and that every message that did not give up is in the history.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from typing import Any

from orbit.adapters.memory import (
    MemoryHistoryStore,
    MemoryPayloadStore,
    MemoryQueues,
    MemoryRegistry,
    MemoryTimers,
    SeededIds,
)
from orbit.core.definition import parse_definition
from orbit.errors import ConflictError
from orbit.service.engine import Engine

LATENCY_S = 0.004


class SlowStore(MemoryHistoryStore):
    def load(self, execution_id: str) -> Any:
        time.sleep(LATENCY_S)
        return super().load(execution_id)

    def commit(self, execution_id: str, commit: Any, expires_at_s: int | None = None,
               provisional: bool = False) -> None:
        time.sleep(LATENCY_S)
        super().commit(execution_id, commit, expires_at_s, provisional)


class Clock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


def definition(n: int) -> Any:
    steps = {f"w{i}": {"wait_for": f"go{i}"} for i in range(n)}
    return parse_definition({"orbit": 1, "name": "race", "version": "1", "steps": steps})


def one_round(deciders: int, backoff: bool, round_no: int) -> tuple[int, int]:
    store, registry = SlowStore(), MemoryRegistry()
    registry.register(definition(deciders))

    def engine() -> Engine:
        kwargs: dict[str, Any] = {} if backoff else {"backoff": lambda attempt: None}
        return Engine(store, MemoryQueues(), MemoryTimers(), MemoryPayloadStore(), registry, Clock(),
                      SeededIds(f"r{round_no}"), **kwargs)

    eid = engine().start("race", None, {}, f"race-{round_no}")
    gave_up = [0]
    barrier = threading.Barrier(deciders)

    def decide(i: int) -> None:
        e = engine()
        barrier.wait()
        msg = {"kind": "signal", "execution_id": eid, "id": f"signal:s{i}", "name": f"go{i}", "payload": i}
        try:
            e.handle(msg)
        except ConflictError:
            gave_up[0] += 1

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(deciders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    received = sum(1 for r in store.history(eid, 0, 10_000).records if r.event.TYPE == "SignalReceived")
    assert received == deciders - gave_up[0], (received, gave_up)
    return gave_up[0], received


def main() -> None:
    logging.disable(logging.ERROR)  # each give-up logs a traceback; the count is the figure
    ap = argparse.ArgumentParser()
    ap.add_argument("--deciders", type=int, default=12)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"{args.deciders} deciders on one execution, {args.rounds} rounds, "
          f"store latency {LATENCY_S * 1000:.0f} ms")
    for backoff in (False, True):
        results = [one_round(args.deciders, backoff, r) for r in range(args.rounds)]
        gave = [g for g, _ in results]
        label = "jittered backoff" if backoff else "no backoff     "
        total = args.deciders * args.rounds
        print(f"  {label}: give-ups per round {gave}, total {sum(gave)} of {total} messages")


if __name__ == "__main__":
    main()
