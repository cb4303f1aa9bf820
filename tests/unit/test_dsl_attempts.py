"""Scenarios: retries and backoff, jitter, non-retryable errors, TIMEOUT, QUEUE_TIMEOUT,
stale and duplicate answers, uncertain attempts (worker lost, message redelivered)."""

from __future__ import annotations

from orbit.core.decider.units import backoff_ms
from orbit.core.runtime.commands import RetryPolicy
from orbit.testing.simulator import answer_twice, crash, fail, hang, late, succeed

from tests.unit.dsl_harness import T0, events, sim_with, unit_types


def test_retry_backoff_multiplier_and_cap() -> None:
    sim = sim_with(
        {
            "a": {
                "task": "t.a",
                "retry": {"max_attempts": 5, "backoff": "1s", "multiplier": 3, "max_backoff": "5s"},
            }
        }
    )
    sim.worker("t.a", fail("BUSY"), fail("BUSY"), fail("BUSY"), succeed("ok"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    retries = events(sim, eid, "RetryScheduled")
    assert [(r["next_attempt"], r["delay_ms"]) for r in retries] == [(2, 1000), (3, 3000), (4, 5000)]
    assert unit_types(sim, eid, "a") == [
        "StepScheduled",
        "StepDispatched",
        "StepAttemptFailed",
        "RetryScheduled",
        "StepScheduled",
        "StepDispatched",
        "StepAttemptFailed",
        "RetryScheduled",
        "StepScheduled",
        "StepDispatched",
        "StepAttemptFailed",
        "RetryScheduled",
        "StepScheduled",
        "StepDispatched",
        "StepSucceeded",
    ]
    sched = events(sim, eid, "StepScheduled")
    assert len({s["token"] for s in sched}) == 4  # a fresh token per dispatch
    assert {s["idempotency_key"] for s in sched} == {"e1:a"}  # one key across retries
    assert [s["timestamp_ms"] - T0 for s in sched] == [0, 1000, 4000, 9000]
    assert sim.describe(eid)["steps"]["a"]["attempt"] == 4


def test_retries_exhausted_fail_the_step_with_the_last_error() -> None:
    sim = sim_with({"a": {"task": "t.a", "retry": {"max_attempts": 2, "backoff": "10ms"}}})
    sim.worker("t.a", fail("BUSY", "try later"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert unit_types(sim, eid, "a")[-2:] == ["StepAttemptFailed", "StepFailed"]
    d = sim.describe(eid)
    assert d["status"] == "FAILED" and d["error"]["code"] == "BUSY"
    assert "step 'a' failed: try later" == d["error"]["message"]


def test_full_jitter_is_deterministic_and_bounded() -> None:
    policy = RetryPolicy(max_attempts=9, backoff_ms=1000, multiplier=2, jitter="full")
    draws = [backoff_ms(policy, n, "e1", "a") for n in range(1, 8)]
    assert draws == [backoff_ms(policy, n, "e1", "a") for n in range(1, 8)]
    assert all(0 <= d <= 1000 * 2 ** (n - 1) for n, d in enumerate(draws, start=1))
    assert draws != [backoff_ms(policy, n, "e2", "a") for n in range(1, 8)]  # depends on the execution
    assert len(set(draws)) > 1

    def delays() -> list[int]:
        sim = sim_with(
            {"a": {"task": "t.a", "retry": {"max_attempts": 4, "backoff": "1s", "jitter": "full"}}}
        )
        sim.worker("t.a", fail("BUSY"), fail("BUSY"), fail("BUSY"), succeed())
        sim.start("wf", {}, id="e1")
        sim.run()
        return [r["delay_ms"] for r in events(sim, "e1", "RetryScheduled")]

    assert (
        delays()
        == delays()
        == [backoff_ms(RetryPolicy(4, 1000, 2.0, None, "full"), n, "e1", "a") for n in (1, 2, 3)]
    )


def test_non_retryable_code_from_the_policy() -> None:
    sim = sim_with(
        {"charge": {"task": "p.charge", "retry": {"max_attempts": 5, "non_retryable": ["DECLINED"]}}}
    )
    sim.worker("p.charge", fail("DECLINED"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert unit_types(sim, eid, "charge") == [
        "StepScheduled",
        "StepDispatched",
        "StepAttemptFailed",
        "StepFailed",
    ]


def test_worker_marks_an_error_not_retryable() -> None:
    sim = sim_with({"charge": {"task": "p.charge", "retry": {"max_attempts": 5}}})
    sim.worker("p.charge", fail("GONE", retryable=False))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert unit_types(sim, eid, "charge")[-1] == "StepFailed"
    assert sim.describe(eid)["error"]["retryable"] is False


def test_attempt_timeout_counts_from_dispatch_and_retries() -> None:
    sim = sim_with({"a": {"task": "t.a", "timeout": "20s", "retry": {"max_attempts": 2, "backoff": "1s"}}})
    sim.worker("t.a", hang(), succeed("second"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert unit_types(sim, eid, "a") == [
        "StepScheduled",
        "StepDispatched",
        "StepAttemptFailed",
        "RetryScheduled",
        "StepScheduled",
        "StepDispatched",
        "StepSucceeded",
    ]
    failed = events(sim, eid, "StepAttemptFailed")[0]
    assert failed["error"]["code"] == "TIMEOUT" and failed["timestamp_ms"] == T0 + 20_000
    assert events(sim, eid, "StepDispatched")[0]["deadline_ms"] == T0 + 20_000


def test_timeout_without_retries_fails_the_execution() -> None:
    sim = sim_with({"a": {"task": "t.a", "timeout": "5s"}})
    sim.worker("t.a", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "FAILED" and d["error"]["code"] == "TIMEOUT"


def test_queue_timeout_when_no_worker_takes_the_task() -> None:
    sim = sim_with({"a": {"task": "nobody.serves", "queue_timeout": "5m"}})
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert sim.types(eid) == [
        "WorkflowCreated",
        "WorkflowStarted",
        "StepScheduled",
        "StepAttemptFailed",
        "StepFailed",
        "WorkflowFailed",
    ]
    failed = events(sim, eid, "StepAttemptFailed")[0]
    assert failed["error"]["code"] == "QUEUE_TIMEOUT" and failed["timestamp_ms"] == T0 + 300_000
    assert sim.unserved and sim.unserved[0]["task"] == "nobody.serves"


def test_answer_twice_applies_once_and_records_the_stale_one() -> None:
    sim = sim_with({"a": {"task": "t.a"}})
    sim.worker("t.a", answer_twice("ok"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert sim.types(eid) == [
        "WorkflowCreated",
        "WorkflowStarted",
        "StepScheduled",
        "StepDispatched",
        "StepSucceeded",
        "WorkflowCompleted",
        "StaleResultIgnored",
    ]
    assert len(events(sim, eid, "StepSucceeded")) == 1
    stale = events(sim, eid, "StaleResultIgnored")[0]
    assert stale["step"] == "a" and stale["outcome"] == "succeeded"


def test_late_success_of_a_timed_out_attempt_resolves_the_step_waiting_to_retry() -> None:
    """Reconciliation (issue 31): attempt 1 timed out at 10 s, its success comes at 15 s while the
    step waits 1 min to retry: it resolves the step; the retry never runs."""
    sim = sim_with({"a": {"task": "t.a", "timeout": "10s", "retry": {"max_attempts": 2, "backoff": "1m"}}})
    sim.worker("t.a", late(15_000, "first"), succeed("second"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    types = unit_types(sim, eid, "a")
    assert types == [
        "StepScheduled",
        "StepDispatched",
        "StepAttemptFailed",
        "RetryScheduled",
        "StepSucceeded",
    ]
    ok = events(sim, eid, "StepSucceeded")[0]
    assert ok["reconciled_attempt"] == 1 and ok["attempt"] == 2 and ok["timestamp_ms"] == T0 + 15_000
    d = sim.describe(eid)
    assert d["status"] == "COMPLETED" and d["output"] == {"a": "first"}
    assert sim.cancelled_tasks == []  # nothing was running: the retry's wake-up ended with the step
    assert "StaleResultIgnored" not in sim.types(eid)


def test_late_success_of_a_timed_out_attempt_cancels_the_running_retry() -> None:
    sim = sim_with({"a": {"task": "t.a", "timeout": "10s", "retry": {"max_attempts": 3, "backoff": "1s"}}})
    sim.worker("t.a", late(15_000, "first"), late(60_000, "second"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert unit_types(sim, eid, "a") == [
        "StepScheduled",
        "StepDispatched",
        "StepAttemptFailed",
        "RetryScheduled",
        "StepScheduled",
        "StepDispatched",
        "StepSucceeded",
        "StaleResultIgnored",  # attempt 2's own answer, after the step was resolved
    ]
    ok = events(sim, eid, "StepSucceeded")[0]
    assert ok["reconciled_attempt"] == 1 and ok["output"] == "first"
    second = events(sim, eid, "StepScheduled")[1]["token"]
    assert [c["token"] for c in sim.cancelled_tasks] == [second]  # attempt 2 withdrawn like a cancel
    assert sim.describe(eid)["output"] == {"a": "first"}


def test_late_failure_of_a_timed_out_attempt_stays_stale() -> None:
    """Only a success reconciles: the attempt was already counted failed (its timeout)."""
    sim = sim_with({"a": {"task": "t.a", "timeout": "10s", "retry": {"max_attempts": 2, "backoff": "1m"}}})
    sim.worker("t.a", hang(), succeed("second"))
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.advance(15_000)  # attempt 1 timed out at 10 s; the retry waits until 70 s
    first = events(sim, eid, "StepScheduled")[0]["token"]
    sim.engine.handle({"kind": "result", "execution_id": eid, "id": f"result:{first}", "unit": "a",
                       "token": first, "error": {"code": "BOOM", "message": "late", "retryable": True}})
    sim.run()
    assert unit_types(sim, eid, "a")[4] == "StaleResultIgnored"
    assert sim.describe(eid)["output"] == {"a": "second"}


def test_redelivered_result_message_is_not_applied_twice() -> None:
    sim = sim_with({"a": {"task": "t.a"}, "b": {"task": "t.b", "after": ["a"]}})
    sim.worker("t.a", succeed(1))
    sim.worker("t.b", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    result = {
        "kind": "result",
        "execution_id": eid,
        "id": f"result:{events(sim, eid, 'StepScheduled')[0]['token']}",
        "unit": "a",
        "token": events(sim, eid, "StepScheduled")[0]["token"],
        "output": 1,
    }
    before = sim.history(eid)
    sent_before = len(sim.queues.tasks["t"])
    sim.engine.handle(result)  # the same message id again: the commit's effects are re-sent
    assert sim.history(eid) == before
    assert len(sim.queues.tasks["t"]) == sent_before + 1
    resent = sim.queues.tasks["t"][-1][1]
    assert resent["unit"] == "b" and resent["token"] == events(sim, eid, "StepScheduled")[1]["token"]


def test_crashed_worker_makes_the_attempt_uncertain_and_it_is_redelivered() -> None:
    sim = sim_with({"a": {"task": "t.a"}})
    sim.worker("t.a", crash(), succeed("ok"))
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert unit_types(sim, eid, "a") == [
        "StepScheduled",
        "StepDispatched",
        "StepAttemptUncertain",
        "StepScheduled",
        "StepDispatched",
        "StepSucceeded",
    ]
    first, again = events(sim, eid, "StepScheduled")
    assert again["redelivery"] is True and again["attempt"] == 1
    assert again["idempotency_key"] == first["idempotency_key"] == "e1:a"
    d1, d2 = events(sim, eid, "StepDispatched")
    assert d1["worker_session"] != d2["worker_session"]
    assert sim.describe(eid)["status"] == "COMPLETED"
