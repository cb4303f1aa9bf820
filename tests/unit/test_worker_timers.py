"""The worker's scheduler (worker/timers.py): one thread times every task's grace period and keep-alive."""

from __future__ import annotations

import threading
import time

from orbit.worker.batching import KeepAlive
from orbit.worker.timers import Timers


def test_a_one_shot_runs_once_at_its_time_unless_cancelled():
    t = Timers()
    fired: list[float] = []
    start = time.monotonic()
    t.after(0.05, lambda: fired.append(time.monotonic() - start))
    skipped = t.after(0.05, lambda: fired.append(-1.0))
    t.cancel(skipped)
    time.sleep(0.3)
    assert len(fired) == 1 and fired[0] >= 0.05


def test_cancel_waits_for_a_run_in_progress():
    t = Timers()
    entered, done = threading.Event(), []

    def slow() -> None:
        entered.set()
        time.sleep(0.2)
        done.append(True)

    h = t.after(0.0, slow)
    assert entered.wait(2)
    t.cancel(h)
    assert done == [True]  # like Timer.cancel(); Timer.join()


def test_a_periodic_callback_repeats_survives_errors_and_stops_when_cancelled():
    t = Timers()
    runs: list[int] = []

    def extend() -> None:
        runs.append(1)
        if len(runs) == 1:
            raise RuntimeError("throttled")  # a failing extension never stops the next

    h = t.after(0.02, extend, period_s=0.02)
    deadline = time.monotonic() + 3
    while len(runs) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    t.cancel(h)
    seen = len(runs)
    time.sleep(0.1)
    assert seen >= 3 and len(runs) == seen


def test_a_slow_callback_does_not_delay_another_tasks():
    t = Timers()
    release, fired = threading.Event(), threading.Event()
    blocked = t.after(0.0, lambda: release.wait(2))
    t.after(0.05, fired.set)
    assert fired.wait(1)
    release.set()
    t.cancel(blocked)


def test_keep_alive_extends_while_the_task_runs_and_no_thread_per_task():
    extended: list[int] = []
    before = threading.active_count()
    with KeepAlive(0.02, lambda: extended.append(1)):
        time.sleep(0.15)
    n = len(extended)
    time.sleep(0.06)
    assert n >= 2 and len(extended) == n
    quick = [KeepAlive(60, lambda: None) for _ in range(50)]
    for k in quick:
        k.__enter__()
    assert threading.active_count() <= before + 2  # the scheduler, maybe a finishing callback
    for k in quick:
        k.__exit__(None, None, None)


def test_many_cancelled_handles_are_compacted():
    t = Timers()
    for _ in range(500):
        t.cancel(t.after(100, lambda: None))
    assert len(t._heap) < 200


def test_a_callback_that_finds_no_thread_runs_a_little_later(monkeypatch):
    t = Timers()
    fired = threading.Event()
    real = threading.Thread.start
    failures = [1]

    def start(self):
        if self.name == "orbit-task-timer" and failures[0]:
            failures[0] -= 1
            raise RuntimeError("can't start new thread")
        return real(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    t.after(0.0, fired.set)
    assert fired.wait(2) and failures == [0]
