"""Inline attempts run on reused daemon threads (orbit/worker/inline.py `_Runners`): the same answers
as one new thread per attempt, without paying a thread start per step."""

from __future__ import annotations

import contextvars
import threading
import time
from typing import Any

from orbit.core.history.effects import DispatchTask
from orbit.worker.inline import InlineTasks, _Runners

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


def dispatch(task: str, unit: str = "s", attempt: int = 1) -> DispatchTask:
    return DispatchTask(execution_id="e1", unit=unit, task=task, queue="default", input={"v": 1},
                        attempt=attempt, token=f"tok-{unit}-{attempt}", idempotency_key=f"e1:{unit}",
                        inline="at_least_once")


def test_consecutive_attempts_reuse_one_thread_each_named_for_its_step_with_a_fresh_context() -> None:
    seen: list[tuple[int | None, str, str]] = []

    def probe(input: Any, ctx: Any) -> dict[str, Any]:
        seen.append((threading.get_ident(), threading.current_thread().name, VAR.get()))
        VAR.set("left behind")  # must not leak into the next attempt
        return {"v": input["v"] + 1}

    tasks = InlineTasks(tasks={"t.probe": probe})
    outs = [tasks.run(dispatch("t.probe", unit=f"s{i}"), 5_000) for i in range(5)]
    assert outs == [({"v": 2}, None)] * 5
    assert {ident for ident, _, _ in seen} != {threading.get_ident()}  # never on the caller's thread
    assert len({ident for ident, _, _ in seen}) == 1  # one runner thread served all five
    assert [name for _, name, _ in seen] == [f"inline:s{i}" for i in range(5)]
    assert [value for _, _, value in seen] == ["unset"] * 5


def test_an_attempt_past_its_limit_times_out_and_its_thread_is_not_lent_until_it_returns() -> None:
    release = threading.Event()
    idents: dict[str, int] = {}

    def stuck(input: Any, ctx: Any) -> dict[str, Any]:
        idents["stuck"] = threading.get_ident()
        release.wait(10)
        return {"late": True}

    def quick(input: Any, ctx: Any) -> dict[str, Any]:
        idents["quick"] = threading.get_ident()
        return {"v": 0}

    tasks = InlineTasks(tasks={"t.stuck": stuck, "t.quick": quick})
    output, error = tasks.run(dispatch("t.stuck"), 50)
    assert output is None and error is not None and error.code == "TIMEOUT"
    assert tasks.run(dispatch("t.quick", unit="q"), 5_000) == ({"v": 0}, None)
    assert idents["quick"] != idents["stuck"]  # the overrunning thread was still busy
    release.set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and len(_idle_threads()) < 2:
        time.sleep(0.01)
    assert idents["stuck"] in _idle_threads()  # back in the pool once its late attempt returned


def test_a_task_that_raises_base_exception_is_reported_and_the_runner_survives() -> None:
    pool = _Runners()
    ran: list[str] = []

    def boom() -> None:
        raise KeyboardInterrupt  # InlineTasks' targets catch everything; the pool must not rely on it

    assert pool.run(boom, "inline:boom", 5)
    assert pool.run(lambda: ran.append("after"), "inline:after", 5)
    assert ran == ["after"]


def _idle_threads() -> set[int]:
    from orbit.worker import inline

    with inline._RUNNERS._lock:
        return {r.ident for r in inline._RUNNERS._idle}
