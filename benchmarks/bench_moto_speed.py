"""CPU time per workflow with the local stack's second per-request pass on and off, alternating in one
process (so another process's load hits both sides alike); 3-step workflows, in-process moto.

    python benchmarks/bench_moto_speed.py [--n 200] [--rounds 6] [--inline]

"off" puts back moto's original for each fix of `orbit/local/moto_speed_requests.py`, `Item.__init__`
and PutItem's empty-set check (`moto_speed_dynamodb.py`) and SendMessage (`moto_speed.py`); the first
pass (`moto_speed_calls.py`, unsigned requests) stays on for both sides. Prints min and median of
time.process_time() / n for each side, and the load average.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_inline
import bench_local


def toggles() -> list[tuple[Any, str, Any, Any]]:
    """(owner, name, fixed, moto's original) for each fix of the second pass."""
    import moto.core.parse as parse
    import moto.core.request as request
    import moto.core.responses as responses
    import moto.core.serialize as serialize
    import moto.dynamodb.responses as dynamodb_responses
    import moto.sqs.models as sqs
    from moto.dynamodb.models import dynamo_type

    built = request.Request.__dict__["from_primitives"]
    enrich = responses.BaseResponse.__dict__["_enrich_response"]
    out: list[tuple[Any, str, Any, Any]] = [
        (request.Request, "from_primitives", built, classmethod(built.__func__.original.__func__)),
        (responses, "http_date", responses.http_date, responses.http_date.original),
        (responses.BaseResponse, "_enrich_response", enrich, staticmethod(enrich.__func__.original)),
    ]
    for owner, name in ((parse.BaseJSONParser, "_parse_structure"), (parse.BaseJSONParser, "_parse_shape"),
                        (serialize.ResponseSerializer, "_serialize_type_structure"),
                        (dynamo_type.Item, "__init__"), (sqs.SQSBackend, "send_message"),
                        (dynamodb_responses, "validate_put_has_empty_attrs")):
        fixed = getattr(owner, name)
        out.append((owner, name, fixed, fixed.original))
    return out


def cpu_ms_per_workflow(n: int) -> float:
    from orbit.local import LocalStack

    with LocalStack(mode="inprocess") as stack:
        stack.register(bench_local.DEFINITION)
        started = time.process_time()
        ids = [stack.start("bench-three-steps", {"x": i}) for i in range(n)]
        stack.run_until_idle(wall_timeout_s=600)
        took = time.process_time() - started
        assert stack.describe(ids[-1])["output"] == n * 2 - 3
    return 1000 * took / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200, help="executions per run")
    ap.add_argument("--rounds", type=int, default=6, help="runs per side")
    ap.add_argument("--inline", action="store_true", help="inline steps (default: worker steps)")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    from orbit.local import clock, moto_speed

    clock.install_into_moto()
    if not moto_speed.install():
        sys.exit(f"moto is not {moto_speed.MOTO_VERSION}: the fixes are not applied here")
    bench_local.register_tasks()
    bench_local.DEFINITION = bench_inline.three_steps(args.inline)
    fixes = toggles()

    def use(fixed: bool) -> None:
        for owner, name, new, old in fixes:
            setattr(owner, name, new if fixed else old)

    cpu_ms_per_workflow(20)  # warm-up: imports, models, caches
    load = os.getloadavg()[0]
    runs: dict[bool, list[float]] = {True: [], False: []}
    for r in range(args.rounds):
        for fixed in (True, False) if r % 2 == 0 else (False, True):
            use(fixed)
            runs[fixed].append(cpu_ms_per_workflow(args.n))
    use(True)
    kind = "inline" if args.inline else "worker"
    print(f"{kind} steps, {args.n} x 3-step, {args.rounds} runs per side, load {load:.2f} -> "
          f"{os.getloadavg()[0]:.2f}: CPU ms per workflow")
    for fixed, label in ((False, "moto's originals"), (True, "with the fixes")):
        print(f"  {label:<18} min {min(runs[fixed]):6.2f}  median {statistics.median(runs[fixed]):6.2f}")
    print(f"  saved              min {100 * (1 - min(runs[True]) / min(runs[False])):5.1f}%  median "
          f"{100 * (1 - statistics.median(runs[True]) / statistics.median(runs[False])):5.1f}%")


if __name__ == "__main__":
    main()
