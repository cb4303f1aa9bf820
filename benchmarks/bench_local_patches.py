"""Local-stack throughput with and without its moto speed patches, in one run.

    .venv/bin/python benchmarks/bench_local_patches.py [--n 200] [--rounds 2]

The throughput run of bench_inline.py (n executions of bench_local.py's 3-step workflow, moto in
process, inline and worker steps), once with the speed fixes (`orbit/local/moto_speed*.py`, the
unsigned in-process requests) and once with ORBIT_LOCAL_SPEED_PATCHES=0, alternating the order each
round in one process, so load from elsewhere hits both sides alike. The clock swap is on for both
(virtual time needs it on this moto). Prints workflows/s (best and median of the rounds) and the
load average before and after.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import warnings
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent)]
import bench_inline  # noqa: E402
import bench_local  # noqa: E402


def main() -> None:
    from orbit.local import patches

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=200, help="executions per run")
    ap.add_argument("--rounds", type=int, default=2, help="runs per side and step kind")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    bench_local.register_tasks()
    bench_inline.throughput(20, True)  # warm-up: imports, models
    load = os.getloadavg()[0]
    rates: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        for kind in ("inline", "worker"):
            for switch in ("1", "0") if r % 2 == 0 else ("0", "1"):
                os.environ[patches.SPEED_SWITCH] = switch
                rates.setdefault((kind, switch), []).append(bench_inline.throughput(args.n, kind == "inline"))
    os.environ.pop(patches.SPEED_SWITCH, None)
    print(f"{args.n} x 3-step workflows, moto in process, {args.rounds} runs per side, load average "
          f"{load:.2f} -> {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs): workflows/s, best (median)")
    for kind in ("inline", "worker"):
        on, off = rates[(kind, "1")], rates[(kind, "0")]
        print(f"  {kind + ' steps':<13} with the speed patches {max(on):6.1f} ({statistics.median(on):6.1f})"
              f"   without {max(off):6.1f} ({statistics.median(off):6.1f})   {max(on) / max(off):4.2f}x")


if __name__ == "__main__":
    main()
