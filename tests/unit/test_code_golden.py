"""Golden histories of code workflows (tests/golden/code/*.json) must keep replaying cleanly.

At every prefix of a recorded history, a cold replay of the current code may
only ask for what the history records next (the same units, hooks, progress
and outcome) and must never park. A history altered to record a different
call must fail, showing the recorded and the requested call.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from orbit.core.history.events import recorded_from_dict
from orbit.core.history.model import apply
from orbit.core.history.state import ExecutionState
from orbit.core.runtime import commands as C
from orbit.service.replay_host import CodeRuntime

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "code"
ROOT = GOLDEN.parents[2]


def _load(path: Path, name: str) -> Any:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _workflow(name: str) -> Any:
    if name == "order-fulfilment-code":
        return _load(ROOT / "examples" / "code" / "order_saga.py", "golden_order_saga").order_saga
    return getattr(_load(GOLDEN / "workflows.py", "golden_code_workflows"), name.removeprefix("golden-"))


def _created(records: list[Any], start: int) -> tuple[set[str], set[str], list[Any]]:
    """Units and hooks created, and progress recorded, at or after index `start`."""
    units, hooks, progress = set(), set(), []
    for r in records[start:]:
        d = r.event.to_dict()
        if r.event.type in ("StepScheduled", "TimerStarted", "WaitStarted", "ChildStarted", "StepFanOut"):
            units.add(d["step"])
        elif r.event.type == "HookCreated":
            hooks.add(d["name"])
        elif r.event.type == "ProgressRecorded":
            progress.append(d["data"])
    return units, hooks, progress


def replay(wf: Any, history: list[dict[str, Any]]) -> list[str]:
    """Problems found replaying `history` with `wf` (empty: it replays cleanly)."""
    records = [recorded_from_dict(d) for d in history]
    final = records[-1].event.to_dict()
    runtime = CodeRuntime(cache_size=0)
    state = ExecutionState(records[0].event.to_dict().get("execution_id") or "golden")
    problems: list[str] = []
    for i, r in enumerate(records):
        apply(state, r)
        state.build = wf.build  # replay this history with the code under test
        if state.terminal:
            break
        units, hooks, progress = _created(records, i + 1)
        for c in C.flatten(runtime.run(wf, state, r.timestamp_ms)):
            where = f"after seq {r.seq} ({r.event.type})"
            if isinstance(c, C.Park):
                problems.append(f"{where}: parked: {c.error.message}")
            elif isinstance(c, C.ScheduleStep) and c.step.unit not in units | set(state.units):
                problems.append(f"{where}: asks for unit {c.step.unit!r} that history never records")
            elif isinstance(c, (C.WaitUntil, C.WaitForSignal, C.LinkChild)) and \
                    c.unit not in units | set(state.units):
                problems.append(f"{where}: asks for unit {c.unit!r} that history never records")
            elif isinstance(c, C.CreateHook) and c.hook_id not in hooks | set(state.hooks):
                problems.append(f"{where}: asks for hook {c.hook_id!r} that history never records")
            elif isinstance(c, C.RecordProgress) and c.data not in progress:
                problems.append(f"{where}: records progress {c.data!r} that history never records")
            elif isinstance(c, C.Complete) and (final["type"], final.get("output")) != \
                    ("WorkflowCompleted", json.loads(json.dumps(c.output))):
                problems.append(f"{where}: completes with {c.output!r}, history ends {final}")
            elif isinstance(c, C.Fail) and final["type"] != "WorkflowFailed":
                problems.append(f"{where}: fails ({c.error.code}), history ends {final['type']}")
    return problems


GOOD = sorted(p for p in GOLDEN.glob("*.json") if not p.name.startswith("bad_"))


def test_there_are_goldens():
    assert {p.stem for p in GOOD} >= {"tour", "saga_success", "saga_declined", "saga_cancelled"}


@pytest.mark.parametrize("path", GOOD, ids=[p.stem for p in GOOD])
def test_golden_history_replays_cleanly(path):
    body = json.loads(path.read_text())
    assert body["status"] != "RUNNING"
    assert replay(_workflow(body["workflow"]), body["history"]) == []


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("bad_*.json")), ids=lambda p: p.stem)
def test_nondeterministic_history_fails_with_the_diff(path):
    body = json.loads(path.read_text())
    problems = replay(_workflow(body["workflow"]), body["history"])
    assert problems, "a history that records another call must not replay cleanly"
    expect = body["expect_nondeterminism"]
    assert "non-deterministic replay" in problems[0]
    assert f"task({expect['recorded']})" in problems[0] and f"task({expect['requested']})" in problems[0]


def test_a_changed_call_in_a_good_golden_is_caught():
    body = json.loads((GOLDEN / "tour.json").read_text())
    for event in body["history"]:
        if event["type"] == "TimerStarted":
            event["step"] = event["step"].replace("sleep()", "nap()")
    problems = replay(_workflow(body["workflow"]), body["history"])
    assert problems and "sleep()" in problems[0]
