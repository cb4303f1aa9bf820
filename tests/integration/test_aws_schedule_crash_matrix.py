"""Crash points around every schedule write and send (API create, fire: claim, start, advance, re-arm;
run end: buffered start): nothing fires twice, nothing within the catch-up window is lost.

The suite runs the schedule path's points over 50 minutes; every write/send of a 100-minute run, before
and after: `python tests/integration/crash_schedules.py [--before]`."""

from __future__ import annotations

import pytest
from crash_matrix import RECORDER
from crash_schedules import SchedulerClients, check, run_once, schedule_points

MINUTES = 50  # three fires: a start, a buffered one, a skip, and a run end that starts the buffered one


@pytest.fixture(scope="module")
def sched_clients() -> SchedulerClients:
    return SchedulerClients()


@pytest.fixture(scope="module")
def reference(sched_clients):
    ref, crashes = run_once(sched_clients, RECORDER, None, MINUTES)
    assert not ref.problems and not crashes, ref.problems
    return ref


def test_reference_run_fires_buffers_and_skips(reference):
    assert len(reference.runs) >= 2 and set(reference.runs.values()) == {"COMPLETED"}
    assert all(eid.startswith("every15:") for eid in reference.runs)
    assert reference.counts["started"] == len(reference.runs)
    assert reference.counts.get("buffered", 0) >= 1
    assert reference.armed is not None  # the next fire stays armed


def test_crash_matrix(sched_clients, reference):
    points = schedule_points(reference.calls)
    labels = {f"{c.handler} {c.service}.{c.op}" for c in reference.calls if c.writes}
    assert any("scheduler." in lbl for lbl in labels) and any("PutItem" in lbl for lbl in labels)
    failures = []
    for p in points:
        got, crashes = run_once(sched_clients, RECORDER, p, MINUTES)
        if RECORDER.fired is None and not crashes:
            failures.append(f"{p}: the crash never fired")
            continue
        problems = check(reference, got)
        if problems:
            failures.append(f"{p} at {reference.calls[p.index]}: " + "; ".join(problems))
    assert not failures, f"{len(failures)} of {len(points)} crash points failed:\n" + "\n".join(failures)
