"""Helpers for the DSL scenario tests: a simulator with one definition registered."""

from __future__ import annotations

from typing import Any

from orbit.testing.simulator import Simulator

T0 = 1_700_000_000_000


def definition(steps: dict[str, Any], name: str = "wf", **extra: Any) -> dict[str, Any]:
    return {"orbit": 1, "name": name, "version": str(extra.pop("version", "1")), "steps": steps, **extra}


def sim_with(steps: dict[str, Any], **extra: Any) -> Simulator:
    sim = Simulator(start_ms=T0)
    sim.register(definition(steps, **extra))
    return sim


def events(sim: Simulator, eid: str, *types: str) -> list[dict[str, Any]]:
    return [e for e in sim.history(eid) if not types or e["type"] in types]


def unit_types(sim: Simulator, eid: str, unit: str) -> list[str]:
    return [e["type"] for e in sim.history(eid) if e.get("step") == unit]


def scheduled_running_peak(sim: Simulator, eid: str, prefix: str) -> int:
    """Most units of a `for` step alive at once, read from history."""
    live: set[str] = set()
    peak = 0
    for e in sim.history(eid):
        step = e.get("step", "")
        if not step.startswith(prefix + "["):
            continue
        if e["type"] == "StepScheduled":
            live.add(step)
        elif e["type"] in ("StepSucceeded", "StepFailed", "StepCancelled"):
            live.discard(step)
        peak = max(peak, len(live))
    return peak
