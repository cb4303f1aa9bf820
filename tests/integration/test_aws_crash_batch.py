"""The crash matrix for bulk actions (issue 31 §2): five executions wait for a signal; `POST
/batches` cancels every one of them, two per page (three page messages). A crash before and after
every write and send of the batch (the API's create, each page's claim, cancels, next-page send
and advance, the decisions the cancels make) must leave every execution CANCELLED by exactly one
cancel, the batch COMPLETED having seen each once, contiguous histories and empty queues."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from crash_matrix import RECORDER
from crash_points import Call, CrashPoint, crash_points
from crash_world import Scenario, World, fresh_world
from orbit.service import batches

WAITER = {"orbit": 1, "name": "crash-batch", "version": "1", "steps": {"w": {"wait_for": "go"}}}
N = 5
TERMINAL = ("WorkflowCompleted", "WorkflowFailed", "WorkflowCancelled", "WorkflowTimedOut")
IDS = [f"bw-{i}" for i in range(N)]
BATCH = {"where": "workflow = crash-batch AND status = RUNNING", "id": "bulk-1",
         "reason": "bulk"}


def drive(world: World) -> int:
    """Start the executions, let them settle, then the batch; returns the call index the batch began at."""
    world.api("POST", "/definitions", WAITER, 201)
    for eid in IDS:
        world.api("POST", "/executions", {"workflow": "crash-batch", "id": eid, "input": {}}, 201)
    world.settle()
    world.clock.now += 1000
    began = len(world.recorder.calls)
    world.api("POST", "/batches/cancel", BATCH, 202)
    world.settle()
    return began


def observe(world: World) -> list[str]:
    engine = world.container().engine  # cold: everything read from the table
    problems = []
    for eid in IDS:
        h = engine.history(eid)
        cancels = [e for e in h if e["type"] == "CancelRequested"]
        ends = [e["type"] for e in h if e["type"] in TERMINAL]
        if len(cancels) != 1 or ends != ["WorkflowCancelled"]:
            problems.append(f"{eid}: {len(cancels)} CancelRequested, ends {ends}")
        if [e["seq"] for e in h] != list(range(1, len(h) + 1)):
            problems.append(f"{eid}: history seqs {[e['seq'] for e in h]}")
    b = engine.batches.describe("bulk-1")
    if b["status"] != "COMPLETED" or b["seen"] != N or b["acted"] + b["skipped"] != N or b["failed"]:
        problems.append(f"batch: {b}")
    sqs = world.clients.sqs
    for q, url in world.stack.queues.items():
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages",
                                         "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        if any(int(v) for v in attrs.values()):
            problems.append(f"messages left on {q}: {attrs}")
    if world.parked:
        problems.append(f"{len(world.parked)} messages parked")
    return problems


def run(clients: Any, point: CrashPoint | None) -> tuple[list[Call], int, list[str], int]:
    with fresh_world(clients, RECORDER, Scenario((), None), point) as world:
        try:
            began = drive(world)
        except AssertionError as e:
            return list(RECORDER.calls), 0, [f"the run failed: {e}"], len(world.crashes)
        return list(RECORDER.calls), began, observe(world), len(world.crashes)


@pytest.fixture(autouse=True)
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batches, "PAGE", 2)


def test_the_reference_run_cancels_each_once_in_three_pages(clients: Any) -> None:
    calls, began, problems, crashes = run(clients, None)
    assert not problems and not crashes, problems
    sent = Counter(kind for c in calls[began:] if c.op.startswith("SendMessage")
                   for kind in c.detail.partition(": ")[2].split(","))
    assert sent["batch_page"] == 3 and sent["cancel"] == N, sent  # pages 0, 1 and 2 (of one execution)


def test_a_crash_before_and_after_every_write_and_send_of_the_batch_acts_once_on_each(clients: Any) -> None:
    calls, began, problems, _ = run(clients, None)
    assert not problems
    points = [p for p in crash_points(calls, writes_only=True) if p.index >= began]
    assert len(points) >= 30
    failures = []
    for p in points:
        _, _, problems, crashes = run(clients, p)
        if not crashes:
            failures.append(f"{p} at {calls[p.index]}: the crash never fired")
        elif problems:
            failures.append(f"{p} at {calls[p.index]}: " + "; ".join(problems))
    assert not failures, f"{len(failures)} of {len(points)} crash points failed:\n" + "\n".join(failures)
