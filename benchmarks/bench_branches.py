"""Decision cost per branch of a code-workflow parallel: 10 branches against 1,000; and the width
figures of issue 27, for this checkout and (side by side, in one run) another one.

    python benchmarks/bench_branches.py [--sizes 10,1000] [--rounds 3]
    python benchmarks/bench_branches.py --width [--old /work/main/layers/orbit] [--old-width 10000]
    python benchmarks/bench_branches.py --e2e 10000 [--kinds code,dsl,code-sleep] [--old DIR]

`--width` measures, each in a child process of its own (so threads and memory do not mix), for this
checkout and for the `orbit` package under `--old` (e.g. a checkout of main): threads alive during a
10,000-branch parallel's decisions, memory added by its 10,000 parked branches (RSS and virtual),
its first decision, a cold replay (empty cache) of a 1,000-branch parallel per decision, and the
warm decision at 10,000 branches against at 10, each printed against the issue's target.
`--old-width` caps the old checkout's widest run (a thread per branch makes 10,000 slow).

`--e2e N` runs on the local stack (real handlers on moto, virtual time), each in a child process:
a code `ctx.map` of N branches that each run one step (`br.echo`), the DSL `for` step over the same
N items running the same task, and the issue's workload (each branch a step, then an hour's sleep,
woken by advancing the clock): wall time from the start to the end and per branch, the code
`ctx.map` against the DSL `for` (target: within 2x).

Each branch runs a step, then sleeps an hour: `ctx.parallel(*[branch] * n)`. The whole
execution is driven through the real pure decision (`orbit.core.decider.decide.decide`): the
start, one result message per step (each resumes one branch, which starts its timer), one
wake-up per timer (each ends one branch), the last of which records the group and completes
the workflow. The figure is the total decision time divided by the number of branches, with
the decider's instance cache on (as in a warm Lambda). Target: 1,000 branches within 2x of 10.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import tracemalloc
from typing import Any

from orbit.core.decider.decide import decide
from orbit.core.history.messages import ResultMessage, StartMessage, WakeMessage
from orbit.core.history.model import apply
from orbit.core.history.state import ExecutionState

try:
    from orbit.service import replay_host as code_runtime
except ImportError:  # a checkout from before issue 27 section 5 (--old): the runtime was under core/
    from orbit.core.runtime import code as code_runtime  # type: ignore[no-redef]
from orbit.workflow import CodeRegistry, workflow

REGISTRY = CodeRegistry()
HOUR = 3_600_000


def branch(ctx: Any) -> int:
    n = ctx.step("bench.work", 1)["n"]
    ctx.sleep("1h")
    return int(n)


@workflow("bench-branches", build="bench", registry=REGISTRY)
def fan(ctx: Any, n: int) -> Any:
    return sum(ctx.parallel(*[branch] * n))


class Ids:
    def __init__(self) -> None:
        self.n = 0

    def token(self) -> str:
        self.n += 1
        return f"{self.n:032x}"


def run(n: int) -> tuple[float, int]:
    """Drive one execution to its end; return (seconds spent deciding, decisions)."""
    ids, state, spent, count = Ids(), ExecutionState("bench"), 0.0, 0

    def one(msg: Any, now: int) -> None:
        nonlocal spent, count
        t0 = time.perf_counter()
        d = decide(fan, state, msg, now, ids, code_runtime=code_runtime.default_runtime())
        spent += time.perf_counter() - t0
        count += 1
        for r in d.events:
            apply(state, r)

    one(StartMessage("bench", "start", workflow="bench-branches", input=n), 0)
    assert len(state.active) == n + 1, "every branch's step is in flight, and the group"
    steps = [k for k in state.active if k.endswith("bench.work")]
    for i, key in enumerate(steps, start=1):
        u = state.units[key]
        one(ResultMessage("bench", f"r-{key}", unit=key, token=u.token or "", output={"n": 1}), i)
    for i in range(1, n + 1):
        one(WakeMessage("bench", f"w-{i}"), HOUR + i)
    assert state.status == "COMPLETED" and state.output == n, (state.status, state.error)
    return spent, count


def _memory_kb() -> tuple[int, int]:
    """(resident, virtual) size of this process in kB (Linux)."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            fields[k] = v.split()[0] if v.split() else "0"
    return int(fields.get("VmRSS", 0)), int(fields.get("VmSize", 0))


class Driver:
    """One execution of `fan(n)`, decided one message at a time; times and thread counts kept."""

    def __init__(self, n: int) -> None:
        self.n, self.ids, self.state = n, Ids(), ExecutionState("bench")
        self.threads_max = threading.active_count()

    def one(self, msg: Any, now: int) -> float:
        t0 = time.perf_counter()
        d = decide(fan, self.state, msg, now, self.ids, code_runtime=code_runtime.default_runtime())
        spent = time.perf_counter() - t0
        self.threads_max = max(self.threads_max, threading.active_count())
        for r in d.events:
            apply(self.state, r)
        return spent

    def start(self) -> float:
        return self.one(StartMessage("bench", "start", workflow="bench-branches", input=self.n), 0)

    def results(self, count: int, forget: bool = False) -> list[float]:
        """Times of `count` result decisions (spread over the branches); `forget`: each cold."""
        steps = [k for k in self.state.active if k.endswith("bench.work")]
        pick = steps[:: max(1, len(steps) // count)][:count]
        times = []
        for i, key in enumerate(pick, start=1):
            if forget:
                code_runtime.default_runtime().forget()
            u = self.state.units[key]
            times.append(self.one(ResultMessage("bench", f"r-{key}", unit=key, token=u.token or "",
                                                output={"n": 1}), i))
        return times


def width_figures(wide: int, cold_n: int) -> dict[str, Any]:
    """The issue's figures for the orbit package this process imports (printed as JSON)."""
    rt = code_runtime.default_runtime()
    import orbit

    out: dict[str, Any] = {"orbit": os.path.dirname(orbit.__file__), "wide": wide}
    small = Driver(10)
    small.start()
    small.results(1)  # first resume done: what follows is warm
    out["warm_10_ms"] = statistics.median(small.results(8)) * 1000
    rt.forget()
    time.sleep(0.2)  # an old checkout's discarded threads end
    base_threads = threading.active_count()
    rss0, vm0 = _memory_kb()
    big = Driver(wide)
    out["first_ms"] = big.start() * 1000
    rss1, vm1 = _memory_kb()
    out["rss_added_mb"], out["vm_added_mb"] = (rss1 - rss0) / 1024, (vm1 - vm0) / 1024
    big.results(1)
    out["warm_wide_ms"] = statistics.median(big.results(20)) * 1000
    out["threads_max"] = big.threads_max
    out["threads_before"] = base_threads
    rt.forget()
    del big
    time.sleep(0.5)
    # what the parked instance itself holds: traced memory its discard gives back (the state stays);
    # thread stacks are not traced (an old checkout's figure leaves them out: see its RSS)
    tracemalloc.start()
    held = Driver(wide)
    held.start()
    gc.collect()
    with_parked = tracemalloc.get_traced_memory()[0]
    rt.forget()
    gc.collect()
    out["parked_mb"] = (with_parked - tracemalloc.get_traced_memory()[0]) / 2**20
    if out["threads_max"] > base_threads + 8:
        out["parked_mb"] = None  # parked on threads: their stacks are not traced, see the RSS
    tracemalloc.stop()
    del held
    cold = Driver(cold_n)
    cold.start()
    times = cold.results(10, forget=True)
    out["cold_n"] = cold_n
    out["cold_ms"] = statistics.mean(times) * 1000
    out["cold_threads_max"] = cold.threads_max
    rt.forget()
    return out


TARGETS = [  # (label, figure, target, lower is better)
    ("threads alive during a {wide:,}-branch parallel's decisions", "threads_max", 8),
    ("memory held by {wide:,} parked branches (traced), MB", "parked_mb", 100),
    ("RSS added by the first decision (state + parked), MB", "rss_added_mb", 100),
    ("first decision of a {wide:,}-branch parallel, ms", "first_ms", 2000),
    ("cold replay of a {cold_n:,}-branch parallel, ms per decision", "cold_ms", 150),
    ("warm decision at {wide:,} branches / at 10", "ratio", 3),
]


def width(args: argparse.Namespace) -> None:
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "layers", "orbit")
    runs: list[tuple[str, int, str]] = [("new (this checkout)", args.wide, here)]
    if args.old:
        runs.append(("old (--old)", min(args.old_width, args.wide), args.old))
    figures = []
    for label, wide, path in runs:
        env = {**os.environ, "PYTHONPATH": os.path.abspath(path)}
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--figures", str(wide),
                               "--cold", str(args.cold)], env=env, capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"{label}: {done.stderr[-2000:]}")
        f = json.loads(done.stdout.strip().splitlines()[-1])
        f["ratio"] = f["warm_wide_ms"] / f["warm_10_ms"]
        f["label"], f["wall_s"] = label, time.perf_counter() - t0
        figures.append(f)
    for f in figures:
        print(f"{f['label']}: orbit from {f['orbit']} ({f['wall_s']:.1f} s)")
    head = f"{'figure':<62} {'target':>8}" + "".join(f" {f['label'].split()[0]:>14}" for f in figures)
    print(head)
    for label, key, target in TARGETS:
        row = f"{label.format(wide=args.wide, cold_n=args.cold):<62} {'<= ' + str(target):>8}"
        for f in figures:
            note = "" if f["wide"] == args.wide or key == "cold_ms" else f" @{f['wide']:,}"
            if f[key] is None:
                row += f" {'n/a':>9} {'':<4}{note}"
                continue
            ok = "ok" if f[key] <= target else "MISS"
            row += f" {f[key]:>9.2f} {ok:<4}{note}"
        print(row)
    for f in figures:
        print(f"  {f['label']}: warm decision {f['warm_10_ms']:.3f} ms at 10, {f['warm_wide_ms']:.3f} ms at "
              f"{f['wide']:,}; virtual memory added {f['vm_added_mb']:,.0f} MB; threads before "
              f"{f['threads_before']}, during the cold replays at most {f['cold_threads_max']}")


E2E_WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e", "fixtures",
                           "branch_workers.py")


def e2e_figures(kind: str, n: int) -> dict[str, Any]:
    """One run on the local stack (printed as JSON): `code`, `code-sleep` or `dsl` over n items."""
    import orbit
    from orbit.local import LocalStack

    @orbit.workflow("bench-e2e-map")
    def mapped(ctx: Any, items: list[int]) -> int:
        return len(ctx.map(items, lambda c, item: c.step("br.echo", item)))

    def one_then_sleep(c: Any, item: int) -> Any:
        out = c.step("br.echo", item)
        c.sleep("1h")
        return out

    @orbit.workflow("bench-e2e-sleep")
    def sleeping(ctx: Any, items: list[int]) -> int:
        return len(ctx.map(items, one_then_sleep))

    dsl = {"orbit": 1, "name": "bench-e2e-for", "version": "1",
           "steps": {"each": {"for": "{% input.items %}", "task": "br.echo", "input": "{% item %}"}},
           "output": "{% $count(steps.each.output) %}"}
    peak = threading.active_count()
    with LocalStack(mode="inprocess", workers=[E2E_WORKERS]) as st:
        name = {"code": "bench-e2e-map", "code-sleep": "bench-e2e-sleep", "dsl": "bench-e2e-for"}[kind]
        st.register({"code": mapped, "code-sleep": sleeping, "dsl": dsl}[kind])
        t0 = time.perf_counter()
        eid = st.start(name, {"items": list(range(n))} if kind == "dsl" else list(range(n)))
        if kind == "code-sleep":
            st.run_until_idle(wall_timeout_s=1800)
            peak = max(peak, threading.active_count())
            st.advance(3600 + 5)
        desc = st.run_until_done(eid, wall_timeout_s=1800)
        total = time.perf_counter() - t0
        peak = max(peak, threading.active_count())
        assert desc["status"] == "COMPLETED" and desc["output"] == n, (desc["status"], desc.get("error"))
    return {"kind": kind, "n": n, "total_s": total, "per_branch_ms": total / n * 1000, "threads": peak}


def e2e(args: argparse.Namespace) -> None:
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "layers", "orbit")
    rows = []
    for label, path in [("new", here)] + ([("old", args.old)] if args.old else []):
        for kind in args.kinds.split(","):
            env = {**os.environ, "PYTHONPATH": os.path.abspath(path)}
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--e2e-one", kind,
                                   "--e2e", str(args.e2e)], env=env, capture_output=True, text=True)
            if done.returncode:
                print(f"{label} {kind}: failed: {done.stderr.strip().splitlines()[-1:]}")
                continue
            rows.append((label, json.loads(done.stdout.strip().splitlines()[-1])))
    print(f"{'checkout':<8} {'workflow':<42} {'branches':>8} {'start to end':>13} {'per branch':>11} "
          f"{'threads':>8}")
    what = {"code": "code ctx.map, one step each", "dsl": "DSL for, one task each",
            "code-sleep": "code ctx.map, a step then 1h sleep each"}
    for label, f in rows:
        print(f"{label:<8} {what[f['kind']]:<42} {f['n']:>8,} {f['total_s']:>11.1f} s "
              f"{f['per_branch_ms']:>8.2f} ms {f['threads']:>8,}")
    for label in dict.fromkeys(r[0] for r in rows):
        per = {f["kind"]: f["per_branch_ms"] for lab, f in rows if lab == label}
        if "code" in per and "dsl" in per:
            ratio = per["code"] / per["dsl"]
            print(f"{label}: code ctx.map per branch / DSL for per branch = {ratio:.2f}x "
                  f"(target: within 2x) {'ok' if ratio <= 2 else 'MISS'}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10,1000")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--width", action="store_true", help="the width figures against their targets")
    p.add_argument("--wide", type=int, default=10_000, help="branches of the wide parallel")
    p.add_argument("--cold", type=int, default=1_000, help="branches of the cold-replay parallel")
    p.add_argument("--old", help="an orbit package directory to compare with (e.g. main's layers/orbit)")
    p.add_argument("--old-width", type=int, default=10_000, help="cap on the old checkout's wide run")
    p.add_argument("--figures", type=int, help=argparse.SUPPRESS)  # child: print the figures as JSON
    p.add_argument("--e2e", type=int, help="branches of the end-to-end runs on the local stack")
    p.add_argument("--kinds", default="code,dsl,code-sleep", help="which end-to-end runs (--e2e)")
    p.add_argument("--e2e-one", help=argparse.SUPPRESS)  # child: one end-to-end run, as JSON
    args = p.parse_args()
    if args.e2e_one:
        print(json.dumps(e2e_figures(args.e2e_one, args.e2e)))
        return
    if args.e2e:
        e2e(args)
        return
    if args.figures:
        print(json.dumps(width_figures(args.figures, args.cold)))
        return
    if args.width:
        width(args)
        return
    rt = code_runtime.default_runtime()
    sizes = [int(s) for s in args.sizes.split(",")]
    per: dict[int, float] = {}
    print(f"{'branches':>9} {'decisions':>10} {'total':>12} {'per branch':>12} {'per decision':>13}")
    for n in sizes:
        runs = []
        for _ in range(args.rounds):
            rt.forget()
            runs.append(run(n))
        spent, count = min(runs)
        per[n] = spent / n
        print(f"{n:>9,} {count:>10,} {spent * 1000:>9.1f} ms {per[n] * 1000:>9.3f} ms "
              f"{spent / count * 1000:>10.3f} ms")
    lo, hi = per[min(sizes)], per[max(sizes)]
    print(f"per-branch cost, {max(sizes):,} vs {min(sizes):,} branches: {hi / lo:.2f}x (target: within 2x)")


if __name__ == "__main__":
    main()
