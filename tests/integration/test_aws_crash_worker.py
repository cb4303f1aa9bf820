"""The crash matrix on the worker path, every point: short tasks keep no dedupe record (issue 15).

The realistic workflow (crash_world.REALISTIC: a long heartbeating task that claims its key, a
batch of three quick tasks, a retried task, a child's quick task) crashes before every call the
worker makes and after every write and send it makes. The invariants are crash_matrix.py's: the
execution completes with the reference output, each step succeeds once, and each task attempt
runs once, except where the worker died after the function returned and before its result left
(at-least-once, the same window as before between the run and the `complete` write).
A crash right after a result left and before the message is deleted must never re-run the task:
the redelivery finds the attempt answered in the history and is acknowledged.
`python tests/integration/test_aws_crash_worker.py` prints every point with its re-runs.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from crash_matrix import Reference, reference_run, run_point
from crash_points import CrashPoint, crash_points

SHARDS = 2


def worker_points(ref: Reference) -> list[CrashPoint]:
    return [p for p in crash_points(ref.calls) if ref.calls[p.index].handler == "example_worker"]


@pytest.fixture(scope="module")
def reference(clients: Any) -> Reference:
    return reference_run(clients)


def test_quick_tasks_make_no_dedupe_request_and_the_long_one_keeps_its_claim(reference: Reference) -> None:
    idem = [c for c in reference.calls if c.handler == "example_worker" and c.detail == "IDEM/IDEM"]
    # fetch (heartbeats: claimed, lease extended, completed, the cancel flag read at its heartbeat) and
    # flaky's attempt 2 (a retry peeks); the fan-out's three and the child's quick task make none.
    assert [c.op for c in idem if c.op != "GetItem"] == ["PutItem", "UpdateItem", "PutItem"]
    assert sum(c.op == "GetItem" for c in idem) == 2  # the cancel flag (another key) and the retry's peek


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_worker_crash_point_keeps_the_invariants(clients: Any, reference: Reference,
                                                       shard: int) -> None:
    points = worker_points(reference)[shard::SHARDS]
    assert len(points) >= 8
    failed = [o for o in (run_point(clients, reference, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)


def test_a_crash_after_a_quick_result_left_reruns_nothing(clients: Any, reference: Reference) -> None:
    """Every quick task's answer (`started` and `result` together): the fan-out's batch of four (the
    retried task's first attempt and three elements, one bundle), the retry, the child's task; the
    process dies right after the send, before the mapping deletes the messages. Each redelivery is
    acknowledged from the history."""
    sent = [i for i, c in enumerate(reference.calls) if c.handler == "example_worker"
            and c.op.startswith("SendMessage") and "started,result" in c.detail]
    assert len(sent) == 3
    for index in sent:
        outcome = run_point(clients, reference, CrashPoint(index, "after"))
        assert outcome.ok and outcome.crashes == 1, str(outcome)
        assert outcome.reruns_after_death == 0, str(outcome)


def main() -> int:
    from aws_resources import Clients
    from crash_matrix import ensure_env

    ensure_env()
    clients = Clients()
    ref = reference_run(clients)
    failed = 0
    for p in worker_points(ref):
        o = run_point(clients, ref, p)
        failed += not o.ok
        print(f"{'ok  ' if o.ok else 'FAIL'} {p} {ref.calls[p.index]}: re-runs {o.reruns_after_death}"
              + ("" if o.ok else "\n    " + "\n    ".join(o.problems)), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
