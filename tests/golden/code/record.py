"""Re-record the golden histories of code workflows (run from the repository root).

    python tests/golden/code/record.py

Each scenario runs on the in-memory Simulator with a fixed seed and start
time, so recording twice gives the same files.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from orbit.testing.simulator import Simulator, fail

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tour() -> tuple[Any, list[dict[str, Any]]]:
    wfs = load(HERE / "workflows.py", "golden_code_workflows")
    sim = Simulator(seed="golden-tour")
    sim.register(wfs.tour)
    sim.register(wfs.kid)
    sim.worker("misc.echo", lambda input, ctx: {"echo": input})
    sim.worker("misc.square", lambda input, ctx: input * input)
    sim.worker("misc.fail", fail("NOPE", "always fails", retryable=False))
    eid = sim.start("golden-tour", {"n": 7}, id="golden-tour-1")
    sim.run_until_idle()
    sim.advance(6 * 60_000)
    sim.run_until_idle()
    sim.signal(eid, "go", {"approved": True})
    sim.run()
    return wfs.tour, sim.history(eid)


def branches() -> tuple[Any, list[dict[str, Any]]]:
    wfs = load(HERE / "workflows.py", "golden_code_workflows")
    sim = Simulator(seed="golden-branches")
    sim.register(wfs.branches)
    sim.register(wfs.kid)
    sim.worker("misc.echo", lambda input, ctx: {"echo": input})
    sim.worker("misc.square", lambda input, ctx: input * input)
    sim.worker("misc.fail", fail("NOPE", "always fails", retryable=False))
    eid = sim.start("golden-branches", {}, id="golden-branches-1")
    sim.run_until_idle()
    sim.advance(6 * 60_000)
    sim.run_until_idle()
    sim.signal(eid, "go", {"approved": True})
    sim.run()
    return wfs.branches, sim.history(eid)


def scopes() -> tuple[Any, list[dict[str, Any]]]:
    wfs = load(HERE / "workflows.py", "golden_code_workflows")
    sim = Simulator(seed="golden-scopes")
    sim.register(wfs.scopes)
    sim.register(wfs.kid)
    sim.worker("misc.echo", lambda input, ctx: {"echo": input})
    sim.worker("misc.square", lambda input, ctx: input * input)
    eid = sim.start("golden-scopes", {}, id="golden-scopes-1")
    sim.run()
    return wfs.scopes, sim.history(eid)


def saga(scenario: str) -> tuple[Any, list[dict[str, Any]]]:
    orders = load(ROOT / "examples" / "workers" / "orders.py", "golden_order_workers")
    module = load(ROOT / "examples" / "code" / "order_saga.py", "golden_order_saga")
    sim = Simulator(seed=f"golden-saga-{scenario}")
    sim.register(module.order_saga)
    for task in ("inventory.reserve", "inventory.release", "payments.charge", "payments.refund",
                 "shipping.ship"):
        sim.worker(task, getattr(orders, task.split(".")[1]))
    order = json.loads((ROOT / "examples" / "inputs" /
                        ("order_declined.json" if scenario == "declined" else "order.json")).read_text())
    eid = sim.start("order-fulfilment-code", order, id=f"golden-saga-{scenario}")
    sim.run_until_idle()
    if scenario == "cancelled":
        sim.cancel(eid, "customer cancelled")
    else:
        sim.signal(eid, "approval", {"approved": True, "by": "golden"})
    sim.run()
    return module.order_saga, sim.history(eid)


SCENARIOS = {
    "tour": tour,
    "branches": branches,
    "scopes": scopes,
    "saga_success": lambda: saga("success"),
    "saga_declined": lambda: saga("declined"),
    "saga_cancelled": lambda: saga("cancelled"),
}


def main() -> None:
    for name, make in SCENARIOS.items():
        wf, history = make()
        body = {"workflow": wf.name, "status": _status(history), "history": history}
        (HERE / f"{name}.json").write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
        print(f"{name}: {len(history)} events, {body['status']}")
    # A known-bad history: the success saga with the charge recorded as another task.
    good = json.loads((HERE / "saga_success.json").read_text())
    for event in good["history"]:
        if event["type"] == "StepScheduled" and event["task"] == "payments.charge":
            event["task"] = "payments.authorize"
    good["expect_nondeterminism"] = {"recorded": "payments.authorize", "requested": "payments.charge"}
    (HERE / "bad_saga_wrong_task.json").write_text(json.dumps(good, indent=1, sort_keys=True) + "\n")


def _status(history: list[dict[str, Any]]) -> str:
    last = history[-1]["type"]
    return {"WorkflowCompleted": "COMPLETED", "WorkflowFailed": "FAILED",
            "WorkflowCancelled": "CANCELLED", "WorkflowTimedOut": "TIMED_OUT"}.get(last, "RUNNING")


if __name__ == "__main__":
    main()
