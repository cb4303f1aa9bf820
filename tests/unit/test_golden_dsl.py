"""Golden DSL histories (tests/golden/dsl/*.json) keep replaying to their checked-in state.

`regenerate.py` next to them rebuilds the files; a diff there is a change of
behaviour to review, not noise.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from orbit.core.definition import definition_hash
from orbit.core.history.model import fold, recorded_from_dict

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "dsl"
FILES = sorted(GOLDEN.glob("*.json"))


def replay_problems(golden: dict[str, Any]) -> list[str]:
    """Differences between what the history folds to and the recorded state."""
    state = fold(golden["execution_id"], [recorded_from_dict(e) for e in golden["history"]])
    got = state.to_dict()
    got.pop("inbound_log")
    got.pop("signal_log")
    for key, unit in (got.get("units") or {}).items():  # units may gain fields (issue 10: fire_at_ms)
        recorded = (golden["state"].get("units") or {}).get(key)
        if recorded is not None:
            got["units"][key] = {k: unit.get(k) for k in recorded}
    problems = [f"state.{k}: {got.get(k)!r} != {v!r}" for k, v in golden["state"].items() if got.get(k) != v]
    described = state.describe()
    # describe may gain keys (issue 10: continued_from, continued_to, build); the recorded ones must hold
    if {k: described.get(k) for k in golden["describe"]} != golden["describe"]:
        problems.append("describe differs")
    return problems


def test_there_are_golden_histories() -> None:
    assert {f.stem for f in FILES} >= {"saga", "fanout", "signals", "cancel", "handlers"}


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_golden_history_replays_to_its_state(path: Path) -> None:
    golden = json.loads(path.read_text())
    assert replay_problems(golden) == []
    created = golden["history"][0]
    assert created["type"] == "WorkflowCreated"
    assert created["definition_hash"] == definition_hash(golden["definition"])  # the pin still matches


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_the_engine_still_records_the_same_history(path: Path) -> None:
    import sys

    sys.path.insert(0, str(GOLDEN))
    try:
        import regenerate  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(GOLDEN))
    golden = json.loads(path.read_text())
    fresh = regenerate.golden(path.stem)
    assert fresh["history"] == golden["history"]


def test_a_tampered_history_is_caught() -> None:
    golden = json.loads((GOLDEN / "saga.json").read_text())
    bad = copy.deepcopy(golden)
    # drop the compensation of `charge`: the replayed state no longer matches the record
    bad["history"] = [
        e
        for e in bad["history"]
        if not (e["type"] == "StepSucceeded" and e.get("step") == "compensate:charge")
    ]
    problems = replay_problems(bad)
    assert problems and any("units" in p or "compensation" in p for p in problems)
