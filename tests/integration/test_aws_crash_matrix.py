"""Crash at every AWS call of a realistic workflow, through the real handlers on moto.

A reference run of a realistic workflow (a heartbeating task whose output goes
to S3, a fan-out of three tasks, a task that fails its first attempt and is
retried on a timer, a signal, a child workflow) records every call the
handlers make. Then, for each call, the same
workflow runs in a fresh stack with the process dying before the call and,
for writes and sends, right after it landed (crash_points.py); the system runs
until idle on a virtual clock and the invariants of crash_matrix.py must hold.
The suite runs every write and send crashing after it landed and a seeded third of the
`before` points (split in shards for `-n 2`); the full matrix, with timings:
`python tests/integration/test_aws_crash_matrix.py --all` (`--twice`: the recovery dies too).
"""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest
from crash_matrix import Reference, check, reference_run, run_point, sample
from crash_points import Call, CrashPoint, crash_points
from crash_world import EXECUTION, Scenario

SHARDS = 4
ONE_STEP = Scenario(({"orbit": 1, "name": "crashmx-one", "version": "1",
                      "steps": {"only": {"task": "crashmx.double", "input": {"v": "{% input.v %}"}}},
                      "output": "{% steps.only.output %}"},), {"v": 1})
RETRY_LATER = Scenario(({"orbit": 1, "name": "crashmx-retry", "version": "1",
                         "steps": {"only": {"task": "crashmx.flaky", "input": {"v": "{% input.v %}"},
                                            "retry": {"max_attempts": 2, "backoff": "20m"}}},
                         "output": "{% steps.only.output %}"},), {"v": 1})

# A step whose 30-minute timeout is armed as a table timer (beyond SQS's 15-minute delay): the
# young end must disarm it (the pointer read, then both deletes).
TIMED = Scenario(({"orbit": 1, "name": "crashmx-timed", "version": "1",
                   "steps": {"only": {"task": "crashmx.double", "input": {"v": "{% input.v %}"},
                                      "timeout": "30m"}},
                   "output": "{% steps.only.output %}"},), {"v": 1})

CHAIN = Scenario(({"orbit": 1, "name": "crashmx-chain", "version": "1",
                   "steps": {"c0": {"compute": "{% input.v %}"},
                             **{f"c{i}": {"compute": f"{{% steps.c{i - 1}.output + 1 %}}"}
                                for i in range(1, 8)}},
                   "output": "{% steps.c7.output %}"},), {"v": 1})


FOUR_DISPATCHES = "DefaultTaskQueue: " + ",".join(["dispatch_task"] * 4)  # flaky and the fan-out's three


def last(calls: list[Call], call: Call) -> int:
    return max(i for i, c in enumerate(calls) if c == call)


@pytest.fixture(scope="module")
def reference(clients: Any) -> Reference:
    return reference_run(clients)


def test_the_reference_run_is_repeatable_and_writes_through_every_service(clients: Any,
                                                                          reference: Reference) -> None:
    again = reference_run(clients)
    assert again.calls == reference.calls  # else call k of a crash run is not call k of the reference
    assert again.output == reference.output == {
        "blob": 40_000, "flaky": {"v": 41, "attempt": 2}, "each": [2, 4, 6], "by": "ops",
        "child": {"v2": 82}}
    labels = {(c.handler, c.service, c.op, c.detail) for c in reference.calls}
    for expected in [("api", "dynamodb", "PutItem", "EXEC/C"), ("decider", "dynamodb", "PutItem", "EXEC/C"),
                     ("decider", "dynamodb", "PutItem", "EXEC/A#INDEX"),
                     ("decider", "dynamodb", "PutItem", "TIMERPTR/PTR"),
                     ("decider", "sqs", "SendMessage", "DefaultTaskQueue: dispatch_task"),
                     ("decider", "sqs", "SendMessageBatch", FOUR_DISPATCHES),
                     ("decider", "s3", "PutObject", ""),  # the commit's 40 KB value, stored by reference
                     ("decider", "sqs", "SendMessage", "DecisionQueue: start"),  # the child's
                     ("decider", "sqs", "SendMessage", "DecisionQueue: child_done"),
                     ("api", "sqs", "SendMessage", "DecisionQueue: signal"),
                     ("example_worker", "dynamodb", "PutItem", "IDEM/IDEM"),
                     ("example_worker", "dynamodb", "UpdateItem", "IDEM/IDEM"),  # the lease, extended
                     ("example_worker", "sqs", "ChangeMessageVisibility", "DefaultTaskQueue"),
                     ("example_worker", "s3", "PutObject", ""),
                     ("example_worker", "sqs", "SendMessage", "DecisionQueue: heartbeat"),
                     ("example_worker", "sqs", "SendMessage", "DecisionQueue: started,result"),
                     ("timers", "sqs", "SendMessage", "DecisionQueue: wake"),
                     ("timers", "dynamodb", "DeleteItem", "TIMERPTR/PTR"),
                     # retention: the commit's payload reference, written with the provisional
                     # expiry like every item of this young execution (its end updates nothing)
                     ("decider", "dynamodb", "PutItem", "BLOB/R"),
                     # the retry's timer was armed: the end reads the pointer to disarm it
                     ("decider", "dynamodb", "GetItem", "TIMERPTR/PTR"),
                     ("decider", "s3", "PutObject", "archive")]:  # the archive, before the expiries
        assert expected in labels, (expected, sorted(labels))
    # The start recorded the expiry its items are written with: the young end reads no commit to
    # confirm it (it used to read the first one).
    assert ("decider", "dynamodb", "GetItem", "EXEC/C") not in labels
    # An execution that ends young (within its first hour) writes no expiry at its end (it was
    # written with its items: write-time expiry); this one used to update every older item here.
    assert not {(h, op, d) for h, _, op, d in labels
                if op == "UpdateItem" and d.startswith(("EXEC", "BLOB/R"))}
    # Each task ran once per attempt; the flaky one twice (attempt 1 failed).
    assert dict(reference.runs) == {(f"{EXECUTION}:fetch", 1): 1, (f"{EXECUTION}:flaky", 1): 1,
                                    (f"{EXECUTION}:flaky", 2): 1, (f"{EXECUTION}/child:double", 1): 1,
                                    **{(f"{EXECUTION}:each[{i}]", 1): 1 for i in range(3)}}


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_crash_point_keeps_the_invariants(clients: Any, reference: Reference, shard: int) -> None:
    points = sample(reference)[shard::SHARDS]
    assert len(points) >= 12
    failed = [o for o in (run_point(clients, reference, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)


def test_a_recovery_that_dies_at_the_same_call_keeps_the_invariants(clients: Any,
                                                                   reference: Reference) -> None:
    """A seeded sample of writes/sends crashing after they landed, and again when the recovery makes
    the same call (`--twice` runs them all)."""
    writes = [p for p in crash_points(reference.calls, writes_only=True) if p.variant == "after"]
    points = [CrashPoint(p.index, p.variant, again=True) for p in random.Random(11).sample(writes, 8)]
    outcomes = [run_point(clients, reference, p) for p in points]
    failed = [o for o in outcomes if not o.ok]
    assert not failed, "\n".join(str(o) for o in failed)
    assert sum(o.crashes == 2 for o in outcomes) >= 4  # most recoveries repeat the call that died


@pytest.mark.parametrize("variant", ["after", "before"])
def test_a_crash_between_the_final_commit_and_its_index_row_is_repaired(clients: Any, variant: str) -> None:
    """One task step; the decider dies right after the commit that completes the execution, or just
    before its index row. The redelivered result is recognised (nothing decided twice) and its
    commit's index row written again: the execution is listed COMPLETED, not RUNNING for good
    (it was, before the index row became one of a commit's effects in service.py)."""
    ref = reference_run(clients, ONE_STEP)
    final = last(ref.calls, Call("decider", "dynamodb", "PutItem", "EXEC/C"))
    assert ref.calls[final + 1] == Call("decider", "dynamodb", "PutItem", "EXEC/A#INDEX")
    point = CrashPoint(final, "after") if variant == "after" else CrashPoint(final + 1, "before")
    outcome = run_point(clients, ref, point)
    assert outcome.ok, str(outcome)


def _end_of(ref: Reference) -> list[Call]:
    """The decider's DynamoDB calls from the final commit on (the end of the execution)."""
    final = last(ref.calls, Call("decider", "dynamodb", "PutItem", "EXEC/C"))
    return [c for c in ref.calls[final:] if c.handler == "decider" and c.service == "dynamodb"]


@pytest.mark.parametrize("variant", ["before", "after"])
@pytest.mark.parametrize("call", ["final commit", "index row"])
def test_a_crash_around_a_young_end_leaves_every_item_with_one_expiry(clients: Any, call: str,
                                                                      variant: str) -> None:
    """Write-time expiry: the execution ends young, so its final commit carries the expiry its
    earlier items were written with (the start recorded it), and it never armed a timer: the end
    is the final commit and the index row, nothing read or written after them. A crash before or
    after either: the redelivered result is recognised, and every item of the execution still
    ends with that one expiry (crash_matrix._check_retention), none pinned to NO_EXPIRY."""
    ref = reference_run(clients, ONE_STEP)
    end = [(c.op, c.detail) for c in _end_of(ref)]  # the archive reads the history (Query) too
    assert [c for c in end if c[0] != "Query"] == [("PutItem", "EXEC/C"), ("PutItem", "EXEC/A#INDEX")], end
    detail = "EXEC/C" if call == "final commit" else "EXEC/A#INDEX"
    index = last(ref.calls, Call("decider", "dynamodb", "PutItem", detail))
    outcome = run_point(clients, ref, CrashPoint(index, variant))
    assert outcome.ok, str(outcome)


def test_a_crash_around_a_young_end_that_armed_a_timer_disarms_it(clients: Any) -> None:
    """The step's 30-minute timeout armed a table timer, so the young end disarms it: it reads the
    pointer and deletes it and the timer item (after the final commit and index row, which still
    need no read). A crash before or after each of these calls: nothing runs twice, every item
    keeps one expiry and no timer item is left (crash_matrix._check_retention)."""
    ref = reference_run(clients, TIMED)
    assert any(c.op == "PutItem" and c.detail == "TIMERPTR/PTR" for c in ref.calls)  # armed at the start
    end = [(c.op, c.detail.split("/")[0]) for c in _end_of(ref) if c.op != "Query"]
    assert end == [("PutItem", "EXEC"), ("PutItem", "EXEC"), ("GetItem", "TIMERPTR"),
                   ("DeleteItem", "TIMERPTR"), ("DeleteItem", "TIMER")], end
    final = last(ref.calls, Call("decider", "dynamodb", "PutItem", "EXEC/C"))
    indexes = [i for i in range(final, len(ref.calls))
               if ref.calls[i].handler == "decider" and ref.calls[i].service == "dynamodb"]
    points = [CrashPoint(i, v) for i in indexes for v in ("before", "after")
              if not (v == "after" and ref.calls[i].op == "GetItem")]
    failed = [o for o in (run_point(clients, ref, p) for p in points) if not o.ok]
    assert not failed, "\n".join(str(o) for o in failed)


def test_a_crash_around_a_decision_continuation_loses_nothing(clients: Any, monkeypatch: Any) -> None:
    """A decision that stops at its round budget commits, then sends itself a continuation (a
    `wake` message). The decider dies before or after each continuation's commit and send: the
    redelivered message re-sends the stored continuation, and the chain still completes once."""
    from orbit.core.decider import decide as decider

    monkeypatch.setattr(decider, "MAX_ROUNDS", 3)
    ref = reference_run(clients, CHAIN)
    assert ref.output == 8
    # the start decides in the API call, later decisions in the decider: both continue
    wakes = [Call(h, "sqs", "SendMessage", "DecisionQueue: wake") for h in ("api", "decider")]
    sends = [i for i, c in enumerate(ref.calls) if c in wakes]
    assert len(sends) >= 2  # 8 steps at 3 rounds a decision: continued more than once
    commits = [max(j for j in range(i) if ref.calls[j].op == "PutItem" and ref.calls[j].detail == "EXEC/C")
               for i in sends]
    points = [CrashPoint(i, v) for i in sends + commits for v in ("before", "after")]
    failed = [o for o in (run_point(clients, ref, p) for p in points) if not o.ok]
    assert not failed, "\n".join(str(o) for o in failed)


def test_a_failed_attempt_redelivered_before_its_retry_is_not_run_again(clients: Any) -> None:
    """Minimal: the worker dies right after reporting attempt 1's failure. Its dispatch comes back
    after the visibility timeout (15 min), before the retry (20 min): the failure must be answered
    from the idempotency record, not by running attempt 1 a second time."""
    ref = reference_run(clients, RETRY_LATER)
    sent = ref.calls.index(Call("example_worker", "sqs", "SendMessage", "DecisionQueue: started,result"))
    outcome = run_point(clients, ref, CrashPoint(sent, "after"))
    assert outcome.ok, str(outcome)


def test_a_failure_record_answers_its_attempt_and_lets_the_next_one_run(stack: Any, clients: Any,
                                                                         clock: Any) -> None:
    from orbit.adapters.dynamodb import IdempotencyStore
    from orbit.adapters.dynamodb.idempotency import Claim
    from orbit.adapters.s3 import S3PayloadStore

    idem = IdempotencyStore(clients.dynamodb, stack.table, S3PayloadStore(clients.s3, stack.bucket), clock)
    err = {"code": "FLAKY", "message": "no", "retryable": True, "details": None}
    idem.fail("k", "t1", 1, err)
    assert idem.peek("k", 1) == Claim("failed", {"error": err})  # attempt 1 again: answered, not run
    assert idem.peek("k", 2).outcome == "run"
    assert idem.claim("k", "t2", 60_000, 2).outcome == "run"  # a long attempt 2 takes the key over
    idem.fail("k", "t1", 1, err)  # a late failure of attempt 1 leaves attempt 2's claim alone
    assert idem.peek("k", 2).outcome == "busy"
    idem.fail("k", "t2", 2, {**err, "message": "again"})
    assert idem.claim("k", "t1", 60_000, 1) == Claim("failed", {"error": {**err, "message": "again"}})
    assert idem.complete("k", "t3", {"output": 3}) == {"output": 3}  # attempt 3 succeeds
    idem.fail("k", "t2", 2, err)  # a result is never replaced by a failure
    assert idem.peek("k", 2) == Claim("done", {"output": 3})


def test_check_catches_a_broken_invariant(clients: Any) -> None:
    """The checks can fail: a task run twice in a clean run is reported."""
    from crash_matrix import RECORDER
    from crash_world import RUNS, fresh_world

    with fresh_world(clients, RECORDER, ONE_STEP, None) as world:
        world.run()
        output = {"v2": 2}
        assert check(world, output) == ([], 0)
        RUNS[(f"{EXECUTION}:only", 1)] += 1
        problems, _ = check(world, {"v2": 3})
    assert len(problems) == 2 and "ran 2 times" in problems[1] and "COMPLETED with {'v2': 3}" in problems[0]


if __name__ == "__main__":
    import os
    import warnings

    from crash_matrix import main

    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    warnings.filterwarnings("ignore", "No application metrics")
    sys.exit(main(sys.argv[1:]))
