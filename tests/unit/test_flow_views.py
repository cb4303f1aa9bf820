"""Flow control, what users see (docs/flow-control.md): describe of a waiting start or step, a
dropped start, `orbit limits` and GET /limits, `orbit describe`, the waiting lines of `orbit
history` and the console, and the metrics."""

from __future__ import annotations

from typing import Any

from orbit.testing.simulator import Simulator, hang, late, succeed

from tests.unit.test_flow_limits import wf


def test_describe_shows_where_a_start_and_a_step_wait_and_limits_lists_use() -> None:
    from orbit.service.http import handle_request

    sim = Simulator()
    sim.register(wf("onboard", {"a": {"task": "slow"}}, concurrency={"limit": 1, "key": "{% input.c %}"},
                    tasks={"slow": {"concurrency": {"limit": 1}}}))
    sim.worker("slow", hang())
    sim.start("onboard", {"c": "x"}, id="x1")
    sim.start("onboard", {"c": "x"}, id="x2")
    sim.start("onboard", {"c": "x"}, id="x3")
    sim.start("onboard", {"c": "y"}, id="y1")
    sim.run_until_idle()
    d = sim.describe("x3")
    assert d["status"] == "WAITING" and d["workflow"] == "onboard"
    assert d["flow"]["limit"] == "workflow:onboard" and d["flow"]["key"] == "x"
    assert d["flow"]["place"] == 2 and d["flow"]["waiting"] == 2 and d["flow"]["holders"] == ["x:x1"]
    d = sim.describe("y1")  # running, its step waits for the task's one slot (x1's step holds it)
    assert d["status"] == "RUNNING" and d["flow"]["a"]["place"] == 1
    assert d["steps"]["a"]["waiting"] == ("waiting for limit 'task:slow' (1 at once): place 1 of 1; "
                                          "held by a:x1|a|1")
    status, got = handle_request(sim.engine, "GET", "/limits")
    assert status == 200
    rows = {(r["limit"], r["key"]): (r["held"], r["max"], r["waiting"]) for r in got["limits"]}
    assert rows == {("task:slow", ""): (1, 1, 1), ("workflow:onboard", "x"): (1, 1, 2),
                    ("workflow:onboard", "y"): (1, 1, 0)}


def test_describe_of_a_dropped_start_says_why() -> None:
    sim = Simulator()
    sim.register(wf("signup", {"a": {"task": "t.a"}}, rate={"limit": 1, "period": "1h", "on_exceed": "drop"}))
    sim.worker("t.a", succeed())
    sim.start("signup", {}, id="first")
    sim.start("signup", {}, id="second")
    sim.run()
    d = sim.describe("second")
    assert d["status"] == "DROPPED" and "rate limit 'workflow:signup'" in d["dropped"]["reason"]


class _Meter:
    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}
        self.values: dict[tuple[str, str], list[float]] = {}

    def count_workflow(self, workflow: str, name: str, n: int = 1) -> None:
        self.counts[(name, workflow)] = self.counts.get((name, workflow), 0) + n

    def observe(self, workflow: str, name: str, value: float) -> None:
        self.values.setdefault((name, workflow), []).append(value)


def test_metrics_wait_time_held_slots_and_drops() -> None:
    sim = Simulator()
    meter = _Meter()
    sim.engine.flow.meter = meter
    sim.register(wf("m", {"a": {"task": "t.a"}}, concurrency={"limit": 1},
                    rate={"limit": 2, "period": "1h", "on_exceed": "drop"}))
    sim.worker("t.a", late(1000, "ok"))
    for i in range(3):
        sim.start("m", {}, id=f"m{i}")
    sim.run()
    # m1 and m2 wait for the one slot; m2, let in after m1, finds no token left: dropped
    assert meter.counts[("FlowWaiting", "workflow:m")] == 2
    assert meter.counts[("FlowDropped", "workflow:m")] == 1
    assert meter.values[("FlowWaitTime", "workflow:m")] == [1000, 2000]
    assert sim.describe("m2")["status"] == "DROPPED"
    assert max(meter.values[("FlowHeldSlots", "workflow:m")]) == 1


def test_cli_describe_prints_a_waiting_start_in_one_line(capsys: Any) -> None:
    import argparse

    from orbit.cli.commands import cmd_describe

    sim = Simulator()
    sim.register(wf("one", {"a": {"task": "slow"}}, concurrency={"limit": 1}))
    sim.worker("slow", hang())
    sim.start("one", {}, id="o1")
    sim.start("one", {}, id="o2")
    sim.run_until_idle()

    class Conn:
        def describe(self, eid: str, **kw: Any) -> Any:
            return sim.describe(eid)

    args = argparse.Namespace(id="o2", json=False, steps_after=None, steps_limit=None)
    assert cmd_describe(args, lambda a: Conn()) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["o2  one v-  WAITING",
                   "waiting for limit 'workflow:one' (1 at once): place 1 of 1; held by x:o1"]


def test_the_waiting_lines_of_history_and_the_console_name_the_limit() -> None:
    from orbit.local.waiting import waiting

    sim = Simulator()
    sim.register(wf("w", {"a": {"task": "slow"}}, tasks={"slow": {"concurrency": {"limit": 1}}}))
    sim.worker("slow", hang())
    sim.start("w", {}, id="w1")
    sim.start("w", {}, id="w2")
    sim.run_until_idle()
    (line,) = waiting(sim.describe("w2"), sim.engine.history("w2"))
    assert line.kind == "limit"
    assert line.text.startswith("for limit 'task:slow' (1 at once): place 1 of 1; held by a:w1|a|1; since ")
    (other,) = waiting(sim.describe("w1"), sim.engine.history("w1"))
    assert other.kind == "running"


def test_orbit_limits_prints_each_limit_with_its_use(capsys: Any) -> None:
    import argparse

    from orbit.cli.commands import cmd_limits

    sim = Simulator()
    sim.register(wf("l", {"a": {"task": "slow"}}, concurrency={"limit": 1, "key": "{% input.c %}"},
                    tasks={"slow": {"rate": {"limit": 10, "period": "1m", "burst": 5}}}))
    sim.worker("slow", hang())
    sim.start("l", {"c": "acme"}, id="l1")
    sim.start("l", {"c": "acme"}, id="l2")
    sim.run_until_idle()

    class Conn:
        def limits(self) -> Any:
            return sim.engine.limits()

    assert cmd_limits(argparse.Namespace(json=False), lambda a: Conn()) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["LIMIT", "KEY", "HELD", "WAITING", "HOLDERS"]
    assert out[1].split() == ["workflow:l", "acme", "1/1", "1", "x:l1"]
    assert out[2].split()[:7] == ["rate", "task:slow", "-", "10", "per", "60000", "ms,"]
    assert "4.0 tokens at" in out[2]  # burst 5, one taken
