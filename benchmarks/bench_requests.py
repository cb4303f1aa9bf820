"""AWS requests per workflow on the local stack, by operation and item kind.

Runs `bench_inline.py`'s 3-step workflow (worker steps, then inline steps) N times on the
in-process local stack and counts every request the stack's handlers make, grouped by operation
and the item's key prefixes (sort key / partition key: `PutItem C EXEC` is a commit, `PutItem A
EXEC` an index row, `GetItem PTR TIMERPTR` a timer pointer read). Request counts, unlike
throughput, do not depend on the machine's load (SQS batching aside).

    python benchmarks/bench_requests.py [--n 50]
"""

from __future__ import annotations

import argparse
import collections
import logging
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def count(inline: bool, n: int) -> collections.Counter[str]:
    import bench_inline
    import bench_local
    import botocore.client
    from orbit.local import LocalStack

    bench_local.register_tasks()
    real = botocore.client.BaseClient._make_api_call
    seen: collections.Counter[str] = collections.Counter()

    def counting(client: Any, op: str, params: dict[str, Any]) -> Any:
        key = params.get("Key") or params.get("Item") or {}
        sk = (key.get("sk") or {}).get("S", "").split("#")[0]
        pk = (key.get("pk") or {}).get("S", "").split("#")[0]
        seen[f"{op} {sk} {pk}".strip()] += 1
        return real(client, op, params)

    with LocalStack(mode="inprocess") as stack:
        stack.register(bench_inline.three_steps(inline))
        botocore.client.BaseClient._make_api_call = counting  # type: ignore[method-assign]
        try:
            for i in range(n):
                stack.start("bench-three-steps", {"x": i})
            stack.run_until_idle(wall_timeout_s=600)
        finally:
            botocore.client.BaseClient._make_api_call = real  # type: ignore[method-assign]
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=50, help="executions per kind (default 50)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    for label, inline in (("worker steps", False), ("inline steps", True)):
        seen = count(inline, args.n)
        print(f"== 3-step workflow, {label}: AWS requests per workflow ({args.n} executions)")
        for key, v in seen.most_common():
            print(f"  {v / args.n:6.2f}  {key}")
        print(f"  {sum(seen.values()) / args.n:6.2f}  total")


if __name__ == "__main__":
    main()
