"""The crash matrix for a group of branches (issue 14): a crash before and after every write and send
of a run whose parallel holds a step, a sleep then a step, and a signal wait. The group's own unit
(StepFanOut, then its recorded outcome) and every branch's units survive any crash: nothing is lost,
nothing runs twice."""

from __future__ import annotations

from typing import Any

from crash_code import BRANCHES
from crash_matrix import reference_run, run_point
from crash_points import crash_points


def test_the_reference_run_completes(clients: Any) -> None:
    ref = reference_run(clients, BRANCHES)
    assert ref.output == {"a": 6, "b": 2, "by": "ops"}


def test_a_crash_before_and_after_every_write_and_send_keeps_the_invariants(clients: Any) -> None:
    ref = reference_run(clients, BRANCHES)
    points = crash_points(ref.calls, writes_only=True)
    assert len(points) >= 20
    failed = [o for o in (run_point(clients, ref, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)
