"""The limits of docs/limits.md, measured: how fast oversize definitions are refused, how long
runaway expressions run before their budget stops them, and a 12,000-step compute chain.

    python benchmarks/bench_limits.py [--chain 12000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

from dsl_harness import sim_with
from orbit.core.definition import load_definition, parse_definition
from orbit.core.definition.expressions import evaluate
from orbit.errors import ExpressionError, ValidationError


def timed(label: str, fn: Callable[[], Any]) -> None:
    """Time without tracemalloc (it slows Python several times), then the peak memory with it."""
    t0 = time.perf_counter()
    outcome = run(fn)
    elapsed = time.perf_counter() - t0
    tracemalloc.start()
    run(fn)
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    print(f"  {label:<38} {elapsed:7.3f} s {peak:7.1f} MB  {outcome}")


def run(fn: Callable[[], Any]) -> str:
    try:
        fn()
        return "accepted"
    except (ValidationError, ExpressionError) as exc:
        return str(exc)[:70]


def doc(steps: dict[str, Any]) -> dict[str, Any]:
    return {"orbit": 1, "name": "wf", "version": "1", "steps": steps}


def chain(n: int) -> dict[str, Any]:
    steps: dict[str, Any] = {"s0": {"compute": "{% 0 %}"}}
    for i in range(1, n):
        steps[f"s{i}"] = {"compute": f"{{% steps.s{i - 1}.output + 1 %}}"}
    return steps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chain", type=int, default=12_000)
    args = ap.parse_args()
    print("refusing oversize definitions")
    big_expr = "{% " + " + ".join(["input.a"] * 40_000) + " %}"  # ~400 KB
    timed("400 KB expression", lambda: parse_definition(doc({"s": {"compute": big_expr}})))
    timed("2 MB definition text", lambda: load_definition(json.dumps(doc({"s": {"compute": "{% 1 %}"}}))
                                                          + " " * 2_000_000))
    timed("25,000 steps", lambda: parse_definition(doc({f"s{i}": {"sleep": "1s"} for i in range(25_000)})))
    print("runaway expressions (each stopped by its budget)")
    for label, expr, inp in [
        ("tail recursion", "($f := function($n){ $f($n + 1) }; $f(0))", {}),
        ("$eval of input", "$eval(input.c)", {"c": "($f := function($n){ $f($n+1) }; $f(0))"}),
        ("[1..10000000]", "[1..10000000]", {}),
        ("catastrophic regex, 100 KB", "$match(input.s, /(a+)+$/)", {"s": "a" * 99_999 + "!"}),
        ("string doubling", "$reduce([1..40], function($a, $b){ $a & $a }, 'ab')", {}),
    ]:
        timed(label, lambda e=expr, i=inp: evaluate("{% " + e + " %}", {"input": i}, 0))
    print(f"a {args.chain}-step compute chain")
    t0 = time.perf_counter()
    sim = sim_with(chain(args.chain), output=f"{{% steps.s{args.chain - 1}.output %}}")
    t1 = time.perf_counter()
    eid = sim.start("wf", {})
    sim.run_until_idle()
    t2 = time.perf_counter()
    desc = sim.describe(eid)
    decisions = sum(1 for _ in sim.store.scan_commits(eid))
    print(f"  validate+register {t1 - t0:.1f} s, run {t2 - t1:.1f} s: {desc['status']}, "
          f"output {desc['output']}, {decisions} decisions")


if __name__ == "__main__":
    main()
