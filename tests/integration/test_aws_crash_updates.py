"""The crash matrix for updates: a crash before and after every write and send of a run that gets
an update through the API (code workflow and definition; crash_updates.py): the update is recorded
and handled exactly once (the output shows it), and asking again with its id returns its result."""

from __future__ import annotations

from typing import Any

import pytest
from crash_matrix import RECORDER, reference_run, run_point
from crash_points import Call, crash_points
from crash_updates import CODE, DEFN, OUTPUTS
from crash_world import EXECUTION, fresh_world


@pytest.mark.parametrize("scenario,key", [(CODE, "code"), (DEFN, "defn")], ids=["code", "definition"])
def test_the_reference_run_records_the_update_once(clients: Any, scenario: Any, key: str) -> None:
    with fresh_world(clients, RECORDER, scenario, None) as world:
        world.run()
        types = [e["type"] for e in world.container().engine.history(EXECUTION)]
    assert types.count("UpdateAccepted") == 1 and types.count("UpdateCompleted") == 1
    ref = reference_run(clients, scenario)
    assert ref.output == OUTPUTS[key]
    assert Call("api", "sqs", "SendMessage", "DecisionQueue: update") in ref.calls
    # the update's and the signal's ids are claimed at acceptance (service/request_claims.py): new
    # writes, so the matrix crashes before and after each
    assert sum(c == Call("api", "dynamodb", "UpdateItem", "REQ/REQ") for c in ref.calls) >= 2, ref.calls


@pytest.mark.parametrize("scenario", [CODE, DEFN], ids=["code", "definition"])
def test_a_crash_before_and_after_every_write_and_send_keeps_the_invariants(clients: Any,
                                                                             scenario: Any) -> None:
    ref = reference_run(clients, scenario)
    points = crash_points(ref.calls, writes_only=True)
    assert len(points) >= 10
    failed = [o for o in (run_point(clients, ref, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)
