"""A Lambda batch's held answers (worker/batching.py): a quick task's answer is its only record, so
holding is bounded by the grace period and ends once a task of the batch runs long."""

from __future__ import annotations

from orbit.worker.batching import Held


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_answers_are_held_until_drained() -> None:
    held = Held(Clock())
    assert held.add(({"id": "a"},)) and held.add(({"id": "b"},))
    assert held.drain() == [{"id": "a"}, {"id": "b"}] and held.drain() == []


def test_what_waited_longer_than_the_grace_leaves_when_the_next_task_starts() -> None:
    clock = Clock()
    held = Held(clock)
    held.add(({"id": "a"},))
    clock.now += 0.5
    held.add(({"id": "b"},))
    assert held.stale(1.0) == []  # the oldest waited 0.5 s
    clock.now += 0.6
    assert held.stale(1.0) == [{"id": "a"}, {"id": "b"}]  # the oldest waited 1.1 s
    held.add(({"id": "c"},))
    assert held.stale(1.0) == []  # the clock restarts with the next held answer


def test_once_a_task_ran_long_the_batch_holds_nothing_more() -> None:
    held = Held(Clock())
    held.add(({"id": "a"},))
    assert held.open() == [{"id": "a"}]
    assert not held.add(({"id": "b"},))  # the caller sends it at once
    assert held.drain() == [] and held.stale(0) == []
