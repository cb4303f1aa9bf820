"""Workflows per second on the local stack, next to DBOS (SQLite) and the AWS durable
execution SDK's local test runner, for the same 3-step workflow; and where Orbit's time goes.

    python benchmarks/bench_local.py [--n 200] [--no-peers]

Orbit runs its real handlers on moto: every step is a task message on SQS, a
worker invocation, a result message and a decision (load + conditional write
on DynamoDB). The peers keep state in SQLite or in memory and run steps inline,
so the comparison shows the price of the AWS-shaped path, emulated.
Peers are installed into their own venv under /tmp (pinned); if that fails the
benchmark says so and prints Orbit's figures alone.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS_VENV = Path("/tmp/orbit-bench-peers")
PEERS = [
    "dbos==3.4.0",
    "aws-durable-execution-sdk-python==3.0.0",
    "aws-durable-execution-sdk-python-testing==1.4.0",
]

DEFINITION = {
    "orbit": 1,
    "name": "bench-three-steps",
    "version": "1",
    "steps": {
        "a": {"task": "bench.a", "input": {"x": "{% input.x %}"}},
        "b": {"task": "bench.b", "input": {"x": "{% steps.a.output.x %}"}},
        "c": {"task": "bench.c", "input": {"x": "{% steps.b.output.x %}"}},
    },
    "output": "{% steps.c.output.x %}",
}


def register_tasks() -> None:
    from orbit.worker import task

    task("bench.a")(lambda inp, ctx: {"x": inp["x"] + 1})
    task("bench.b")(lambda inp, ctx: {"x": inp["x"] * 2})
    task("bench.c")(lambda inp, ctx: {"x": inp["x"] - 3})


class Accounting:
    """Wall time per handler and per emulated AWS operation (botocore), while installed."""

    def __init__(self) -> None:
        self.handler_s: dict[str, float] = defaultdict(float)
        self.calls: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
        self.in_handler = False
        self.starts_s = 0.0
        self.aws_in_handlers_s = 0.0

    def install(self) -> None:
        import botocore.client
        from orbit.local import pump

        real_call, real_invoke = botocore.client.BaseClient._make_api_call, pump.invoke
        acct = self

        def timed_call(client, operation, params):  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            try:
                return real_call(client, operation, params)
            finally:
                took = time.perf_counter() - t
                c = acct.calls[f"{client.meta.service_model.service_name}.{operation}"]
                c[0] += 1
                c[1] += took
                if acct.in_handler:
                    acct.aws_in_handlers_s += took

        def timed_invoke(fn, handler, event):  # type: ignore[no-untyped-def]
            t = time.perf_counter()
            acct.in_handler = True
            try:
                return real_invoke(fn, handler, event)
            finally:
                acct.in_handler = False
                acct.handler_s[fn.logical_id] += time.perf_counter() - t

        botocore.client.BaseClient._make_api_call = timed_call  # type: ignore[method-assign]
        pump.invoke = timed_invoke  # type: ignore[assignment]


def run_orbit(n: int, mode: str, acct: Accounting | None = None) -> float:
    from orbit.local import LocalStack

    with LocalStack(mode=mode) as stack:
        stack.register(DEFINITION)
        if acct:
            acct.install()
        started = time.perf_counter()
        ids = [stack.start("bench-three-steps", {"x": i}) for i in range(n)]
        if acct:
            acct.starts_s = time.perf_counter() - started
        stack.run_until_idle(wall_timeout_s=600)
        elapsed = time.perf_counter() - started
        for eid in ids[:: max(1, n // 20)]:
            desc = stack.describe(eid)
            assert desc["status"] == "COMPLETED", desc
        assert stack.describe(ids[-1])["output"] == ((n - 1) + 1) * 2 - 3
    return elapsed


def run_fanout(n: int, mode: str) -> float:
    """One execution whose `for` step fans out to n tasks (concurrency 100)."""
    from orbit.local import LocalStack
    from orbit.worker import task

    task("bench.item")(lambda inp, ctx: {"v": inp["v"] * 2})
    definition = {
        "orbit": 1,
        "name": "bench-fanout",
        "version": "1",
        "steps": {
            "each": {
                "for": "{% input.items %}",
                "concurrency": 100,
                "task": "bench.item",
                "input": {"v": "{% item %}"},
            }
        },
        "output": "{% $count(steps.each.output) %}",
    }
    with LocalStack(mode=mode) as stack:
        stack.register(definition)
        started = time.perf_counter()
        eid = stack.start("bench-fanout", {"items": list(range(n))})
        desc = stack.run_until_done(eid, wall_timeout_s=1800)
        elapsed = time.perf_counter() - started
    assert desc["status"] == "COMPLETED" and desc["output"] == n, desc["status"]
    return elapsed


def ensure_peers() -> str | None:
    py = PEERS_VENV / "bin" / "python"
    if not py.exists():
        r = subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], capture_output=True, text=True)
        if r.returncode:
            return f"cannot create {PEERS_VENV}: {r.stderr.strip()[-200:]}"
    r = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *PEERS],
        capture_output=True,
        text=True,
    )
    return None if r.returncode == 0 else f"pip install failed: {r.stderr.strip()[-300:]}"


def run_peer(script: str, n: int) -> dict | str:
    with tempfile.TemporaryDirectory() as work:
        r = subprocess.run(
            [str(PEERS_VENV / "bin" / "python"), str(HERE / "peers" / script), str(n), work],
            capture_output=True,
            text=True,
            timeout=900,
        )
    if r.returncode:
        return f"failed: {r.stderr.strip()[-300:]}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--fanout", type=int, default=1000, help="elements of the fan-out run (0: skip)")
    args = ap.parse_args()
    register_tasks()
    n = args.n
    print(f"{n} executions of a 3-step workflow (a -> b -> c), started at once, run to completion\n")
    results: dict[str, float] = {}
    results["orbit local stack, in-process moto"] = n / run_orbit(n, "inprocess")
    acct = Accounting()
    server_s = run_orbit(n, "server", acct)
    results["orbit local stack, moto server (default)"] = n / server_s
    if not args.no_peers:
        problem = ensure_peers()
        for label, script in (
            ("DBOS 3.4 on SQLite", "dbos_3step.py"),
            ("AWS durable execution SDK testing runner", "durable_sdk_3step.py"),
        ):
            out = run_peer(script, n) if problem is None else f"skipped ({problem})"
            if isinstance(out, dict):
                results[label] = out["n"] / out["seconds"]
            else:
                print(f"{label}: {out}")
    base = results["orbit local stack, moto server (default)"]
    print(f"{'runtime':<44} {'workflows/s':>12} {'vs orbit (server)':>18}")
    for label, rate in results.items():
        print(f"{label:<44} {rate:>12.1f} {rate / base:>17.2f}x")

    print(f"\nwhere Orbit's time goes (moto server run, {server_s:.2f} s wall):")
    handler_total = sum(acct.handler_s.values())
    sum(t for _, t in acct.calls.values())
    for fn, t in sorted(acct.handler_s.items(), key=lambda kv: -kv[1]):
        print(f"  handler {fn:<28} {t:>7.2f} s")
    rows = [
        ("starting the executions (API path, decides inline)", acct.starts_s),
        ("pump: receive/delete outside handlers", server_s - handler_total - acct.starts_s),
        ("inside handlers: emulated AWS calls", acct.aws_in_handlers_s),
        ("inside handlers: engine, worker, powertools", handler_total - acct.aws_in_handlers_s),
    ]
    for label, seconds in rows:
        print(f"  {label:<52} {seconds:>7.2f} s")
    print(f"  emulated AWS calls by operation (all, {sum(int(c) for c, _ in acct.calls.values())} calls):")
    for op, (count, t) in sorted(acct.calls.items(), key=lambda kv: -kv[1][1])[:8]:
        print(f"    {op:<36} {int(count):>6} calls {t:>7.2f} s  {1000 * t / max(1, count):6.1f} ms/call")
    print(f"  AWS calls per workflow: {sum(int(c) for c, _ in acct.calls.values()) / n:.1f}")
    if args.fanout:
        fan_s = run_fanout(args.fanout, "inprocess")
        print(
            f"\n{args.fanout}-element `for` fan-out (concurrency 100), in-process moto: {fan_s:.1f} s, "
            f"{1000 * fan_s / args.fanout:.1f} ms per element"
        )


if __name__ == "__main__":
    main()
