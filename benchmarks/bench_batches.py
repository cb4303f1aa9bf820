"""What a bulk action and a filtered list cost: AWS requests (and rows read) per execution.

Starts N executions of a one-step waiter (two search attributes) on the local stack (moto, in
process, the real handlers), then counts every DynamoDB and SQS request, and the rows each Query
read (ScannedCount), of:
  1. one filtered list page: an attribute =, a status, an attribute range (`amount >= ...`);
  2. a bulk cancel of every execution (100 per page), until the batch has COMPLETED
     (the cancels' own decisions included: they are what a cancel costs anyway).

    .venv/bin/python benchmarks/bench_batches.py [--executions 300]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from typing import Any

from orbit.local import LocalStack
from orbit.service.http import handle_request

WAITER = {"orbit": 1, "name": "bench-waiter", "version": "1", "steps": {"w": {"wait_for": "go"}},
          "attributes": {"tier": "{% input.tier %}", "amount": "{% input.amount %}"}}


class Count:
    def __init__(self, *clients: Any) -> None:
        self.calls: Counter[str] = Counter()
        self.scanned = 0
        for c in clients:
            c.meta.events.register("before-call.*.*", self._before)
            c.meta.events.register("after-call.*.*", self._after)

    def _before(self, model: Any, **_: Any) -> None:
        self.calls[f"{model.service_model.service_name}.{model.name}"] += 1

    def _after(self, model: Any, parsed: Any, **_: Any) -> None:
        if model.name == "Query" and isinstance(parsed, dict):
            self.scanned += int(parsed.get("ScannedCount", 0))

    def reset(self) -> None:
        self.calls.clear()
        self.scanned = 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--executions", type=int, default=300)
    n = ap.parse_args().executions
    with LocalStack(mode="inprocess") as st:
        st.register(WAITER)
        for i in range(n):
            st.start("bench-waiter", {"tier": ["gold", "silver"][i % 2], "amount": i}, id=f"b-{i:04d}")
        st.run_until_idle()
        st.advance(1)
        svc = st.services
        count = Count(svc.dynamodb, svc.sqs)
        for where in ("tier = gold", "status = RUNNING AND amount >= 0",
                      f"tier = gold AND amount >= {n - 20}"):
            count.reset()
            query = {"where": where, "limit": "50"}
            status, body = handle_request(st.engine, "GET", "/executions", query=query)
            assert status == 200, body
            print(f"list --where '{where}' --limit 50: {len(body['executions'])} listed, "
                  f"{count.scanned} index rows read, requests {dict(count.calls)}")
        count.reset()
        started = time.perf_counter()
        handle_request(st.engine, "POST", "/batches/cancel", {"where": "workflow = bench-waiter "
                                                       "AND status = RUNNING", "id": "bench"})
        st.run_until_idle()
        took = time.perf_counter() - started
        b = st.engine.batches.describe("bench")
        assert b["status"] == "COMPLETED" and b["acted"] == n, b
        total = sum(count.calls.values())
        print(f"bulk cancel of {n}: {b['pages']} pages, {total} requests ({total / n:.1f} per execution, "
              f"the cancel decisions included), {count.scanned} index rows read by Query; "
              f"{took:.1f} s on moto")
        for op, k in sorted(count.calls.items()):
            print(f"  {op}: {k} ({k / n:.2f} per execution)")


if __name__ == "__main__":
    main()
