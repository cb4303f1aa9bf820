"""Counters for the handlers' EMF metrics, gathered at the one place every decision passes: the commit.

`MeteredStore` wraps a HistoryStore: each successful commit is a decision, its
events tell how many steps were scheduled, succeeded or failed, and a
ConflictError is a lost race. Reading a stored commit back is the outbox at
work (a redelivered message re-sends its commit's effects): `OutboxReads`
counts those reads, `CommitLogScans` / `CommitLogCommitsRead` the look-backs
for a redelivery older than the state remembers and what they cost. Handlers
drain the counters into powertools Metrics after each invocation (`publish`).
Nothing here talks to AWS.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

from orbit.errors import ConflictError

_EVENT_METRICS = {"StepScheduled": "StepsScheduled", "StepSucceeded": "StepsSucceeded",
                  "StepFailed": "StepsFailed"}


class Meter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        # Per workflow (the engine's counters): the dimension is the workflow name only, so the
        # number of metric streams is bounded by the workflows deployed, never by executions.
        self._by_workflow: dict[tuple[str, str], list[float]] = {}

    def count_workflow(self, workflow: str, name: str, n: int = 1) -> None:
        with self._lock:
            values = self._by_workflow.setdefault((name, workflow), [0.0])
            values[0] += n

    def observe(self, workflow: str, name: str, value: float) -> None:
        with self._lock:
            self._by_workflow.setdefault((name, workflow), []).append(value)

    def drain_by_workflow(self) -> dict[tuple[str, str], list[float]]:
        """(metric, workflow) -> a count as [n], or every observed value."""
        with self._lock:
            out, self._by_workflow = self._by_workflow, {}
            return out

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def drain(self) -> dict[str, int]:
        with self._lock:
            out = dict(self._counts)
            self._counts.clear()
            return out


METER = Meter()


class MeteredStore:
    def __init__(self, store: Any, meter: Meter = METER) -> None:
        self._store = store
        self._meter = meter

    def commit(self, execution_id: str, commit: Any, expires_at_s: int | None = None,
               provisional: bool = False) -> None:
        try:
            self._store.commit(execution_id, commit, expires_at_s, provisional)
        except ConflictError:
            self._meter.count("Conflicts")
            raise
        self._meter.count("Decisions")
        for r in commit.events:
            name = _EVENT_METRICS.get(r.event.type)
            if name:
                self._meter.count(name)

    def read_commit(self, execution_id: str, first_seq: int) -> Any:
        self._meter.count("OutboxReads")
        return self._store.read_commit(execution_id, first_seq)

    def scan_commits(self, execution_id: str, newest_first: bool = True) -> Iterator[Any]:
        self._meter.count("CommitLogScans")
        for c in self._store.scan_commits(execution_id, newest_first):
            self._meter.count("CommitLogCommitsRead")
            yield c

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def publish(metrics: Any, meter: Meter = METER) -> None:
    """Add the counters gathered since the last call to a powertools `Metrics` (flushed by log_metrics)."""
    from aws_lambda_powertools.metrics import MetricUnit

    for name, value in meter.drain().items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    publish_by_workflow(meter.drain_by_workflow(), metrics.namespace)


def publish_by_workflow(values: dict[tuple[str, str], list[float]], namespace: str | None) -> None:
    """One EMF document per (metric, workflow), dimension `workflow` (powertools single_metric)."""
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    for (name, workflow), observed in sorted(values.items()):
        unit = MetricUnit.Milliseconds if name.endswith("Latency") else MetricUnit.Count
        with single_metric(name=name, unit=unit, value=observed[0], namespace=namespace,
                           default_dimensions={"workflow": workflow}) as metric:
            for extra in observed[1:]:
                metric.add_metric(name=name, unit=unit, value=extra)
