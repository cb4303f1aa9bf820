"""The pure core of durable functions (orbit/core/history/durable*.py) and the service over the
memory store: what each call of the Lambda durable execution API records, idempotent checkpoints,
the clock's transitions, and the Orbit execution state the same events fold into."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from orbit.adapters.memory import ManualClock, MemoryHistoryStore
from orbit.core.history import durable_ops as ops
from orbit.core.history.durable import DurableState, apply_durable, fold_durable, next_due_ms
from orbit.core.history.events import Event, Recorded
from orbit.core.history.model import fold
from orbit.service.durable import DurableApiError, DurableFunction, DurableService

ARN = "arn:aws:lambda:us-east-1:000000000000:function:f:$LATEST/durable-execution/n/e1"


class Built:
    """A state built by applying events the way the service commits them."""

    def __init__(self) -> None:
        self.records: list[Recorded] = []
        self.state = DurableState()

    def add(self, events: list[Event] | ops.Refused, now: int) -> list[Event]:
        assert not isinstance(events, ops.Refused), events
        for e in events:
            r = Recorded(len(self.records) + 1, now, e)
            self.records.append(r)
            apply_durable(self.state, r)
        return events


def ids(kind: str, op: str) -> str:
    return f"{kind}-{op}"


def started(now: int = 1_000) -> Built:
    b = Built()
    b.add(ops.start(ARN, "f", "n", '"in"', 3600, now), now)
    b.add(ops.begin_invocation(b.state, "r1"), now)
    return b


def step(action: str, oid: str = "s1", **extra: Any) -> dict[str, Any]:
    return {"Id": oid, "Type": "STEP", "SubType": "Step", "Action": action, **extra}


def test_a_checkpoint_records_each_update_as_an_operation_and_a_lambda_event() -> None:
    b = started()
    token = b.state.token
    assert token
    b.add(
        ops.checkpoint(b.state, token, None, [step("START"), step("SUCCEED", Payload='"ok"')], 2_000, ids),
        2_000,
    )
    op = b.state.operations["s1"]
    assert op["Status"] == "SUCCEEDED" and op["StepDetails"]["Result"] == '"ok"'
    assert op["StepDetails"]["Attempt"] == 1
    kinds = [(e["EventId"], e["EventType"]) for e in b.state.events]
    assert kinds == [(1, "ExecutionStarted"), (2, "StepStarted"), (3, "StepSucceeded")]
    assert b.state.events[2]["StepSucceededDetails"]["Result"]["Payload"] == '"ok"'
    assert b.state.token != token  # every accepted checkpoint hands out a new token


def test_a_stale_token_changes_nothing() -> None:
    b = started()
    old = b.state.token
    assert old
    b.add(ops.checkpoint(b.state, old, None, [step("START")], 2_000, ids), 2_000)
    again = ops.checkpoint(b.state, old, None, [step("SUCCEED", Payload='"x"')], 3_000, ids)
    assert isinstance(again, ops.Refused) and again.message == "Invalid checkpoint token"
    assert b.state.operations["s1"]["Status"] == "STARTED"


def test_a_repeated_client_token_records_nothing_and_keeps_its_answer() -> None:
    b = started()
    assert b.state.token
    b.add(ops.checkpoint(b.state, b.state.token, "ct-1", [step("START")], 2_000, ids), 2_000)
    answered = b.state.client_tokens["ct-1"]
    # the same request again (a retry after a lost answer), even with the token it was sent with
    assert ops.checkpoint(b.state, "whatever", "ct-1", [step("START")], 3_000, ids) == []
    assert b.state.token == answered


def test_no_checkpoint_is_accepted_between_invocations() -> None:
    b = started()
    token = b.state.token
    assert token
    b.add(ops.invocation_done(b.state, "r1", 2_000, {"Status": "PENDING"}), 2_000)
    assert isinstance(ops.checkpoint(b.state, token, None, [step("START")], 3_000, ids), ops.Refused)
    assert b.state.events[-1]["EventType"] == "InvocationCompleted"


def test_a_retry_leaves_the_step_pending_until_its_attempt_is_due_then_ready() -> None:
    b = started()
    assert b.state.token
    retry = step(
        "RETRY", Error={"ErrorType": "E", "ErrorMessage": "m"}, StepOptions={"NextAttemptDelaySeconds": 5}
    )
    b.add(ops.checkpoint(b.state, b.state.token, None, [step("START"), retry], 2_000, ids), 2_000)
    b.add(ops.invocation_done(b.state, "r1", 2_100, {"Status": "PENDING"}), 2_100)
    failed = b.state.events[-2]
    assert failed["EventType"] == "StepFailed"
    assert failed["StepFailedDetails"]["RetryDetails"] == {"CurrentAttempt": 1, "NextAttemptDelaySeconds": 5}
    assert b.state.operations["s1"]["Status"] == "PENDING"
    assert next_due_ms(b.state) == 7_000
    assert ops.fire_due(b.state, 6_999) == []
    b.add(ops.fire_due(b.state, 7_000), 7_000)
    assert b.state.operations["s1"]["Status"] == "READY" and b.state.woken == ["s1"]


def test_a_wait_ends_at_its_scheduled_end_with_its_duration() -> None:
    b = started()
    assert b.state.token
    wait = {
        "Id": "w1",
        "Type": "WAIT",
        "SubType": "Wait",
        "Action": "START",
        "WaitOptions": {"WaitSeconds": 2},
    }
    b.add(ops.checkpoint(b.state, b.state.token, None, [wait], 2_000, ids), 2_000)
    assert b.state.events[-1]["WaitStartedDetails"] == {"Duration": 2, "ScheduledEndTimestamp": 4_000}
    assert ops.fire_due(b.state, 3_999) == []
    b.add(ops.fire_due(b.state, 4_000), 4_000)
    assert b.state.events[-1]["EventType"] == "WaitSucceeded"
    assert b.state.events[-1]["WaitSucceededDetails"] == {"Duration": 2}


@pytest.mark.parametrize(
    ("options", "error_type"),
    [
        ({"TimeoutSeconds": 5}, "Callback.Timeout"),
        ({"HeartbeatTimeoutSeconds": 5}, "Callback.Heartbeat"),
    ],
)
def test_a_callback_times_out_with_the_error_type_of_the_deadline_it_missed(
    options: dict[str, int], error_type: str
) -> None:
    b = started()
    assert b.state.token
    cb = {
        "Id": "c1",
        "Type": "CALLBACK",
        "SubType": "Callback",
        "Action": "START",
        "CallbackOptions": options,
    }
    b.add(ops.checkpoint(b.state, b.state.token, None, [cb], 2_000, ids), 2_000)
    assert b.state.operations["c1"]["CallbackDetails"]["CallbackId"] == "callback-c1"
    b.add(ops.fire_due(b.state, 7_000), 7_000)
    ev = b.state.events[-1]
    assert ev["EventType"] == "CallbackTimedOut"
    assert ev["CallbackTimedOutDetails"]["Error"]["Payload"]["ErrorType"] == error_type


def test_a_heartbeat_moves_the_heartbeat_deadline_and_adds_no_event() -> None:
    b = started()
    assert b.state.token
    cb = {
        "Id": "c1",
        "Type": "CALLBACK",
        "Action": "START",
        "CallbackOptions": {"HeartbeatTimeoutSeconds": 5},
    }
    b.add(ops.checkpoint(b.state, b.state.token, None, [cb], 2_000, ids), 2_000)
    n = len(b.state.events)
    b.add(ops.complete_callback(b.state, b.state.operations["c1"], "heartbeat", None, None, 6_000), 6_000)
    assert len(b.state.events) == n and b.state.woken == []
    assert ops.fire_due(b.state, 7_000) == []  # the old deadline passed: the heartbeat moved it
    assert next_due_ms(b.state) == 11_000


def test_a_completed_callback_refuses_a_second_answer() -> None:
    b = started()
    assert b.state.token
    cb = {"Id": "c1", "Type": "CALLBACK", "Action": "START"}
    b.add(ops.checkpoint(b.state, b.state.token, None, [cb], 2_000, ids), 2_000)
    b.add(ops.complete_callback(b.state, b.state.operations["c1"], "success", '"yes"', None, 3_000), 3_000)
    again = ops.complete_callback(
        b.state, b.state.operations["c1"], "failure", None, {"ErrorType": "X"}, 4_000
    )
    assert isinstance(again, ops.Refused)
    assert b.state.events[-1]["CallbackSucceededDetails"]["Result"]["Payload"] == '"yes"'


def test_the_answer_of_the_handler_ends_the_execution_after_its_invocation_event() -> None:
    b = started()
    b.add(ops.invocation_done(b.state, "r1", 2_000, {"Status": "SUCCEEDED", "Result": '"done"'}), 2_000)
    assert [e["EventType"] for e in b.state.events][-2:] == ["InvocationCompleted", "ExecutionSucceeded"]
    assert b.state.status == "SUCCEEDED" and b.state.result == '"done"'
    # the same events fold into the Orbit execution state that list, describe and the console read
    orbit = fold("e1", b.records)
    assert (orbit.workflow, orbit.status, orbit.output) == ("f", "COMPLETED", '"done"')


def test_three_crashed_invocations_in_a_row_fail_the_execution() -> None:
    b = started()
    crash = {"ErrorType": "Runtime.ExitError", "ErrorMessage": "exit status 1"}
    for n in range(3):
        if n:
            b.add(ops.begin_invocation(b.state, f"r{n + 1}"), 2_000 + n)
        b.add(ops.invocation_done(b.state, f"r{n + 1}", 2_000 + n, None, crash), 2_000 + n)
    assert b.state.status == "FAILED"
    done = [e for e in b.state.events if e["EventType"] == "InvocationCompleted"]
    assert done[0]["InvocationCompletedDetails"]["Error"]["Payload"]["ErrorType"] == "Runtime.ExitError"


def test_the_service_commits_on_the_next_seq_and_a_lost_race_decides_again() -> None:
    store, clock = MemoryHistoryStore(), ManualClock()
    counter = itertools.count()
    svc = DurableService(store, clock, lambda: f"id{next(counter)}")
    svc.register(DurableFunction("f", "python", "mod.handler"))
    s = svc.start("f", '"x"')
    begun = svc.begin_invocation(s.arn)
    assert begun is not None
    token = begun[1]["CheckpointToken"]
    other = DurableService(store, clock, lambda: "other")  # a second API instance on the same store
    other.register(DurableFunction("f", "python", "mod.handler"))
    _, answer = other.checkpoint(s.arn, token, None, [step("START")])
    with pytest.raises(DurableApiError, match="Invalid checkpoint token"):
        svc.checkpoint(s.arn, token, None, [step("SUCCEED", Payload='"y"')])
    svc.checkpoint(s.arn, answer["CheckpointToken"], None, [step("SUCCEED", Payload='"y"')])
    state, _ = svc.load(s.arn)
    assert [e["EventType"] for e in state.events] == ["ExecutionStarted", "StepStarted", "StepSucceeded"]
    assert fold_durable(store.history(state.execution_id).records).operations["s1"]["Status"] == "SUCCEEDED"


def test_the_service_refuses_an_arn_that_names_no_execution() -> None:
    svc = DurableService(MemoryHistoryStore(), ManualClock(), lambda: "x")
    with pytest.raises(DurableApiError) as e:
        svc.load("arn:aws:lambda:us-east-1:0:function:f:$LATEST/durable-execution/n/../../etc")
    assert e.value.code == "ResourceNotFoundException"
    with pytest.raises(DurableApiError):
        svc.start("unknown", None)


@pytest.mark.parametrize(
    "update",
    [
        step("START", Id="x" * 300),
        step("SUCCEED", Payload={"not": "text"}),
        step("FAIL", Error="boom"),
        step("RETRY", StepOptions={"NextAttemptDelaySeconds": -1}),
        {"Id": "w", "Type": "WAIT", "Action": "START", "WaitOptions": {"WaitSeconds": 10**12}},
        {"Id": "w", "Type": "WAIT", "Action": "START", "WaitOptions": "soon"},
        {"Id": "n", "Type": "NOPE", "Action": "START"},
    ],
)
def test_a_malformed_update_is_refused_in_one_line_and_records_nothing(update: dict[str, Any]) -> None:
    b = started()
    assert b.state.token
    got = ops.checkpoint(b.state, b.state.token, None, [step("START", "ok"), update], 2_000, ids)
    assert isinstance(got, ops.Refused) and got.code == "InvalidParameterValueException"
    assert "\n" not in got.message and len(got.message) < 200


def test_a_request_of_an_unforeseen_shape_is_answered_in_one_line() -> None:
    from orbit.service.durable_http import route

    class Runtime:
        service = DurableService(MemoryHistoryStore(), ManualClock(), lambda: "x")

        def checkpoint(self, *args: Any) -> Any:
            raise TypeError("unhashable type: 'dict'")

    arn = "arn%3Aaws%3Alambda%3Aus-east-1%3A0%3Afunction%3Af%3A%24LATEST%2Fdurable-execution%2Fn%2Fe1"
    status, headers, body = route(
        Runtime(),
        "POST",
        f"/2025-12-01/durable-executions/{arn}/checkpoint",
        {},
        b'{"CheckpointToken": "t", "Updates": [{"Id": {}}]}',
    )
    assert status == 400 and headers["X-Amzn-ErrorType"] == "InvalidParameterValueException"
    assert b"\n" not in body and b"Traceback" not in body
    status, _, body = route(
        Runtime(), "POST", f"/2025-12-01/durable-executions/{arn}/checkpoint", {}, b"{not json"
    )
    assert status == 400 and b"not JSON" in body


def test_every_durable_event_reads_back_from_its_stored_form() -> None:
    """The store keeps events as JSON: each durable event class is in the decoding table (a table
    made before durable_events was imported missed them all, and orbit dev found no execution)."""
    from orbit.core.history import durable_events as D
    from orbit.core.history.events import EVENT_TYPES, Event

    made = {n for n, c in vars(D).items() if isinstance(c, type) and issubclass(c, Event) and c is not Event
            and c.__module__ == D.__name__}
    assert made and made <= set(EVENT_TYPES), sorted(made - set(EVENT_TYPES))
