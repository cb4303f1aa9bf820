"""Which top-level steps a round of the definition interpreter must look at (`orbit.runtime.dsl`)."""

from __future__ import annotations

from typing import Any

from orbit.core.history.state import TERMINAL_UNIT, ExecutionState


class Plan:
    """Which top-level steps a round must look at, kept between the rounds of one decision.

    A round looks at every step only the first time. After that it looks at the steps it began
    that have not ended (`watch`) and at the steps waiting on one that just ended (`waiting`):
    a chain of 12,000 compute steps then costs each round a few steps instead of 12,000, so a
    long decision is linear in its steps, not quadratic. A step is skipped only while a step it
    depends on is still not ended (statuses never go back from ended during a decision), so
    the commands are those a look at every step would give, in the same (file) order.
    """

    def __init__(self, defn: Any, state: ExecutionState) -> None:
        self.defn, self.state = defn, state
        self.order = {name: i for i, name in enumerate(defn.steps)}
        self.open: set[str] = set(defn.steps)
        self.watch: set[str] = set()
        self.waiting: dict[str, list[str]] = {}  # step -> steps blocked until it ends
        self.ended: set[str] = set()
        self.hooks: list[str] = defn.signal_names()
        self.handlers: Any = None  # the live on_signal instances (runtime.dsl.handlers), built on first use

    def candidates(self) -> list[str]:
        for name in list(self.watch):
            if self.state.status_of(name) in TERMINAL_UNIT:
                self.watch.discard(name)
                self.open.update(self.waiting.pop(name, ()))
            self.open.add(name)
        names = sorted(self.open, key=self.order.__getitem__)
        self.open = set()
        return names
