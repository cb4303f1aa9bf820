"""Regenerate the DSL golden histories (run by hand, then review the diff):

    python tests/golden/dsl/regenerate.py

Each golden file holds a definition, the history the engine recorded for it,
and the state that history folds to. `tests/unit/test_golden_dsl.py` checks
that the history still replays to exactly that state as the code evolves.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from orbit.testing.simulator import Simulator, crash, fail, hang, late, succeed

HERE = Path(__file__).parent
T0 = 1_700_000_000_000


def scenario_saga() -> tuple[dict[str, Any], Simulator, str]:
    d = {
        "orbit": 1,
        "name": "saga",
        "version": "1",
        "steps": {
            "reserve": {
                "task": "inventory.reserve",
                "input": {"items": "{% input.items %}"},
                "compensate": {"task": "inventory.release", "input": {"r": "{% steps.reserve.output %}"}},
            },
            "charge": {
                "task": "payments.charge",
                "after": ["reserve"],
                "retry": {"max_attempts": 3, "backoff": "1s"},
                "compensate": {"task": "payments.refund"},
            },
            "ship": {"task": "shipping.ship", "after": ["charge"], "timeout": "30s"},
        },
    }
    sim = Simulator(start_ms=T0, seed="golden")
    sim.register(d)
    sim.worker("inventory.reserve", succeed("R-1"))
    sim.worker("payments.charge", fail("BUSY"), succeed("C-1"))
    sim.worker("shipping.ship", hang())
    sim.worker("inventory.release", succeed())
    sim.worker("payments.refund", succeed())
    return d, sim, sim.start("saga", {"items": [1, 2]}, id="saga-1")


def scenario_fanout() -> tuple[dict[str, Any], Simulator, str]:
    d = {
        "orbit": 1,
        "name": "fan",
        "version": "1",
        "steps": {
            "ship": {
                "for": "{% input.items %}",
                "concurrency": 2,
                "tolerated_failures": 1,
                "task": "s.ship",
                "input": {"sku": "{% item %}", "line": "{% index %}"},
            },
            "skipped": {"when": "{% false %}", "task": "s.never"},
            "total": {"compute": "{% $count(steps.ship.output) %}", "after": ["skipped"]},
            "cool": {"sleep": "7d", "after": ["ship"]},
        },
        "output": {"shipped": "{% steps.ship.output %}", "n": "{% steps.total.output %}"},
    }
    sim = Simulator(start_ms=T0, seed="golden")
    sim.register(d)
    sim.worker(
        "s.ship", succeed("a"), fail("GONE", retryable=False), crash(), late(5000, "late"), succeed("b")
    )
    return d, sim, sim.start("fan", {"items": ["x", "y", "z", "w"]}, id="fan-1")


def scenario_signals() -> tuple[dict[str, Any], Simulator, str]:
    d = {
        "orbit": 1,
        "name": "approve",
        "version": "1",
        "timeout": "30d",
        "signals": {
            "approval": {"schema": {"type": "object", "required": ["approved"]}},
            "note": {"schema": {"type": "string"}},
        },
        "steps": {
            "ask": {"compute": {"token": "{% hooks.approval.token %}"}},
            "note": {"wait_for": "note", "timeout": "1d"},
            "approval": {"wait_for": "approval", "after": ["ask"], "timeout": "7d"},
        },
        "output": "{% steps.approval.output %}",
    }
    sim = Simulator(start_ms=T0, seed="golden")
    sim.register(d)
    eid = sim.start("approve", {}, id="approve-1")
    sim.signal(eid, "note", "early")
    sim.run_until_idle()
    token = sim.describe(eid)["steps"]["ask"]["output"]["token"]
    sim.resume_hook(token, {"approved": True})
    return d, sim, eid


def scenario_cancel() -> tuple[dict[str, Any], Simulator, str]:
    d = {
        "orbit": 1,
        "name": "cancel",
        "version": "1",
        "steps": {
            "a": {"task": "t.a", "compensate": {"task": "t.undo"}},
            "b": {"task": "t.b", "after": ["a"]},
            "c": {"task": "nobody.serves", "after": ["a"], "queue_timeout": "1h"},
        },
    }
    sim = Simulator(start_ms=T0, seed="golden")
    sim.register(d)
    sim.worker("t.a", succeed(1))
    sim.worker("t.b", hang())
    sim.worker("t.undo", succeed())
    eid = sim.start("cancel", {}, id="cancel-1")
    sim.run_until_idle()
    sim.cancel(eid, "operator")
    return d, sim, eid


def scenario_handlers() -> tuple[dict[str, Any], Simulator, str]:
    d = {
        "orbit": 1,
        "name": "cart",
        "version": "1",
        "signals": {"item": {"schema": {"type": "object", "required": ["sku"]}}},
        "steps": {
            "open": {"task": "cart.open", "compensate": {"task": "cart.close"}},
            "nap": {"sleep": "1h", "after": ["open"]},
        },
        "on_signal": {
            "item": {
                "concurrency": 2,
                "steps": {
                    "add": {
                        "task": "cart.add",
                        "input": {"sku": "{% event.sku %}", "cart": "{% main.steps.open.output %}"},
                        "compensate": {"task": "cart.remove", "input": {"sku": "{% event.sku %}"}},
                    },
                    "label": {"for": "{% event.tags %}", "compute": "{% item & '@' & index %}"},
                    "price": {"task": "cart.price", "after": ["add"]},
                },
                "output": {"sku": "{% event.sku %}", "labels": "{% steps.label.output %}"},
            }
        },
    }
    sim = Simulator(start_ms=T0, seed="golden")
    sim.register(d)
    sim.worker("cart.open", succeed("C-1"))
    sim.worker("cart.add", succeed("added"))
    sim.worker("cart.price", succeed(10), succeed(20), hang())
    sim.worker("cart.remove", succeed())
    sim.worker("cart.close", succeed())
    eid = sim.start("cart", {}, id="cart-1")
    sim.run_until_idle()
    for sku, tags in (("A", ["x"]), ("B", []), ("C", ["y", "z"])):
        sim.signal(eid, "item", {"sku": sku, "tags": tags})
    sim.run_until_idle()
    sim.cancel(eid, "customer left")
    return d, sim, eid


SCENARIOS = {
    "saga": scenario_saga,
    "fanout": scenario_fanout,
    "signals": scenario_signals,
    "cancel": scenario_cancel,
    "handlers": scenario_handlers,
}


def golden(name: str) -> dict[str, Any]:
    from orbit.core.history.model import fold, recorded_from_dict

    d, sim, eid = SCENARIOS[name]()
    sim.run()
    history = sim.history(eid)
    state = fold(eid, [recorded_from_dict(e) for e in history])
    folded = state.to_dict()
    folded.pop("inbound_log")
    folded.pop("signal_log")
    return {
        "definition": d,
        "execution_id": eid,
        "history": history,
        "describe": state.describe(),
        "state": folded,
    }


def main() -> None:
    names = sys.argv[1:] or list(SCENARIOS)
    for name in names:
        (HERE / f"{name}.json").write_text(json.dumps(golden(name), indent=1, sort_keys=True) + "\n")
        print(f"wrote {name}.json")


if __name__ == "__main__":
    main()
