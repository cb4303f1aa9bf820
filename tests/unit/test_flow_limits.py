"""Flow control on the simulator's virtual clock (docs/flow-control.md): concurrency per key for
executions and attempts, a queue's global limit, rate limits (wait, drop, fail), priority,
fairness, slots given back on every end, and the checks at registration."""

from __future__ import annotations

from typing import Any

import orbit
import pytest
from orbit.adapters.memory_limits import MemoryLimits
from orbit.core.definition import parse_definition
from orbit.errors import NotFound, ValidationError
from orbit.testing.simulator import Simulator, fail, hang, late, succeed
from orbit.workflow import CodeRegistry

T0 = 1_700_000_000_000


def wf(name: str, steps: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"orbit": 1, "name": name, "version": "1", "steps": steps, **top}


def spans(sim: Simulator, ids: list[str], start: str, end: str) -> list[tuple[int, int, str]]:
    """(from, to, execution) of each execution between its first `start` and `end` events."""
    out = []
    for e in ids:
        h = sim.history(e)
        a = next(r["timestamp_ms"] for r in h if r["type"] == start)
        b = next(r["timestamp_ms"] for r in h if r["type"] == end)
        out.append((a - T0, b - T0, e))
    return out


def peak(intervals: list[tuple[int, int, str]]) -> int:
    """The most intervals open at once ([from, to): one that ends as another starts is not both)."""
    points = sorted([(a, 1) for a, _, _ in intervals] + [(b, -1) for _, b, _ in intervals],
                    key=lambda p: (p[0], p[1]))
    now = best = 0
    for _, d in points:
        now += d
        best = max(best, now)
    return best


def test_one_running_onboarding_per_customer_the_rest_wait_in_order() -> None:
    sim = Simulator()
    sim.register(wf("onboard", {"a": {"task": "t.a"}},
                    concurrency={"limit": 1, "key": "{% input.customer %}"}))
    sim.worker("t.a", late(1000, "ok"))
    ids = {c: [sim.start("onboard", {"customer": c}, id=f"{c}{i}") for i in range(3)] for c in "xyz"}
    sim.run()
    for c, group in ids.items():
        runs = spans(sim, group, "WorkflowCreated", "WorkflowCompleted")
        assert peak(runs) == 1, runs
        assert [e for _, _, e in sorted(runs)] == group  # in the order they were started
        assert runs[-1][0] == 2000  # nobody waits longer than the two ahead of it
    assert all(not c.holders and not c.waiting for c in sim.limits.counters.values())


def test_a_waiting_start_is_not_decided_and_describe_does_not_find_it_yet() -> None:
    sim = Simulator()
    sim.register(wf("onboard", {"a": {"task": "t.a"}}, concurrency={"limit": 1}))
    sim.worker("t.a", hang())
    sim.start("onboard", {}, id="first")
    sim.start("onboard", {}, id="second")
    sim.run_until_idle()
    assert sim.describe("first")["status"] == "RUNNING"
    with pytest.raises(NotFound):
        sim.engine.load_state("second")
    sim.cancel("first")
    sim.run_until_idle()
    assert sim.describe("second")["status"] == "RUNNING"  # the cancel gave the slot to the next


def test_task_limit_per_key_holds_across_workflows() -> None:
    sim = Simulator()
    tasks = {"partner.call": {"concurrency": {"limit": 2, "key": "{% input.partner %}"}}}
    step = {"task": "partner.call", "input": {"partner": "{% input.p %}"}}
    sim.register(wf("one", {"a": step}, tasks=tasks))
    sim.register(wf("two", {"b": step}, tasks=tasks))
    sim.worker("partner.call", late(1000, "ok"))
    ids = [sim.start(w, {"p": p}, id=f"{w}{p}{i}") for w in ("one", "two") for p in "ab" for i in range(3)]
    sim.run()
    assert {sim.describe(e)["status"] for e in ids} == {"COMPLETED"}
    for p in "ab":
        mine = [e for e in ids if e[3] == p]
        assert peak(spans(sim, mine, "StepDispatched", "StepSucceeded")) <= 2
        starts = sorted(a for a, _, _ in spans(sim, mine, "StepDispatched", "StepSucceeded"))
        assert starts == [0, 0, 1000, 1000, 2000, 2000]


def test_a_queue_limit_caps_every_task_on_the_queue() -> None:
    sim = Simulator()
    sim.register(wf("q", {"a": {"task": "t.a", "queue": "shared"}, "b": {"task": "t.b", "queue": "shared"}},
                    queues={"shared": {"concurrency": 1}}))
    sim.worker("t.a", late(500, 1))
    sim.worker("t.b", late(500, 2))
    ids = [sim.start("q", {}, id=f"q{i}") for i in range(3)]
    sim.run()
    runs = []
    for e in ids:
        h = sim.history(e)
        for step in ("a", "b"):
            a = next(r["timestamp_ms"] for r in h if r["type"] == "StepDispatched" and r["step"] == step)
            b = next(r["timestamp_ms"] for r in h if r["type"] == "StepSucceeded" and r["step"] == step)
            runs.append((a, b, f"{e}.{step}"))
    assert {sim.describe(e)["status"] for e in ids} == {"COMPLETED"}
    assert peak(runs) == 1 and len(runs) == 6


def test_rate_limit_waits_and_never_exceeds_rate_times_time_plus_burst() -> None:
    sim = Simulator()
    sim.register(wf("rated", {"a": {"task": "api.call"}},
                    tasks={"api.call": {"rate": {"limit": 2, "period": "1s", "burst": 3}}}))
    sim.worker("api.call", succeed("ok"))
    ids = [sim.start("rated", {}, id=f"r{i}") for i in range(20)]
    sim.run()
    assert {sim.describe(e)["status"] for e in ids} == {"COMPLETED"}
    times = sorted(r["timestamp_ms"] - T0 for e in ids for r in sim.history(e)
                   if r["type"] == "StepDispatched")
    for w in range(0, 10_000, 250):  # every window [t, t + 1s): at most 2 x 1 + 3
        assert sum(1 for t in times if w <= t < w + 1000) <= 5
    assert times[:3] == [0, 0, 0] and times[-1] <= 9000


def test_rate_limit_fail_fails_the_step_with_a_clear_code() -> None:
    sim = Simulator()
    sim.register(wf("strict", {"a": {"task": "api.call"}},
                    tasks={"api.call": {"rate": {"limit": 1, "period": "1m", "burst": 1,
                                                 "on_exceed": "fail"}}}))
    sim.worker("api.call", succeed("ok"))
    a, b = sim.start("strict", {}, id="a"), sim.start("strict", {}, id="b")
    sim.run()
    assert sim.describe(a)["status"] == "COMPLETED"
    d = sim.describe(b)
    assert d["status"] == "FAILED" and d["error"]["code"] == "RATE_LIMITED"
    assert "rate limit 'task:api.call'" in d["error"]["message"]


def test_start_rate_limit_drop_records_the_reason() -> None:
    sim = Simulator()
    sim.register(wf("signup", {"a": {"task": "t.a"}},
                    rate={"limit": 2, "period": "1h", "key": "{% input.ip %}", "on_exceed": "drop"}))
    sim.worker("t.a", succeed())
    for i in range(4):
        sim.start("signup", {"ip": "1.2.3.4"}, id=f"s{i}")
    sim.start("signup", {"ip": "5.6.7.8"}, id="other")
    sim.run()
    assert [sim.describe(f"s{i}")["status"] for i in range(2)] == ["COMPLETED"] * 2
    assert sim.describe("other")["status"] == "COMPLETED"
    for i in (2, 3):
        with pytest.raises(NotFound):
            sim.engine.load_state(f"s{i}")  # never created
        assert sim.describe(f"s{i}")["status"] == "DROPPED"
        assert "rate limit 'workflow:signup' key '1.2.3.4'" in sim.limits.drops[f"x:s{i}"]["reason"]


def test_priority_overtakes_bulk_work_and_equal_priorities_keep_their_order() -> None:
    sim = Simulator()
    sim.register(wf("jobs", {"a": {"task": "t.a"}},
                    concurrency={"limit": 1}, priority="{% input.urgent ? 1 : 5 %}"))
    sim.worker("t.a", late(100, "ok"))
    ids = [sim.start("jobs", {"urgent": False}, id=f"bulk{i}") for i in range(5)]
    ids += [sim.start("jobs", {"urgent": True}, id=f"urgent{i}") for i in range(2)]
    sim.run()
    order = [e for _, _, e in sorted(spans(sim, ids, "WorkflowCreated", "WorkflowCompleted"))]
    assert order == ["bulk0", "urgent0", "urgent1", "bulk1", "bulk2", "bulk3", "bulk4"]


def test_fairness_small_tenant_is_not_stuck_behind_a_big_one() -> None:
    sim = Simulator()
    sim.register(wf("work", {"a": {"task": "t.a"}},
                    concurrency={"limit": 1,
                                 "fairness": {"key": "{% input.tenant %}", "weights": {"vip": 2}}}))
    sim.worker("t.a", late(10, "ok"))
    big = [sim.start("work", {"tenant": "big"}, id=f"big{i}") for i in range(40)]
    small = [sim.start("work", {"tenant": "small"}, id=f"small{i}") for i in range(3)]
    vip = [sim.start("work", {"tenant": "vip"}, id=f"vip{i}") for i in range(6)]
    sim.run()
    order = [e for _, _, e in sorted(spans(sim, big + small + vip, "WorkflowCreated", "WorkflowCompleted"))]
    last_small = max(order.index(e) for e in small)
    assert last_small <= 2 * 3 * 4  # within 2x its items / its weight share (1 of 4 weights)
    first_12 = order[1:13]  # after big0 (let in at once): vip gets 2 turns for each of big's and small's
    assert first_12.count("vip0") + sum(1 for e in first_12 if e.startswith("vip")) >= 6


def test_slot_comes_back_when_the_attempt_times_out_or_fails_for_good() -> None:
    sim = Simulator()
    # (a `timeout` would count the wait in line too, as it counts a wait in the queue: see the docs)
    sim.register(wf("t", {"a": {"task": "slow", "heartbeat_timeout": "5s", "retry": {"max_attempts": 1}}},
                    tasks={"slow": {"concurrency": {"limit": 1}}}))
    sim.worker("slow", hang(), fail("BOOM", retryable=False), succeed("ok"))
    ids = [sim.start("t", {}, id=f"t{i}") for i in range(3)]
    sim.run()
    assert [sim.describe(e)["status"] for e in ids] == ["FAILED", "FAILED", "COMPLETED"]
    assert [c.holders for c in sim.limits.counters.values()] == [set()]


def test_cancel_while_waiting_leaves_the_line() -> None:
    sim = Simulator()
    sim.register(wf("t", {"a": {"task": "slow"}}, tasks={"slow": {"concurrency": {"limit": 1}}}))
    sim.worker("slow", hang())
    sim.start("t", {}, id="holder")
    sim.start("t", {}, id="waiter")
    sim.run_until_idle()
    (counter,) = sim.limits.counters.values()
    assert len(counter.holders) == 1 and counter.waiting_total == 1
    sim.cancel("waiter")
    sim.run_until_idle()
    (counter,) = sim.limits.counters.values()
    assert counter.waiting_total == 0 and not sim.limits.tickets


def test_code_workflow_key_function_and_task_limits() -> None:
    reg = CodeRegistry()

    @orbit.workflow("code-onboard", registry=reg, concurrency={"limit": 1, "key": lambda i: i["customer"]},
                    tasks={"t.a": {"concurrency": {"limit": 5}}})
    def onboard(ctx: Any, input: Any) -> Any:
        return ctx.step("t.a", input)

    sim = Simulator()
    sim.register(onboard)
    sim.worker("t.a", late(1000, "ok"))
    ids = [sim.start("code-onboard", {"customer": c}, id=f"{c}{i}") for c in "xy" for i in range(2)]
    sim.run()
    for c in "xy":
        group = [e for e in ids if e[0] == c]
        assert peak(spans(sim, group, "WorkflowCreated", "WorkflowCompleted")) == 1


def test_unlimited_work_makes_no_flow_request() -> None:
    sim = Simulator()
    sim.register(wf("plain", {"a": {"task": "t.a"}, "b": {"task": "t.a", "after": ["a"]}}))
    sim.worker("t.a", succeed())
    for i in range(5):
        sim.start("plain", {}, id=f"p{i}")
    sim.run()
    assert sim.limits.requests == 0


@pytest.mark.parametrize(("top", "path"), [
    ({"concurrency": {"limit": 0}}, "concurrency.limit"),
    ({"concurrency": {"limit": 2, "key": "customer"}}, "concurrency.key"),
    ({"concurrency": {"limit": 2, "kye": "{% input.c %}"}}, "concurrency.kye"),
    ({"rate": {"limit": 5, "period": "soon"}}, "rate.period"),
    ({"rate": {"limit": 5, "on_exceed": "fail"}}, "rate.on_exceed"),
    ({"priority": 9}, "priority"),
    ({"queues": {"q": {"concurrency": -1}}}, "queues.q.concurrency"),
    ({"tasks": {"t.a": {"rate": {"limit": 1, "on_exceed": "drop"}}}}, "tasks.t.a.rate.on_exceed"),
    ({"concurrency": {"limit": 1, "fairness": {"key": "{% input.t %}", "weights": {"a": 0}}}},
     "concurrency.fairness.weights.a"),
])
def test_bad_limits_are_refused_at_registration_naming_the_path(top: dict[str, Any], path: str) -> None:
    with pytest.raises(ValidationError) as e:
        parse_definition(wf("bad", {"a": {"task": "t.a"}}, **top))
    assert any(p.path == path for p in e.value.problems), str(e.value)
    assert "\n" not in str(e.value)


def test_bad_code_limits_are_refused_naming_the_argument() -> None:
    with pytest.raises(ValidationError) as e:
        orbit.workflow("bad-code", registry=CodeRegistry(), concurrency={"limit": "many"})
    assert str(e.value).startswith("workflow.concurrency.limit: must be a whole number")


def test_start_rate_wait_holds_starts_back_on_the_virtual_clock() -> None:
    sim = Simulator()
    sim.register(wf("paced", {"a": {"task": "t.a"}}, rate={"limit": 1, "period": "20m", "burst": 1}))
    sim.worker("t.a", succeed())
    ids = [sim.start("paced", {}, id=f"p{i}") for i in range(3)]
    sim.run()
    created = [sim.history(e)[0]["timestamp_ms"] - T0 for e in ids]
    assert created == [0, 1_200_000, 2_400_000]  # past SQS's 15-minute delay: it comes back twice
    assert {sim.describe(e)["status"] for e in ids} == {"COMPLETED"}


def test_a_task_limit_and_its_queue_limit_both_hold() -> None:
    sim = Simulator()
    sim.register(wf("both", {"a": {"task": "t.a", "queue": "q", "input": "{% input %}"},
                             "b": {"task": "t.b", "queue": "q"}},
                    tasks={"t.a": {"concurrency": {"limit": 1, "key": "{% input.k %}"}}},
                    queues={"q": {"concurrency": 2}}))
    sim.worker("t.a", late(1000, 1))
    sim.worker("t.b", late(1000, 2))
    ids = [sim.start("both", {"k": "same"}, id=f"b{i}") for i in range(3)]
    sim.run()
    assert {sim.describe(e)["status"] for e in ids} == {"COMPLETED"}
    spans_a, spans_all = [], []
    for e in ids:
        h = sim.history(e)
        for step in ("a", "b"):
            a = next(r["timestamp_ms"] for r in h if r["type"] == "StepDispatched" and r["step"] == step)
            b = next(r["timestamp_ms"] for r in h if r["type"] == "StepSucceeded" and r["step"] == step)
            spans_all.append((a, b, e))
            if step == "a":
                spans_a.append((a, b, e))
    assert peak(spans_a) == 1 and peak(spans_all) == 2
    assert all(not c.holders and not c.waiting for c in sim.limits.counters.values())


def test_a_redrive_takes_its_slot_back_or_is_refused_while_the_limit_is_full() -> None:
    from orbit.errors import RedriveRefused

    sim = Simulator()
    sim.register(wf("r", {"a": {"task": "t.a", "retry": {"max_attempts": 1}}}, concurrency={"limit": 1}))
    sim.worker("t.a", fail("BOOM", retryable=False), hang(), late(1000, "ok"))
    sim.start("r", {}, id="r1")
    sim.run()
    assert sim.describe("r1")["status"] == "FAILED"
    sim.start("r", {}, id="r2")  # takes the free slot and hangs
    sim.run_until_idle()
    with pytest.raises(RedriveRefused) as e:
        sim.redrive("r1")
    assert str(e.value) == "limit 'workflow:r' key '' has 1 of 1 running; redrive it when one ends"
    sim.cancel("r2")
    sim.run_until_idle()
    sim.redrive("r1")
    (counter,) = sim.limits.counters.values()
    assert counter.holders == {"x:r1"}
    sim.run()
    assert sim.describe("r1")["status"] == "COMPLETED"
    (counter,) = sim.limits.counters.values()
    assert counter.holders == set()


def test_a_resent_dispatch_is_never_failed_and_waits_for_a_token() -> None:
    from orbit.core.flow.gates import Bucket, Gate
    from orbit.service.limits import FlowGate

    class Sent:
        def __init__(self) -> None:
            self.tasks: list[dict[str, Any]] = []
            self.decisions: list[dict[str, Any]] = []

        def send_task(self, queue: str, body: dict[str, Any], delay_s: int = 0) -> None:
            self.tasks.append({**body, "delay_s": delay_s})

        def send_decision(self, message: dict[str, Any], delay_s: int = 0) -> None:
            self.decisions.append(message)

    class Clock:
        def now_ms(self) -> int:
            return 0

    sent = Sent()
    flow = FlowGate(MemoryLimits(), sent, Clock())  # type: ignore[arg-type]
    gate = Gate("a:e|s|1", (), Bucket("rate:t|", "rate:t", "", 1, 60_000, 1, "fail"), 3)
    body = {"execution_id": "e", "unit": "s", "token": "t1"}
    flow.dispatch(gate, "q", body)
    flow.dispatch(gate, "q", {**body, "resent": True})  # the commit's effects again, after a crash
    assert sent.decisions == []  # not failed with RATE_LIMITED: its first copy may have run
    assert [t["delay_s"] for t in sent.tasks] == [0, 60]  # it waits for a token of its own
    flow.dispatch(Gate("a:e|s2|1", (), gate.bucket, 3), "q", {**body, "unit": "s2", "token": "t2"})
    assert [d["error"]["code"] for d in sent.decisions] == ["RATE_LIMITED"]


def test_the_same_start_again_is_not_dropped_and_keeps_its_slot() -> None:
    sim = Simulator()
    sim.register(wf("once", {"a": {"task": "slow"}}, concurrency={"limit": 1},
                    rate={"limit": 1, "period": "1h", "on_exceed": "drop"}))
    sim.worker("slow", hang())
    sim.start("once", {}, id="o1")
    sim.run_until_idle()
    assert sim.start("once", {}, id="o1") == "o1"  # a client's retry: no token left, yet not dropped
    sim.run_until_idle()
    (counter,) = sim.limits.counters.values()
    assert counter.holders == {"x:o1"} and sim.limits.drops == {}
    assert sim.describe("o1")["status"] == "RUNNING"
