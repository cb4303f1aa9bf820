"""Continue-as-new hands over unconsumed signals, links the runs, and refuses an idle loop."""

from __future__ import annotations

from code_harness import Harness
from orbit.workflow import CodeRegistry, workflow

REG = CodeRegistry()


def echo(input, attempt):
    return {"echo": input}


def test_a_signal_sent_before_continue_as_new_is_consumed_by_the_new_run():
    @workflow("can-sleep-wait", registry=REG)
    def wf(ctx, input):
        if input == "first":
            ctx.sleep("1h")
            ctx.continue_as_new("second")
        return [ctx.wait_for("go", timeout="1d"), ctx.wait_for("go", timeout="1d"), ctx.wait_for("stop")]

    h = Harness(wf)
    h.start("can-sleep-wait", "first")
    h.signal("go", {"n": 1})  # the old run is sleeping: buffered, never consumed by it
    h.signal("stop", "s")
    h.signal("go", {"n": 2})
    h.run()
    old = h.describe()
    assert old["continued_to"] == "ex-1~1" and old["continued_as"] == "ex-1~1"
    handed = [e for e in h.history() if e["type"] == "WorkflowContinuedAsNew"][0]["signals"]
    assert [(s["name"], s["payload"]) for s in handed] == [("go", {"n": 1}), ("stop", "s"), ("go", {"n": 2})]
    new = h.describe("ex-1~1")
    assert new["status"] == "COMPLETED", new
    assert new["output"] == [{"n": 1}, {"n": 2}, "s"]
    assert new["continued_from"] == "ex-1" and new["continued_to"] is None
    received = [e for e in h.history("ex-1~1") if e["type"] == "SignalReceived"]
    got = [(e["name"], e["payload"]) for e in received]
    assert got == [("go", {"n": 1}), ("stop", "s"), ("go", {"n": 2})]


def test_a_redelivered_hand_over_records_each_signal_once():
    @workflow("can-redeliver", registry=REG)
    def wf(ctx, input):
        if input == 0:
            ctx.sleep("1m")
            ctx.continue_as_new(1)
        return ctx.wait_for("go")

    h = Harness(wf)
    h.start("can-redeliver", 0)
    h.signal("go", "x")
    h.run()
    start = {"kind": "start", "execution_id": "ex-1~1", "id": "start:ex-1~1", "workflow": "can-redeliver",
             "version": None, "input": 1, "parent": None, "continued_from": "ex-1",
             "signals": [{"name": "go", "payload": "x", "signal_id": "dup"}]}
    h.engine.handle(start)  # the same start again: nothing new is recorded
    assert [e["type"] for e in h.history("ex-1~1")].count("SignalReceived") == 1
    assert h.describe("ex-1~1")["output"] == "x"


def test_a_chain_of_idle_continue_as_new_is_refused_after_a_bounded_number_of_hops():
    @workflow("can-idle", registry=REG)
    def wf(ctx, input):
        ctx.continue_as_new(input + 1)

    h = Harness(wf)
    h.start("can-idle", 0)
    h.run()
    last = h.describe("ex-1~10")
    assert last["status"] == "FAILED", last
    assert last["error"]["code"] == "CONTINUE_AS_NEW_LOOP"
    assert "11 runs in a row" in last["error"]["message"] and "durable call" in last["error"]["message"]
    assert h.describe("ex-1~9")["continued_to"] == "ex-1~10"


def test_a_run_with_a_durable_call_resets_the_hop_count():
    @workflow("can-busy", registry=REG)
    def wf(ctx, input):
        if input < 25:
            if input % 5 == 0:
                ctx.step("a.tick", input)
            ctx.continue_as_new(input + 1)
        return input

    h = Harness(wf, workers={"a.tick": echo})
    h.start("can-busy", 0)
    h.run()
    assert h.describe("ex-1~25")["output"] == 25


def test_a_signal_decided_after_the_run_continued_goes_on_to_the_successor_once():
    @workflow("can-late", registry=REG)
    def wf(ctx, input):
        if input == 0:
            ctx.sleep("1m")
            ctx.continue_as_new(1)
        return ctx.wait_for("go")

    h = Harness(wf)
    h.start("can-late", 0)
    h.advance(60_000)
    h.run_until_idle()
    assert h.describe()["continued_to"] == "ex-1~1"
    late = {"kind": "signal", "execution_id": "ex-1", "id": "sig-late", "name": "go", "payload": "late"}
    h.engine.handle(late)  # accepted while the run was running, decided after it continued
    h.engine.handle(late)  # and delivered twice: forwarded twice, recorded once
    h.run_until_idle()
    assert "SignalReceived" not in h.types("ex-1")
    assert h.describe("ex-1~1")["output"] == "late"
    assert [e["type"] for e in h.history("ex-1~1")].count("SignalReceived") == 1


def test_a_signal_to_a_run_that_continued_is_refused_naming_its_successor():
    import pytest
    from orbit.errors import ExecutionEnded

    @workflow("can-refused", registry=REG)
    def wf(ctx, input):
        if input == 0:
            ctx.continue_as_new(1)
        return ctx.wait_for("go")

    h = Harness(wf)
    h.start("can-refused", 0)
    with pytest.raises(ExecutionEnded, match="continued as new as 'ex-1~1': send it there"):
        h.signal("go", 1)
