"""`orbit dev`'s invocation threads stay warm (orbit/local/dev_invocations.py).

A code workflow's paused instance goes on only on the thread that paused it; with a thread per
invocation every decision under `orbit dev` replayed from the start. The next invocation now runs
on the thread of its mapping that went idle last, as Lambda reuses a warm environment.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from orbit.local.dev_invocations import Invocations
from orbit.local.pump import PollResult


def poller(name: str = "Decider") -> Any:
    return SimpleNamespace(mapping=SimpleNamespace(function=SimpleNamespace(logical_id=name)))


def pool(cap: int = 4) -> tuple[Invocations, list[Any], threading.Semaphore]:
    ended: list[Any] = []
    signal = threading.Semaphore(0)

    def done(p: Any, result: PollResult) -> None:
        ended.append(result)
        signal.release()

    return Invocations(lambda p: cap, done), ended, signal


def test_one_invocation_after_another_runs_on_the_same_warm_thread() -> None:
    inv, ended, signal = pool()
    p = poller()
    seen: list[threading.Thread] = []
    for _ in range(5):
        assert inv.has_room(p)
        inv.start(p, lambda: (seen.append(threading.current_thread()), PollResult())[1])
        assert signal.acquire(timeout=5)
        assert inv.running() == 0  # told of the end once the thread is idle again
    assert len(ended) == 5
    assert len(set(seen)) == 1 and inv.threads(p) == 1
    assert seen[0] is not threading.current_thread()


def test_invocations_at_once_get_threads_of_their_own_up_to_the_cap() -> None:
    inv, ended, signal = pool(cap=3)
    p = poller()
    gate = threading.Event()
    seen: list[threading.Thread] = []

    def held() -> PollResult:
        seen.append(threading.current_thread())
        gate.wait(5)
        return PollResult()

    for _ in range(3):
        inv.start(p, held)
    assert not inv.has_room(p) and inv.running() == 3
    gate.set()
    for _ in range(3):
        assert signal.acquire(timeout=5)
    assert len(set(seen)) == 3 and inv.threads(p) == 3
    inv.start(p, held)  # the next goes to the thread that went idle last, not a fourth
    assert signal.acquire(timeout=5)
    assert inv.threads(p) == 3 and seen[-1] in seen[:3]


def test_an_invocation_that_raises_is_told_and_its_thread_serves_the_next() -> None:
    inv, ended, signal = pool()
    p = poller()
    seen: list[threading.Thread] = []

    def boom() -> PollResult:
        seen.append(threading.current_thread())
        raise RuntimeError("the handler's process died")

    inv.start(p, boom)
    assert signal.acquire(timeout=5)
    inv.start(p, lambda: (seen.append(threading.current_thread()), PollResult())[1])
    assert signal.acquire(timeout=5)
    assert len(ended) == 2 and inv.running() == 0 and seen[0] is seen[1]


def test_each_mapping_has_threads_of_its_own() -> None:
    inv, _, signal = pool()
    a, b = poller("Decider"), poller("Worker")
    names: list[str] = []
    for p in (a, b):
        inv.start(p, lambda: (names.append(threading.current_thread().name), PollResult())[1])
        assert signal.acquire(timeout=5)
    assert inv.threads(a) == inv.threads(b) == 1
    assert names[0].startswith("orbit-invoke-Decider") and names[1].startswith("orbit-invoke-Worker")
