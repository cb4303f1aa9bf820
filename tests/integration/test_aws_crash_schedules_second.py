"""The schedule crash matrix with the AWS defaults (crash_schedules_second.py): Scheduler armed a
minute early, the decider's delayed re-send of the early fire and the sweep's hand-over of the runs'
sleeps are crash points too; nothing fires twice, nothing is lost, runs start on their second."""

from __future__ import annotations

import pytest
from crash_matrix import RECORDER
from crash_schedules import SchedulerClients, check, observe, schedule_points
from crash_schedules_second import lateness_problems, second_world, start_lateness

MINUTES = 50


@pytest.fixture(scope="module")
def sched_clients() -> SchedulerClients:
    return SchedulerClients()


def _run(clients: SchedulerClients, point):  # type: ignore[no-untyped-def]
    with second_world(clients, RECORDER, point) as world:
        world.run_for_ms = MINUTES * 60_000
        try:
            world.run()
        except AssertionError as e:
            return None, [f"the run failed: {e}"], world
        res = observe(world)
        late = start_lateness(world)
        if point is None:
            LATENESS[:] = [late]
        return res, lateness_problems(world, late), world


@pytest.fixture(scope="module")
def reference(sched_clients):  # type: ignore[no-untyped-def]
    ref, problems, world = _run(sched_clients, None)
    assert ref is not None and not ref.problems and not problems and not world.crashes, (ref, problems)
    return ref


LATENESS: list[dict[str, int]] = []


def test_reference_fires_early_and_delays_to_the_second(reference) -> None:  # type: ignore[no-untyped-def]
    reference_lateness = LATENESS[0]
    assert len(reference.runs) >= 2 and set(reference.runs.values()) == {"COMPLETED"}
    assert reference.armed is not None and reference.armed.endswith(":00)")  # a minute, armed early
    assert len(reference_lateness) >= 3 and all(0 <= ms <= 1_000 for ms in reference_lateness.values())
    # the decider sent each early fire back (a SendMessage of a schedule_fire by the decider)
    assert any(c.handler == "decider" and c.op == "SendMessage" and "schedule_fire" in c.detail
               for c in reference.calls), [str(c) for c in reference.calls if c.op == "SendMessage"]


def test_crash_matrix_on_the_second(sched_clients, reference) -> None:  # type: ignore[no-untyped-def]
    points = schedule_points(reference.calls)
    points += [p for p in _resends(reference.calls) if p not in points]
    failures = []
    for p in points:
        got, problems, world = _run(sched_clients, p)
        if RECORDER.fired is None and not world.crashes:
            failures.append(f"{p}: the crash never fired")
            continue
        problems = problems + (check(reference, got) if got is not None else [])
        if problems:
            failures.append(f"{p} at {reference.calls[p.index]}: " + "; ".join(problems))
    assert not failures, f"{len(failures)} of {len(points)} crash points failed:\n" + "\n".join(failures)


def _resends(calls):  # type: ignore[no-untyped-def]
    """Before and after each send of a fire back to the queue (the new send on this path)."""
    from crash_points import CrashPoint

    return [CrashPoint(i, v) for i, c in enumerate(calls)
            if c.op == "SendMessage" and "schedule_fire" in c.detail for v in ("before", "after")]
