"""Which delivery may be a duplicate, and the history's verdict on one (worker/dedupe.py)."""

from __future__ import annotations

from typing import Any

from orbit.core.history.effects import DispatchTask
from orbit.core.history.state import ExecutionState, UnitState
from orbit.errors import NotFound
from orbit.worker import dedupe
from orbit.worker.dedupe import Delivery

D = DispatchTask("e", "a", "t", "q", {}, 2, "tok2", "e:a")


class Loaded:
    def __init__(self, state: ExecutionState) -> None:
        self.state = state

    def fold(self) -> ExecutionState:
        return self.state


class History:
    def __init__(self, state: ExecutionState | None = None, error: Exception | None = None) -> None:
        self.state, self.error = state, error

    def load(self, eid: str) -> Any:
        if self.error is not None:
            raise self.error
        return Loaded(self.state or ExecutionState(eid))


def state(status: str = "SCHEDULED", attempt: int = 2, tokens: dict[str, int] | None = None,
          workflow: str = "RUNNING") -> ExecutionState:
    s = ExecutionState("e", created=True, status=workflow)
    s.units["a"] = UnitState(status=status, attempt=attempt, token="tok2",
                             tokens=tokens if tokens is not None else {"tok1": 1, "tok2": 2})
    return s


def test_open_only_while_the_execution_waits_for_this_token_and_attempt() -> None:
    assert dedupe.attempt_open(state(), D)
    assert dedupe.attempt_open(state("DISPATCHED"), D)
    assert not dedupe.attempt_open(state("SUCCEEDED"), D)  # answered
    assert not dedupe.attempt_open(state("RETRY_WAIT"), D)  # failed, a retry is due
    assert not dedupe.attempt_open(state(attempt=3, tokens={"tok2": 2, "tok3": 3}), D)  # superseded
    assert not dedupe.attempt_open(state(workflow="CANCELLED"), D)  # the execution ended
    assert not dedupe.attempt_open(ExecutionState("e"), D)  # never created (a tombstone)


def test_the_verdict_settles_an_open_attempt_and_acknowledges_an_answered_one() -> None:
    assert dedupe.verdict(History(state()), D, 1) == "defer"
    assert dedupe.verdict(History(state()), D, 2) == "defer"
    assert dedupe.verdict(History(state()), D, dedupe.SETTLE_RECEIVES) == "run"
    assert dedupe.verdict(History(state("SUCCEEDED")), D, 1) == "ack"
    assert dedupe.verdict(History(error=NotFound("gone")), D, 1) == "ack"  # deleted by retention
    # no history port (a role without the grant keeps a record for every task): counts as open
    assert dedupe.verdict(None, D, dedupe.SETTLE_RECEIVES) == "run"


class Flaky(History):
    """Fails its first `failures` reads (throttled), then reads `state`."""

    def __init__(self, state: ExecutionState, failures: int) -> None:
        super().__init__(state)
        self.failures, self.reads = failures, 0

    def load(self, eid: str) -> Any:
        self.reads += 1
        if self.reads <= self.failures:
            raise RuntimeError("ProvisionedThroughputExceededException")
        return super().load(eid)


def test_an_unreadable_history_is_never_open_the_read_is_retried_then_the_message_goes_back() -> None:
    # issue 24, finding 6: a failed read used to count as open, and a late copy ran its task again
    slept: list[float] = []
    for receive in (1, dedupe.SETTLE_RECEIVES):
        h = Flaky(state("SUCCEEDED"), failures=10)
        try:
            dedupe.verdict(h, D, receive, slept.append)
            raise AssertionError("an unreadable history gave a verdict")
        except dedupe.HistoryUnreadable as e:
            assert isinstance(e, dedupe.TaskDeferred)  # a failed record of the batch: it comes back
            assert "'a' of 'e' (attempt 2)" in str(e) and "ProvisionedThroughputExceeded" in str(e), e
        assert h.reads == dedupe.READ_ATTEMPTS
    assert slept == [*dedupe.READ_BACKOFF_S] * 2
    # control: throttled once, then read: the answered attempt is acknowledged
    slept.clear()
    h = Flaky(state("SUCCEEDED"), failures=dedupe.READ_ATTEMPTS - 1)
    assert dedupe.verdict(h, D, 1, slept.append) == "ack" and h.reads == dedupe.READ_ATTEMPTS
    assert slept == [*dedupe.READ_BACKOFF_S]
    assert dedupe.verdict(Flaky(state(), failures=1), D, dedupe.SETTLE_RECEIVES, slept.append) == "run"


def test_which_deliveries_are_suspect_or_waited() -> None:
    assert not dedupe.suspect({}, D, Delivery())
    assert dedupe.suspect({}, D, Delivery(2))
    assert dedupe.suspect({"resent": True}, D, Delivery())
    assert not dedupe.suspect({"resent": "yes"}, D, Delivery())  # only the decider's own mark counts
    now = 1_000_000
    assert not dedupe.waited(Delivery(1, now - dedupe.OLD_MESSAGE_MS), now)
    assert dedupe.waited(Delivery(1, now - dedupe.OLD_MESSAGE_MS - 1), now)
    assert not dedupe.waited(Delivery(1, None), now)


def test_the_probe_tells_a_missing_grant_from_a_passing_failure() -> None:
    class Denied(Exception):
        response = {"Error": {"Code": "AccessDeniedException"}}

    assert dedupe.readable(History(error=NotFound("no such execution"))) is True
    assert dedupe.readable(History(state())) is True
    assert dedupe.readable(History(error=Denied())) is False
    assert dedupe.readable(History(error=TimeoutError())) is None  # asked again at the next task
    assert dedupe.readable(None) is False


def test_the_deferrals_outlast_every_redelivery_of_the_first_runs_result() -> None:
    """Chaos findings N3 (seed 144) and N4 (seed 6609, tests/chaos/README.md): a re-sent dispatch ran
    while the first run's result, whose decision had failed, waited to be handed over again. At N3
    the deferrals were shorter than one visibility timeout of the decision queue; at N4 (2 x 200 s)
    the result's decision failed four times in a row (543 s). The deferrals together now outlast the
    result's whole life on the decision queue (maxReceiveCount receives, one visibility timeout
    apart, then the DLQ), with time to decide the last one, so the copy's last look finds the
    result recorded (or dead-lettered, which an operator sees)."""
    from pathlib import Path

    from orbit.local.cfn import load_template

    root = Path(__file__).resolve().parents[2]
    for template in (root / "template.yaml", root / "examples" / "app" / "template.yaml"):
        if not template.is_file():
            continue
        queue = load_template(template)["Resources"].get("DecisionQueue")
        if queue is None:
            continue
        visibility_s = int(queue["Properties"]["VisibilityTimeout"])
        receives = int(queue["Properties"]["RedrivePolicy"]["maxReceiveCount"])
        assert (visibility_s, receives) == (dedupe.DECISION_VISIBILITY_S, dedupe.DECISION_RECEIVES), template
    deferred_s = dedupe.SETTLE_DELAY_S * (dedupe.SETTLE_RECEIVES - 1)
    last_decided_s = (dedupe.DECISION_RECEIVES - 1) * dedupe.DECISION_VISIBILITY_S + 20
    assert deferred_s >= last_decided_s
    assert deferred_s >= 543 + 20  # seed 6609's four failed decisions of the result
