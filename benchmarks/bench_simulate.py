"""How long `orbit simulate examples/order_fulfilment.yaml --runs 500 --seed 1` takes (target: < 60 s).

Run: .venv/bin/python benchmarks/bench_simulate.py [RUNS]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from orbit.core.definition import load_definition
from orbit.testing.simulate import Rates, simulate

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    d = load_definition(ROOT / "examples" / "order_fulfilment.yaml")
    began = time.perf_counter()
    summary = simulate(d, runs, 1, Rates())
    seconds = time.perf_counter() - began
    print(f"order saga: {runs} simulated runs in {seconds:.1f} s ({1000 * seconds / runs:.1f} ms a run), "
          f"{len(summary.failing)} failing; target under 60 s: {'met' if seconds < 60 else 'MISSED'}")
    for outcome, n in summary.outcomes.most_common():
        print(f"  {outcome:<40} {n}")


if __name__ == "__main__":
    main()
