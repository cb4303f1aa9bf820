"""Reading a big execution: time and peak memory of each read at 50,000 and 200,000 events.

    python benchmarks/bench_reads.py [--sizes 50000,200000]

One execution fans out over N compute elements (one event each) in the simulator. Then each
read a user makes is timed, with its peak Python memory (tracemalloc): the API's default
history page and describe (what `orbit history` / `orbit describe` fetch), the CLI commands
themselves (through the real client, answered in process), `orbit run`'s timeline after the
execution ended, and for comparison the unpaged reads (the whole history; describe with
every unit) that the API used to return by default.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

from dsl_harness import sim_with
from orbit.cli import main as orbit_cli
from orbit.cli.run import RUN_TIMELINE_EVENTS
from orbit.local.timeline import render
from orbit.service.http import handle_request
from test_paged_reads import InProcessClient


def measure(label: str, fn: Callable[[], Any]) -> None:
    """Timed without tracemalloc (it slows allocation-heavy code several times), then run again
    under it for the peak memory."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        t0 = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - t0
        tracemalloc.start()
        fn()
        peak = tracemalloc.get_traced_memory()[1] / 1e6
        tracemalloc.stop()
    print(f"  {label:<44} {elapsed:8.2f} s  {peak:8.1f} MB peak")


def one(size: int) -> None:
    t0 = time.perf_counter()
    sim = sim_with({"each": {"for": "{% [1..input.n] %}", "compute": "{% item %}"}})
    eid = sim.start("wf", {"n": size}, id="big")
    sim.run_until_idle()
    events = len(sim.engine.history(eid))
    print(f"{size} elements, {events} events (built in {time.perf_counter() - t0:.0f} s)")
    client = InProcessClient(sim.engine)
    orbit_cli._client = lambda args: client  # type: ignore[assignment]
    eng = sim.engine
    measure("GET /history (default page)", lambda: handle_request(eng, "GET", f"/executions/{eid}/history"))
    measure("GET /executions/ID (default steps page)",
            lambda: handle_request(eng, "GET", f"/executions/{eid}"))
    measure("orbit history ID", lambda: orbit_cli.main(["history", eid]))
    measure("orbit describe ID", lambda: orbit_cli.main(["describe", eid]))
    measure("orbit run: timeline after the end",
            lambda: render(eng.history(eid, 0, RUN_TIMELINE_EVENTS)))
    measure("unpaged: the whole history (client, paged)", lambda: client.history(eid))
    measure("unpaged: describe with every unit", lambda: eng.describe(eid))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="50000,200000")
    args = ap.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        one(size)


if __name__ == "__main__":
    main()
