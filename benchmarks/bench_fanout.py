"""Wall time of one `for` fan-out on the local stack, and the AWS calls it makes per element.

    python benchmarks/bench_fanout.py [--sizes 100,1000] [--modes inprocess,server]
                                      [--concurrency 100] [--profile /tmp/fanout.prof]

Each run starts ONE execution whose `for` step runs a task per element through
the real handlers on moto (decider on the decision queue, example worker on the
task queue), waits until it completes, checks every output and its order, and
prints the wall time, the handler invocations and batch fill, and the emulated AWS
calls by service and operation (per element), split into the pump's own calls
(receive/delete, as an event source mapping makes them) and the handlers' calls.
"""

from __future__ import annotations

import argparse
import cProfile
import time
from collections import Counter
from typing import Any

DEFINITION: dict[str, Any] = {
    "orbit": 1,
    "name": "bench-fanout",
    "version": "1",
    "steps": {
        "each": {
            "for": "{% input.items %}",
            "task": "bench.fan.double",
            "input": {"v": "{% item %}"},
        }
    },
    "output": "{% steps.each.output.v %}",
}


class Calls:
    """Counts botocore calls (service.operation), inside vs outside handlers, while installed."""

    def __init__(self) -> None:
        self.inside: Counter[str] = Counter()
        self.outside: Counter[str] = Counter()
        self.batches: Counter[str] = Counter()  # function -> invocations
        self.records: Counter[str] = Counter()  # function -> records handed over
        self._in_handler = False
        self._undo: list[Any] = []

    def install(self) -> None:
        import botocore.client
        from orbit.local import pump

        real_call, real_invoke = botocore.client.BaseClient._make_api_call, pump.invoke
        calls = self

        def counted_call(client: Any, operation: str, params: Any) -> Any:
            key = f"{client.meta.service_model.service_name}.{operation}"
            (calls.inside if calls._in_handler else calls.outside)[key] += 1
            return real_call(client, operation, params)

        def counted_invoke(fn: Any, handler: Any, event: dict[str, Any]) -> Any:
            calls.batches[fn.logical_id] += 1
            calls.records[fn.logical_id] += len(event.get("Records", []))
            calls._in_handler = True
            try:
                return real_invoke(fn, handler, event)
            finally:
                calls._in_handler = False

        botocore.client.BaseClient._make_api_call = counted_call  # type: ignore[method-assign]
        pump.invoke = counted_invoke  # type: ignore[assignment]

        def undo() -> None:
            botocore.client.BaseClient._make_api_call = real_call  # type: ignore[method-assign]
            pump.invoke = real_invoke  # type: ignore[assignment]

        self._undo.append(undo)

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()


def run(n: int, mode: str, concurrency: int | None, profile: str | None) -> None:
    from orbit.local import LocalStack
    from orbit.worker import task

    task("bench.fan.double")(lambda inp, ctx: {"v": inp["v"] * 2})
    definition = {**DEFINITION, "steps": {"each": dict(DEFINITION["steps"]["each"])}}
    if concurrency:
        definition["steps"]["each"]["concurrency"] = concurrency
    calls = Calls()
    with LocalStack(mode=mode) as stack:
        stack.register(definition)
        calls.install()
        prof = cProfile.Profile() if profile else None
        started = time.perf_counter()
        if prof:
            prof.enable()
        try:
            eid = stack.start("bench-fanout", {"items": list(range(n))})
            desc = stack.run_until_done(eid, wall_timeout_s=1800)
        finally:
            if prof:
                prof.disable()
            calls.uninstall()
        elapsed = time.perf_counter() - started
    if desc["status"] != "COMPLETED" or desc["output"] != [2 * i for i in range(n)]:
        output = str(desc.get("output"))[:200]
        raise SystemExit(f"fan-out of {n} ({mode}) went wrong: {desc['status']} {output}")
    if prof and profile:
        path = f"{profile}.{mode}.{n}"
        prof.dump_stats(path)
        print(f"  profile written to {path}")
    print(
        f"{n:>5} elements, {mode:<9} concurrency {concurrency or '-':<5} {elapsed:7.2f} s wall, "
        f"{1000 * elapsed / n:6.2f} ms per element"
    )
    for fn in sorted(calls.batches):
        print(
            f"    {fn:<24} {calls.batches[fn]:>5} invocations, "
            f"{calls.records[fn] / calls.batches[fn]:.1f} records per batch"
        )
    for label, counter in (("handlers", calls.inside), ("pump + API", calls.outside)):
        total = sum(counter.values())
        print(f"    AWS calls in {label}: {total / n:.2f} per element")
        for op, count in counter.most_common():
            print(f"      {op:<36} {count:>6}  {count / n:6.2f} per element")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--modes", default="inprocess,server")
    ap.add_argument("--concurrency", type=int, default=0, help="the for step's concurrency (0: unlimited)")
    ap.add_argument("--profile", default=None, help="write cProfile stats to PATH.<mode>.<n>")
    args = ap.parse_args()
    for mode in args.modes.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            run(n, mode, args.concurrency or None, args.profile)


if __name__ == "__main__":
    main()
