"""A durable function on Orbit's AWS path under delivery chaos (chaos_durable.py): the durable API
behind its function URL, the decider invoking the function asynchronously through its Lambda
adapter, the invocations' records on the answer queue (an event Lambda runs twice, a record the
destination loses), `invoke` and `fire` messages on the decision queue, with duplicates,
reordering, lost deletes, throttling (of the URL handler's calls too) and two decider
environments; a workflow (`chain`) beside it.

`CHAOS_DURABLE_SEEDS` picks the seeds (default 1-7 and 40, about 2.5 s each; ~30 s in all);
`python -m tests.chaos.run --seeds 1-100 --workloads durable,chain` runs any range.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import warnings

import chaos_workloads as W
import pytest
from chaos_seed import parse_seeds, run_seed
from chaos_world import Profile, Result

DURABLE = dataclasses.replace(Profile(), executions=2, workloads=("durable", "chain"), dup_early=0.3)
# 40: a timed-out invocation's re-invoke lost to a throttled send, the timer message redelivered
SEEDS = parse_seeds(os.environ.get("CHAOS_DURABLE_SEEDS", "1-7,40"))


@pytest.fixture(autouse=True)
def _quiet() -> None:
    warnings.filterwarnings("ignore", message="No application metrics to publish")


@functools.lru_cache(maxsize=None)
def _run(seed: int) -> Result:
    return run_seed(seed, DURABLE)


def test_the_faults_reach_the_durable_path() -> None:
    """Throttled calls of the URL handler, duplicate and early copies of durable messages, and both
    decider environments invoking the function happen in these seeds (else they prove nothing)."""
    traces = [t for s in SEEDS[:4] for t in _run(s).trace]
    assert any(t.startswith("throttle durable") for t in traces)
    assert any("durable invocation" in t for t in traces)
    assert any("duplicate of" in t for t in traces) and any("early copy" in t for t in traces)
    served = {t.split()[1] for t in traces if "<- " in t and ":durable(" in t}
    assert {"decider#1", "decider#2"} <= served
    # the invocations' records come back through the answer queue, to either decider
    records = {t.split()[1] for t in traces if t.startswith("    record m") and "answer queue" in t}
    handed = {t.split("<- ")[1].split("#")[0] for t in traces if "<- " in t}
    assert records and records & handed
    # Lambda running a queued event twice, a destination losing a record (the invocation times out)
    every = [t for s in SEEDS for t in _run(s).trace]
    assert any("runs the queued event again" in t for t in every)
    assert any("lost the invocation's record" in t for t in every)


def test_the_checks_catch_a_step_run_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    record = W._record

    def twice(run: W.Run) -> None:
        record(run)
        if run.key.startswith("durable:") and run.key.endswith(":b"):
            record(run)

    monkeypatch.setattr(W, "_record", twice)
    result = run_seed(1, dataclasses.replace(Profile.none(), executions=1, workloads=("durable",)))
    assert any("step b attempts ran more than once" in p for p in result.problems), result.problems


def test_the_checks_catch_a_wrong_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(W.EXTRA, "durable", dataclasses.replace(W.EXTRA["durable"], output="abd"))
    result = run_seed(2, dataclasses.replace(Profile.none(), executions=1, workloads=("durable",)))
    assert any("expected SUCCEEDED with \"abd\"" in p for p in result.problems), result.problems


@pytest.mark.parametrize("seed", SEEDS)
def test_durable_function_under_chaos(seed: int) -> None:
    result = _run(seed)
    if not result.ok:
        pytest.fail(result.report(), pytrace=False)
