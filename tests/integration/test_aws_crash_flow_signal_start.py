"""The crash matrix for a signal-with-start under a start limit (docs/flow-control.md, "Per call:
a start's priority"; docs/triggers.md): the API takes the execution's slot (a new write) before the
commit that creates it with its signal. A crash before and after every write and send of the API
call (retried with the same signal id) and of the run it starts keeps the invariants of
crash_matrix.py: nothing lost, nothing run twice, and no slot left held (`_check_slots`)."""

from __future__ import annotations

from typing import Any

import pytest
from crash_matrix import Reference, reference_run, run_point
from crash_points import crash_points
from crash_world import Scenario

SIGNALLED = Scenario(({"orbit": 1, "name": "crashmx-door", "version": "1",
                       "concurrency": {"limit": 1, "key": "{% $string(input.v) %}"},
                       "signals": {"go": {}},
                       "steps": {"wait": {"wait_for": "go"},
                                 "call": {"task": "crashmx.double", "input": {"v": "{% input.v %}"},
                                          "after": ["wait"]}},
                       "output": "{% steps.call.output %}"},),
                     {"v": 1}, signal=("go", {"payload": {"ok": True}, "id": "door-1"}), with_start=True)
SHARDS = 2


@pytest.fixture(scope="module")
def reference(clients: Any) -> Reference:
    return reference_run(clients, SIGNALLED)


def test_the_api_takes_the_slot_before_its_commit(reference: Reference) -> None:
    api = [(c.op, c.detail) for c in reference.calls if c.handler == "api" and c.writes]
    assert ("UpdateItem", "FLOW/C") in api, api  # the acquire, a crash point of its own
    assert api.index(("UpdateItem", "FLOW/C")) < len(api) - 1  # before the commit


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_crash_keeps_the_invariants_and_loses_no_slot(clients: Any, reference: Reference,
                                                            shard: int) -> None:
    points = crash_points(reference.calls, writes_only=True)[shard::SHARDS]
    failed = [o for o in (run_point(clients, reference, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)
