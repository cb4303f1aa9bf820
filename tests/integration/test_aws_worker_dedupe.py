"""The worker's dedupe record only where a duplicate is possible (issue 15, worker/dedupe.py).

Through the real handlers on moto (the Cloud harness: a failed record comes back at once, with
its receive count raised). Each crash is placed by hand where the crash matrix's virtual world
cannot put it: a redelivery that arrives before the decider recorded the first result, and a
decider that re-sends a dispatch a worker has not taken yet.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from harness import sqs_event
from orbit import worker
from orbit.aws import wiring as aws
from orbit.worker import dedupe

RUNS: Counter[str] = Counter()


@worker.task("dd.step")
def step(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    RUNS[ctx.idempotency_key] += 1
    if input.get("sleep"):
        import time

        time.sleep(input["sleep"])
    return {"v": input["v"] + 1}


@worker.task("dd.natural", dedupe=False)
def natural(input: Any, ctx: worker.TaskContext) -> dict[str, Any]:
    RUNS[ctx.idempotency_key] += 1
    return {"v": input["v"] + 1}


def definition(task: str = "dd.step", sleep: float = 0) -> dict[str, Any]:
    return {"orbit": 1, "name": "dd", "version": "1",
            "steps": {"a": {"task": task, "input": {"v": "{% input.v %}", "sleep": sleep}},
                      "b": {"task": task, "input": {"v": "{% steps.a.output.v %}", "sleep": 0},
                            "after": ["a"]}},
            "output": "{% steps.b.output.v %}"}


def start(cloud: Any, eid: str, **kw: Any) -> None:
    RUNS.clear()
    assert cloud.api("POST", "/definitions", definition(**kw))[0] == 201
    assert cloud.api("POST", "/executions", {"workflow": "dd", "id": eid, "input": {"v": 1}})[0] == 201


def deliver(cloud: Any, clients: Any, delete: bool = True) -> tuple[list[dict[str, Any]], set[str]]:
    """One poll of the task queue handed to the worker. Unlike Cloud.pump, nothing is deleted unless
    `delete` (False: the invocation died after its work, before the mapping's delete); what is left
    is made visible again at once. Returns (messages, ids the worker reported failed)."""
    url = cloud.stack.queues["DefaultTaskQueue"]
    got = clients.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                      AttributeNames=["All"], MessageAttributeNames=["All"])["Messages"]
    response = cloud.invoke("example_worker", sqs_event(got, cloud.stack.arns["DefaultTaskQueue"]))
    failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
    for m in got:
        if delete and m["MessageId"] not in failed:
            clients.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        else:
            clients.sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"],
                                                  VisibilityTimeout=0)
    return got, failed


def idem_items(cloud: Any, clients: Any) -> list[dict[str, Any]]:
    items = clients.dynamodb.scan(TableName=cloud.stack.table)["Items"]
    return [i for i in items if i["pk"]["S"].startswith("IDEM#")]


def events(cloud: Any, eid: str) -> list[str]:
    status, history = cloud.api("GET", f"/executions/{eid}/history")
    assert status == 200
    return [e["type"] for e in history]


def finish(cloud: Any, eid: str) -> None:
    cloud.run_until_idle()
    status, desc = cloud.api("GET", f"/executions/{eid}")
    assert (desc["status"], desc.get("output")) == ("COMPLETED", 3), desc
    assert events(cloud, eid).count("StepSucceeded") == 2


def test_quick_steps_write_no_dedupe_record(cloud: Any, clients: Any) -> None:
    start(cloud, "dd-1")
    finish(cloud, "dd-1")
    assert RUNS == {"dd-1:a": 1, "dd-1:b": 1}
    assert idem_items(cloud, clients) == []


@pytest.mark.parametrize("recorded_first", [True, False])
def test_a_redelivery_after_the_result_was_sent_does_not_run_again(cloud: Any, clients: Any,
                                                                   recorded_first: bool) -> None:
    """The worker ran `a` and sent its result, then died before the delete: SQS delivers `a` again.
    Recorded already: acknowledged at once. Not yet: it comes back after SETTLE_DELAY_S (its visibility
    is set so), by when the decider has recorded it, and is acknowledged then."""
    start(cloud, "dd-2")
    visibility: list[int] = []
    real = aws.services().sqs.change_message_visibility

    def spy(**kw: Any) -> Any:
        visibility.append(kw["VisibilityTimeout"])
        return real(**kw)

    aws.services().sqs.change_message_visibility = spy
    try:
        deliver(cloud, clients, delete=False)  # ran, result sent, not deleted
        assert RUNS["dd-2:a"] == 1
        if recorded_first:
            cloud.pump("DecisionQueue")
        visibility.clear()
        got, failed = deliver(cloud, clients)  # receive count 2
        assert got[0]["Attributes"]["ApproximateReceiveCount"] == "2"
        if not recorded_first:  # the worker's call, then the harness's (the visibility expires at once)
            assert failed == {got[0]["MessageId"]} and visibility == [dedupe.SETTLE_DELAY_S, 0]
            cloud.pump("DecisionQueue")  # the first result is recorded meanwhile
            got, failed = deliver(cloud, clients)  # receive count 3, `a` no longer open
        assert not failed
    finally:
        aws.services().sqs.change_message_visibility = real
    assert RUNS["dd-2:a"] == 1
    finish(cloud, "dd-2")
    assert RUNS == {"dd-2:a": 1, "dd-2:b": 1}
    assert "StaleResultIgnored" not in events(cloud, "dd-2")  # the duplicate sent nothing
    assert idem_items(cloud, clients) == []


def test_a_crash_after_the_run_before_the_result_send_runs_again_once_settled(cloud: Any, clients: Any,
                                                                              monkeypatch: Any) -> None:
    """The same window as before issue 15 between the run and the `complete` write: nothing recorded
    the run, so the redelivery runs it again (at least once), here with its key claimed first."""
    start(cloud, "dd-3")
    svc = aws.services()
    real = svc.queues.send_decisions
    calls = [0]

    def dies_once(messages: list[dict[str, Any]], delay_s: int = 0) -> None:
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("the worker's process died before its result left")
        real(messages, delay_s)

    monkeypatch.setattr(svc.queues, "send_decisions", dies_once)
    with pytest.raises(RuntimeError):
        cloud.pump("DefaultTaskQueue")
    assert RUNS["dd-3:a"] == 1
    got, failed = deliver(cloud, clients)  # count 2: `a` still open, its answer may be in flight
    assert failed == {got[0]["MessageId"]} and RUNS["dd-3:a"] == 1
    got, failed = deliver(cloud, clients)  # count 3: settled, runs with the key claimed
    assert not failed and RUNS["dd-3:a"] == 2
    assert [(i["pk"]["S"], i["status"]["S"]) for i in idem_items(cloud, clients)] == [
        ("IDEM#dd-3:a", "COMPLETED")]
    finish(cloud, "dd-3")
    assert RUNS == {"dd-3:a": 2, "dd-3:b": 1}


def test_a_dispatch_re_sent_after_a_decider_crash_does_not_run_again(cloud: Any, clients: Any,
                                                                     monkeypatch: Any) -> None:
    """The decider sends `b`'s dispatch, then dies before its ack: the redelivered result re-sends the
    dispatch, marked `resent`. The worker gets both copies; the first runs, the copy waits until
    the history shows `b` answered, then is acknowledged without running."""
    start(cloud, "dd-4")
    cloud.pump("DefaultTaskQueue")  # a runs
    svc = aws.services()
    sent: list[dict[str, Any]] = []
    real_send = svc.queues.send_task
    monkeypatch.setattr(svc.queues, "send_task",
                        lambda queue, body, delay_s=0: (sent.append(body), real_send(queue, body, delay_s)))
    real_carry = svc.engine._carry_out
    died = [False]

    def dies_after_send(eid: str, effects: list[Any], expiry: Any, fresh: bool = True, **kw: Any) -> None:
        real_carry(eid, effects, expiry, fresh, **kw)
        if effects and not died[0]:
            died[0] = True
            raise RuntimeError("the decider died between its send and its ack")

    monkeypatch.setattr(svc.engine, "_carry_out", dies_after_send)
    cloud.pump("DecisionQueue")  # records a, sends b, dies: the result message comes back
    cloud.pump("DecisionQueue")  # the redelivery re-sends b's dispatch
    assert [(b["unit"], b.get("resent", False)) for b in sent] == [("b", False), ("b", True)]
    finish(cloud, "dd-4")
    assert RUNS == {"dd-4:a": 1, "dd-4:b": 1}
    assert idem_items(cloud, clients) == []


def test_a_long_task_keeps_its_claim_and_answers_a_redelivery_from_it(cloud: Any, clients: Any) -> None:
    aws.services().worker.started_grace_s = 0.05
    start(cloud, "dd-5", sleep=0.3)
    deliver(cloud, clients, delete=False)  # a runs long: claimed, completed; not deleted
    assert [(i["pk"]["S"], i["status"]["S"]) for i in idem_items(cloud, clients)] == [
        ("IDEM#dd-5:a", "COMPLETED")]
    got, failed = deliver(cloud, clients)  # count 2: answered from the record
    assert not failed and RUNS["dd-5:a"] == 1
    finish(cloud, "dd-5")
    assert RUNS == {"dd-5:a": 1, "dd-5:b": 1}


def test_dedupe_false_never_reads_the_history(cloud: Any, clients: Any, monkeypatch: Any) -> None:
    start(cloud, "dd-6", task="dd.natural")
    loads: list[str] = []
    history = aws.services().worker.history
    monkeypatch.setattr(history, "load", lambda eid: loads.append(eid))
    deliver(cloud, clients, delete=False)
    deliver(cloud, clients)  # count 2: runs again, as documented for dedupe=False
    assert RUNS["dd-6:a"] == 2 and loads == [] and idem_items(cloud, clients) == []


def test_a_first_delivery_that_waited_checks_the_history_and_never_defers(cloud: Any, clients: Any) -> None:
    """Sent more than OLD_MESSAGE_MS ago: a queue backlog (open: it runs at once, as it is most likely
    the only copy) or a late copy SQS hands over as new (answered: acknowledged)."""
    from orbit.adapters.sqs import decode_body

    start(cloud, "dd-7")
    svc = aws.services()
    url = cloud.stack.queues["DefaultTaskQueue"]
    m = clients.sqs.receive_message(QueueUrl=url)["Messages"][0]
    body = decode_body(m["Body"], svc.payloads)
    waited = dedupe.Delivery(1, svc.clock.now_ms() - dedupe.OLD_MESSAGE_MS - 1)
    svc.worker.process(body, None, None, waited)
    assert RUNS["dd-7:a"] == 1
    cloud.pump("DecisionQueue")  # the result is recorded
    svc.worker.process(body, None, None, waited)  # the same message again: acknowledged
    assert RUNS["dd-7:a"] == 1
    clients.sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    finish(cloud, "dd-7")
    assert RUNS == {"dd-7:a": 1, "dd-7:b": 1}
    assert idem_items(cloud, clients) == []


def test_a_worker_that_cannot_read_histories_keeps_the_record_for_every_task(cloud: Any, clients: Any,
                                                                              monkeypatch: Any) -> None:
    """A role without the EXEC# Query grant (a custom worker role from before issue 15): the probe at the
    first task finds out, and every task keeps its dedupe record, as before."""
    from botocore.exceptions import ClientError

    def denied(eid: str) -> Any:
        raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "Query")

    svc = aws.services()
    monkeypatch.setattr(svc.worker, "history", type("Denied", (), {"load": staticmethod(denied)})())
    svc.worker._history_readable = None
    start(cloud, "dd-8")
    deliver(cloud, clients, delete=False)  # a quick task: its record is written all the same
    assert [(i["pk"]["S"], i["status"]["S"]) for i in idem_items(cloud, clients)] == [
        ("IDEM#dd-8:a", "COMPLETED")]
    got, failed = deliver(cloud, clients)  # count 2: answered from the record, no history, no wait
    assert not failed and RUNS["dd-8:a"] == 1
    finish(cloud, "dd-8")
    assert RUNS == {"dd-8:a": 1, "dd-8:b": 1}


def test_delivery_attributes_are_read_defensively() -> None:
    of, Delivery = dedupe.Delivery.of, dedupe.Delivery
    assert of({"ApproximateReceiveCount": "3", "SentTimestamp": "1700"}) == Delivery(3, 1700)
    assert of({"ApproximateReceiveCount": "x", "SentTimestamp": None}) == Delivery(1, None)
    assert of({"ApproximateReceiveCount": "-4"}) == Delivery(1, None)
    assert of(None) == Delivery()
