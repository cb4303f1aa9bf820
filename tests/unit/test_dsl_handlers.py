"""Scenarios: `on_signal` event handlers on the simulator (docs/definitions.md, "Event handlers")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from orbit.core.history.model import fold, recorded_from_dict
from orbit.errors import ValidationError
from orbit.testing.simulator import fail, hang, succeed

from tests.unit.dsl_harness import T0, events, sim_with

SLEEPY = {"nap": {"sleep": "1h"}}


def echo(inp: Any, ctx: Any) -> Any:
    return {"got": inp}


def handler(**steps: Any) -> dict[str, Any]:
    return {"steps": steps}


def spans(sim: Any, eid: str, prefix: str) -> dict[str, tuple[int, int]]:
    """unit -> (seq it started, seq it ended) for the units whose key starts with `prefix`."""
    out: dict[str, list[int]] = {}
    for e in sim.history(eid):
        step = e.get("step", "")
        if not step.startswith(prefix):
            continue
        if e["type"] in ("HandlerStarted", "StepScheduled", "TimerStarted") and step not in out:
            out[step] = [e["seq"], 0]
        elif e["type"] in ("StepSucceeded", "StepFailed", "StepCancelled") and step in out:
            out[step][1] = e["seq"]
    return {k: (a, b) for k, (a, b) in out.items()}


def test_three_signals_while_the_main_flow_sleeps_run_three_instances_each_with_its_payload() -> None:
    sim = sim_with(SLEEPY, on_signal={"addr": {
        "steps": {"update": {"task": "crm.update", "input": {"address": "{% event.address %}"}}},
        "output": "{% steps.update.output.got.address %}"}})
    sim.worker("crm.update", echo)
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    for street in ("1 Elm", "2 Oak", "3 Ash"):
        sim.signal(eid, "addr", {"address": street})
    sim.run_until_idle()
    d = sim.describe(eid)
    assert d["status"] == "RUNNING" and d["steps"]["nap"]["status"] == "WAITING"  # still asleep
    started = events(sim, eid, "HandlerStarted")
    received = events(sim, eid, "SignalReceived")
    assert [e["step"] for e in started] == [f"on_signal:addr@{r['seq']}" for r in received]
    assert [e["signal_seq"] for e in started] == [r["seq"] for r in received]
    outputs = [d["steps"][e["step"]]["output"] for e in started]
    assert outputs == ["1 Elm", "2 Oak", "3 Ash"]  # each instance its own payload, in arrival order
    for e in started:
        assert d["steps"][e["step"] + ":update"]["status"] == "SUCCEEDED"
    # serialised by default: each instance starts after the one before it ended
    runs = sorted(spans(sim, eid, "on_signal:addr@").items())
    instances = [v for k, v in runs if k.count(":") == 1]
    assert all(a[1] < b[0] for a, b in zip(instances, instances[1:]))
    sim.run()
    assert sim.describe(eid)["status"] == "COMPLETED"


def test_concurrency_lets_instances_of_one_signal_overlap() -> None:
    sim = sim_with(SLEEPY, on_signal={"item": {"concurrency": 3, "steps": {"add": {"sleep": "5m"}}}})
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    for n in range(4):
        sim.signal(eid, "item", {"n": n})
    sim.run_until_idle()
    steps = sim.describe(eid)["steps"]
    live = [k for k, s in steps.items() if k.count(":") == 1 and s["status"] == "RUNNING"]
    assert len(live) == 3  # the fourth waits for a slot
    sim.advance(5 * 60_000)
    sim.run_until_idle()
    steps = sim.describe(eid)["steps"]
    assert sum(1 for k, s in steps.items() if k.count(":") == 1 and s["status"] == "SUCCEEDED") == 3
    assert sum(1 for k, s in steps.items() if k.count(":") == 1 and s["status"] == "RUNNING") == 1


def test_an_instance_sees_the_main_flows_steps_and_its_own() -> None:
    sim = sim_with({"first": {"compute": "{% 'one' %}"}, "nap": {"sleep": "1h", "after": ["first"]}},
                   input={"type": "object"},
                   on_signal={"note": {"steps": {
                       "a": {"compute": "{% event.text & '/' & main.steps.first.output & '/' & input.who %}"},
                       "b": {"compute": "{% steps.a.output & '!' %}"}}}})
    eid = sim.start("wf", {"who": "ann"}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "note", {"text": "hi"})
    sim.run_until_idle()
    key = events(sim, eid, "HandlerStarted")[0]["step"]
    assert sim.describe(eid)["steps"][key]["output"] == {"a": "hi/one/ann", "b": "hi/one/ann!"}


def test_a_failing_handler_fails_the_execution_and_compensates_main_and_handler_steps() -> None:
    sim = sim_with(
        {"reserve": {"task": "inv.reserve", "compensate": {"task": "inv.release"}},
         "nap": {"sleep": "1h", "after": ["reserve"]}},
        on_signal={"addr": {"steps": {
            "update": {"task": "crm.update", "input": "{% event %}",
                       "compensate": {"task": "crm.restore", "input": {"undo": "{% event.address %}"}}},
            "notify": {"task": "mail.send", "after": ["update"],
                       "retry": {"max_attempts": 2, "backoff": "1s"}},
        }}})
    sim.worker("inv.reserve", succeed("R"))
    sim.worker("inv.release", succeed())
    sim.worker("crm.update", succeed("U"))
    sim.worker("crm.restore", echo)
    sim.worker("mail.send", fail("SMTP_DOWN"))
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "addr", {"address": "1 Elm"})
    sim.run()
    d = sim.describe(eid)
    key = events(sim, eid, "HandlerStarted")[0]["step"]
    assert d["status"] == "FAILED" and d["compensation"] == "completed"
    assert d["error"]["code"] == "SMTP_DOWN" and f"{key}:notify" in d["error"]["message"]
    assert d["steps"][f"{key}:notify"]["status"] == "FAILED" and d["steps"][f"{key}:notify"]["attempt"] == 2
    assert d["steps"]["nap"]["status"] == "CANCELLED" and d["steps"][key]["status"] == "CANCELLED"
    order = events(sim, eid, "CompensationStarted")[0]["steps"]
    assert order == [f"{key}:update", "reserve"]  # newest success first, across main and handler
    assert d["steps"][f"compensate:{key}:update"]["output"] == {"got": {"undo": "1 Elm"}}
    assert d["steps"]["compensate:reserve"]["status"] == "SUCCEEDED"


def test_on_failure_continue_keeps_a_handler_failure_inside_its_instance() -> None:
    sim = sim_with(SLEEPY, on_signal={"addr": {"steps": {
        "update": {"task": "crm.update", "on_failure": "continue"},
        "log": {"compute": "{% steps.update.error.code %}"}}}})
    sim.worker("crm.update", fail("NOPE", retryable=False))
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "addr", {})
    sim.run()
    d = sim.describe(eid)
    key = events(sim, eid, "HandlerStarted")[0]["step"]
    assert d["status"] == "COMPLETED" and d["steps"][key]["status"] == "SUCCEEDED"
    assert d["steps"][key]["output"]["log"] == "NOPE"


def test_a_cancel_while_handlers_run_cancels_their_steps_and_compensates() -> None:
    sim = sim_with(SLEEPY, on_signal={"item": {"concurrency": 2, "steps": {
        "add": {"task": "cart.add", "input": "{% event %}", "compensate": {"task": "cart.remove"}},
        "price": {"task": "cart.price", "after": ["add"]}}}})
    sim.worker("cart.add", succeed("added"))
    sim.worker("cart.remove", succeed())
    sim.worker("cart.price", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    for n in range(3):
        sim.signal(eid, "item", {"n": n})
    sim.run_until_idle()
    keys = [e["step"] for e in events(sim, eid, "HandlerStarted")]
    assert len(keys) == 2  # the third waits for a slot
    sim.cancel(eid, "customer left")
    sim.run()
    d = sim.describe(eid)
    assert d["status"] == "CANCELLED" and d["compensation"] == "completed"
    for key in keys:
        assert d["steps"][key]["status"] == "CANCELLED"
        assert d["steps"][f"{key}:price"]["status"] == "CANCELLED"
        assert d["steps"][f"compensate:{key}:add"]["status"] == "SUCCEEDED"
    assert {c["unit"] for c in sim.cancelled_tasks} == {f"{k}:price" for k in keys}  # workers told
    assert len(events(sim, eid, "HandlerStarted")) == 2  # the waiting arrival never started
    assert events(sim, eid, "CompensationStarted")[0]["steps"] == [f"{k}:add" for k in reversed(keys)]


def test_the_workflow_timeout_covers_handler_steps() -> None:
    sim = sim_with({"nap": {"sleep": "2h"}}, timeout="1h",
                   on_signal={"go": {"steps": {"work": {"task": "w.slow"}}}})
    sim.worker("w.slow", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "go", {})
    sim.run()
    d = sim.describe(eid)
    key = events(sim, eid, "HandlerStarted")[0]["step"]
    assert d["status"] == "TIMED_OUT"
    assert d["steps"][f"{key}:work"]["status"] == "CANCELLED" and d["steps"][key]["status"] == "CANCELLED"


def test_the_main_flow_ending_cancels_running_handlers_and_drops_waiting_arrivals() -> None:
    sim = sim_with({"nap": {"sleep": "10m"}}, output="{% 'done' %}",
                   on_signal={"go": {"steps": {"work": {"task": "w.slow"}}}})
    sim.worker("w.slow", hang())
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "go", {"n": 1})
    sim.signal(eid, "go", {"n": 2})
    sim.run()
    d = sim.describe(eid)
    key = events(sim, eid, "HandlerStarted")[0]["step"]
    assert d["status"] == "COMPLETED" and d["output"] == "done"
    assert d["steps"][key]["status"] == "CANCELLED" and d["steps"][f"{key}:work"]["status"] == "CANCELLED"
    reasons = {e["step"]: e["reason"] for e in events(sim, eid, "StepCancelled")}
    assert reasons == {key: "the main flow ended", f"{key}:work": "the main flow ended"}
    assert [c["unit"] for c in sim.cancelled_tasks] == [f"{key}:work"]
    assert len(events(sim, eid, "HandlerStarted")) == 1
    types = sim.types(eid)
    assert types.index("WorkflowCompleted") > max(i for i, t in enumerate(types) if t == "StepCancelled")


def test_a_hook_resume_starts_an_instance_too() -> None:
    # `paid` is declared by on_signal alone: its hook token exists before the first step reads it
    sim = sim_with({"ask": {"compute": "{% hooks.paid.token %}"}, "nap": {"sleep": "1h", "after": ["ask"]}},
                   on_signal={"paid": {"steps": {"book": {"compute": "{% event.amount %}"}}}})
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.resume_hook(sim.describe(eid)["steps"]["ask"]["output"], {"amount": 12})
    sim.run_until_idle()
    started = events(sim, eid, "HandlerStarted")
    assert started[0]["signal_id"].startswith("hook:")
    assert sim.describe(eid)["steps"][started[0]["step"]]["output"] == {"book": 12}


def test_an_output_expression_error_fails_the_execution_naming_the_instance() -> None:
    sim = sim_with(SLEEPY, on_signal={"x": {"steps": {"a": {"compute": "{% 1 %}"}},
                                             "output": "{% $number('nope') %}"}})
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "x", {})
    sim.run()
    d = sim.describe(eid)
    key = events(sim, eid, "HandlerStarted")[0]["step"]
    assert d["status"] == "FAILED" and d["error"]["code"] == "EXPRESSION_ERROR"
    assert f"{key}.output" in d["error"]["message"]


def test_a_redrive_resumes_the_instance_the_failure_cut_short() -> None:
    sim = sim_with(SLEEPY, on_signal={"x": {"steps": {
        "a": {"task": "t.a"}, "b": {"compute": "{% steps.a.output %}"}}}})
    sim.worker("t.a", fail("BUSY", retryable=False), succeed("fine"))
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "x", {})
    sim.run()
    assert sim.describe(eid)["status"] == "FAILED"
    sim.redrive(eid)
    sim.run()
    d = sim.describe(eid)
    key = events(sim, eid, "HandlerStarted")[0]["step"]
    assert d["status"] == "COMPLETED"
    assert d["steps"][key]["status"] == "SUCCEEDED"
    assert d["steps"][key]["output"] == {"a": "fine", "b": "fine"}


def test_the_state_folded_from_history_is_the_state_the_decider_kept() -> None:
    sim = sim_with(SLEEPY, on_signal={"x": {"concurrency": 2, "steps": {"a": {"sleep": "1m"}}}})
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    for n in range(3):
        sim.signal(eid, "x", n)
    sim.run()
    folded = fold(eid, [recorded_from_dict(e) for e in sim.history(eid)])
    assert folded.describe()["steps"] == sim.describe(eid)["steps"]
    assert folded.signals == {}  # every arrival was consumed by an instance


def test_the_api_accepts_a_handled_signal_and_refuses_unknown_ones() -> None:
    sim = sim_with(SLEEPY, on_signal={"x": handler(a={"compute": "{% 1 %}"})})
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "x", {})
    with pytest.raises(ValidationError, match="it knows: x"):
        sim.signal(eid, "y", {})


def test_a_definition_without_handlers_records_the_same_as_before() -> None:
    sim = sim_with(SLEEPY)
    eid = sim.start("wf", {}, id="e1")
    sim.run()
    assert sim.types(eid) == ["WorkflowCreated", "WorkflowStarted", "TimerStarted", "TimerFired",
                              "WorkflowCompleted"]
    assert sim.history(eid)[-1]["timestamp_ms"] == T0 + 3_600_000


def test_the_timeline_and_the_waiting_rows_show_handler_instances() -> None:
    from orbit.local.timeline import rows
    from orbit.local.waiting import waiting

    sim = sim_with(SLEEPY, on_signal={"x": {"steps": {"pause": {"sleep": "5m"}}}})
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "x", {})
    sim.run_until_idle()
    key = events(sim, eid, "HandlerStarted")[0]["step"]
    found = {w.unit: w for w in waiting(sim.describe(eid), sim.history(eid))}
    assert found[key].kind == "handler" and "handler of signal x" in found[key].text
    assert found[f"{key}:pause"].kind == "timer"
    sim.run()
    table = {r.unit: r for r in rows(sim.history(eid))}
    assert table[key].duration_ms == 300_000 and table[key].outcome == "succeeded"
    assert table[f"{key}:pause"].outcome == "slept"


def test_orbit_graph_draws_each_handler_as_a_subgraph() -> None:
    from orbit.core.definition.load import load_definition
    from orbit.core.definition.mermaid import to_mermaid

    root = Path(__file__).resolve().parents[2]
    chart = to_mermaid(load_definition(root / "examples" / "order_changes.yaml"))
    assert 'subgraph h0["on signal address_changed (one at a time)"]' in chart
    assert 'subgraph h1["on signal item_added (5 at a time)"]' in chart
    assert "h1s0 -. compensate .-> h1s0_undo" in chart and chart.count("\n  end") == 2


def test_a_fork_reuses_main_steps_but_not_the_originals_handler_instances() -> None:
    sim = sim_with({"a": {"compute": "{% 1 %}"}, "nap": {"sleep": "1h", "after": ["a"]},
                    "b": {"task": "t.b", "after": ["nap"]}},
                   on_signal={"x": {"steps": {"h": {"compute": "{% event %}"}}}})
    sim.worker("t.b", fail("BROKEN", retryable=False))
    eid = sim.start("wf", {}, id="e1")
    sim.run_until_idle()
    sim.signal(eid, "x", "hello")
    sim.run()
    assert sim.describe(eid)["status"] == "FAILED"
    fork = sim.fork(eid, from_step="b", id="e1-fork")
    sim.run_until_idle()
    steps = sim.describe(fork)["steps"]
    assert steps["a"]["status"] == "SUCCEEDED" and not [k for k in steps if k.startswith("on_signal:")]
