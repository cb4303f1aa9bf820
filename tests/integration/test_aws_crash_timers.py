"""Crash points around the timers sweep's hand-over to SQS (crash_timers.py): a crash after the
delayed wake was sent but before the table timer was deleted, or before the send, loses no timer and
fires none twice in effect; every timer still fires within a second of its time."""

from __future__ import annotations

from typing import Any

import pytest
from crash_matrix import RECORDER, check
from crash_points import CrashPoint, crash_points
from crash_timers import lateness, timer_problems, timer_world


def _run(clients: Any, point: CrashPoint | None) -> tuple[list[str], Any, list[Any]]:
    with timer_world(clients, RECORDER, point) as world:
        try:
            world.run()
        except AssertionError as e:
            return [f"the run failed: {e}"], None, list(RECORDER.calls)
        output = world.container().engine.describe("crash-1").get("output")
        problems, _ = check(world, "rested")
        problems += timer_problems(world)
        if point is not None and RECORDER.fired is None and not world.crashes:
            problems.append("the crash never fired")
        return problems, (output, lateness(world)), list(RECORDER.calls)


@pytest.fixture(scope="module")
def reference(clients: Any) -> list[Any]:
    problems, got, calls = _run(clients, None)
    assert not problems, problems
    assert got[0] == "rested" and all(0 <= ms <= 1_000 for ms in got[1].values()), got
    return calls


def test_the_sweep_hands_both_long_sleeps_to_sqs(reference: list[Any]) -> None:
    sends = [c for c in reference if c.handler == "timers" and c.op == "SendMessage"]
    deletes = [c for c in reference if c.handler == "timers" and c.op == "DeleteItem"]
    assert len(sends) == 2 and len(deletes) >= 4  # each: a delayed wake, then the item and the pointer


def test_crash_matrix_around_the_hand_over(clients: Any, reference: list[Any]) -> None:
    """Every write and send of the run, crashing before and after it (the sweep's among them)."""
    points = crash_points(reference, writes_only=True)
    assert any(reference[p.index].handler == "timers" for p in points)
    failures = []
    for p in points:
        problems, _, _ = _run(clients, p)
        if problems:
            failures.append(f"{p} at {reference[p.index]}: " + "; ".join(problems))
    assert not failures, f"{len(failures)} of {len(points)} crash points failed:\n" + "\n".join(failures)
