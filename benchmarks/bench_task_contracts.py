"""What checking `tasks:` contracts at run time costs the decider, in CPU time (time.process_time).

Runs the same chain of worker steps on the in-memory simulator (the real decider) three ways:
without `tasks:`, with contracts on every task (input and output), and with `tasks:` declaring only
descriptions (no schema: must cost nothing). Prints CPU per step for each and the ratios, plus the
cost of one check alone. Figures are CPU time, so they hold on a shared machine.

Run: .venv/bin/python benchmarks/bench_task_contracts.py [STEPS] [EXECUTIONS]
"""

from __future__ import annotations

import sys
import time
from typing import Any

from orbit.core.definition import parse_definition
from orbit.testing.simulator import Simulator, call

ROUNDS = 5
ITEM = {"type": "object", "required": ["sku", "qty"],
        "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]+$"},
                       "qty": {"type": "integer", "minimum": 1}}}
CONTRACT = {"input": {"type": "object", "required": ["n", "items"],
                      "properties": {"n": {"type": "integer"}, "items": {"type": "array", "items": ITEM}}},
            "output": {"type": "object", "required": ["n", "items"],
                       "properties": {"n": {"type": "integer"}, "items": {"type": "array", "items": ITEM}}}}


def chain(steps: int, tasks: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for i in range(steps):
        src = "{% input %}" if i == 0 else "{% steps.s" + str(i - 1) + ".output %}"
        body[f"s{i}"] = {"task": "bench.step", "input": src}
    doc: dict[str, Any] = {"orbit": 1, "name": "chain", "steps": body}
    if tasks is not None:
        doc["tasks"] = tasks
    return doc


def cpu_per_step(doc: dict[str, Any], steps: int, executions: int) -> float:
    sim = Simulator(seed="bench-contracts")
    sim.register(doc)
    sim.worker("bench.step", call(lambda input, ctx: {"n": input["n"] + 1, "items": input["items"]}))
    items = [{"sku": f"ABC-{i}", "qty": i + 1} for i in range(10)]
    began = time.process_time()
    for e in range(executions):
        eid = sim.start("chain", {"n": 0, "items": items}, id=f"e{e}")
        sim.run()
        assert sim.describe(eid)["status"] == "COMPLETED"
    return (time.process_time() - began) / (steps * executions)


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    executions = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    variants = {"plain": None, "checked": {"bench.step": CONTRACT},
                "described": {"bench.step": {"description": "no schema"}}}
    for tasks in variants.values():  # warm up: imports, caches
        cpu_per_step(chain(steps, tasks), steps, 2)
    best: dict[str, float] = {}
    for _ in range(ROUNDS):  # interleaved, best of ROUNDS: other processes' load only adds time
        for name, tasks in variants.items():
            cpu = cpu_per_step(chain(steps, tasks), steps, executions)
            best[name] = min(best.get(name, cpu), cpu)
    plain, checked, described = best["plain"], best["checked"], best["described"]
    d = parse_definition(chain(1, {"bench.step": CONTRACT}))
    contracts = d.task_contracts
    assert contracts is not None and parse_definition(chain(1, None)).task_contracts is None
    value = {"n": 1, "items": [{"sku": f"ABC-{i}", "qty": i + 1} for i in range(10)]}
    n = 5000
    began = time.process_time()
    for _ in range(n):
        contracts.check("bench.step", "s0", "output", value)
    one = (time.process_time() - began) / n
    print(f"{steps} worker steps x {executions} executions on the simulator, best of {ROUNDS} "
          "(CPU time per step):")
    print(f"  without tasks:                    {plain * 1e6:8.0f} us")
    print(f"  tasks: with input+output schemas  {checked * 1e6:8.0f} us  ({checked / plain:.2f}x)")
    print(f"  tasks: descriptions only          {described * 1e6:8.0f} us  ({described / plain:.2f}x)")
    print(f"one output check (10-item object, RE2 pattern): {one * 1e6:.0f} us CPU")


if __name__ == "__main__":
    main()
