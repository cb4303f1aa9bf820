"""The parsed form of a definition: frozen data the decider reads.

Every value here is already checked and normalised (durations in ms, retry
merged over ``defaults.retry``), so the decider never re-validates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from orbit.core.definition.task_contracts import TaskContracts

StepKind = Literal["task", "workflow", "sleep", "wait_for", "http", "compute"]
STEP_KINDS: tuple[str, ...] = ("task", "workflow", "sleep", "wait_for", "http", "compute")
COMPENSATE_KINDS: tuple[str, ...] = ("task", "http", "workflow")


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` counts the first attempt; backoff before attempt n+1 is
    ``backoff_ms * multiplier**(n-1)`` capped by ``max_backoff_ms``."""

    max_attempts: int = 1
    backoff_ms: int = 1000
    multiplier: float = 2.0
    max_backoff_ms: int | None = None
    jitter: Literal["none", "full"] = "none"
    non_retryable: tuple[str, ...] = ()
    # Codes retried even though the error says it is not retryable (OUTPUT_CONTRACT_VIOLATION, ...)
    retry_on: tuple[str, ...] = ()

    def delay_ms(self, failed_attempt: int) -> int:
        """Delay (before jitter) after attempt number ``failed_attempt`` (1-based) failed."""
        delay = self.backoff_ms * (self.multiplier ** max(failed_attempt - 1, 0))
        if self.max_backoff_ms is not None:
            delay = min(delay, self.max_backoff_ms)
        return int(delay)


@dataclass(frozen=True)
class Signal:
    schema: Any = None  # JSON Schema (dict or bool); None means any payload


@dataclass(frozen=True)
class Step:
    name: str
    kind: StepKind
    task: str | None = None
    queue: str | None = None
    workflow: str | None = None
    sleep_ms: int | None = None
    sleep_until: str | None = None  # a "{% expr %}" template giving an ISO time or epoch ms
    wait_for: str | None = None
    http: dict[str, Any] | None = None  # template: method, url, headers, query, body, timeout
    compute: Any = None  # template
    input: Any = None  # template
    after: tuple[str, ...] = ()
    depends_on: frozenset[str] = frozenset()
    when: Any = None  # template (usually "{% expr %}"); None means always
    for_each: Any = None  # template giving a list; None means not a fan-out
    concurrency: int | None = None  # None: no limit
    tolerated_failures: int = 0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_ms: int | None = None
    queue_timeout_ms: int | None = None
    heartbeat_timeout_ms: int | None = None  # task steps only (extension)
    compensate: Step | None = None
    on_failure: Literal["fail", "continue"] = "fail"
    inline: str | None = None  # task steps: "at_least_once" | "at_most_once" (docs/inline-steps.md)
    on_missing_worker: str | None = None  # task steps: "fail" fails at once when no worker serves the task
    flow: Any = None  # task steps: {key, priority}, constants or templates (docs/flow-control.md)


@dataclass(frozen=True)
class Handler:
    """`on_signal.NAME`: a small step graph run once per arrival of signal NAME (its own
    instance, unit `on_signal:NAME@SEQ`); at most `concurrency` instances of NAME run at once."""

    name: str
    steps: dict[str, Step]  # in file order; names are local to the handler
    output: Any = None  # template; None: the map of the handler's step outputs
    concurrency: int = 1


def compiled_contracts(tasks: dict[str, Any]) -> TaskContracts | None:
    """`TaskContracts` for a `tasks` mapping, or None (without importing jsonschema) when empty."""
    if not tasks:
        return None
    from orbit.core.definition.task_contracts import TaskContracts

    return TaskContracts.of(tasks)


@dataclass(frozen=True)
class Definition:
    name: str
    version: str
    timeout_ms: int | None
    input_schema: Any
    output: Any
    output_schema: Any
    signals: dict[str, Signal]
    steps: dict[str, Step]  # in file order
    defaults: dict[str, Any]
    hash: str
    raw: dict[str, Any] = field(repr=False, compare=False)
    retention_ms: int | None = None  # how long an ended execution's data is kept; None: the stack's
    attributes: dict[str, Any] | None = None  # search attributes: name -> expression (or constant)
    handlers: dict[str, Handler] = field(default_factory=dict)  # `on_signal`, by signal name
    # `tasks:` contracts, task name -> {input, output} JSON Schemas (the decider checks them)
    tasks: dict[str, Any] = field(default_factory=dict, compare=False)

    @cached_property
    def task_contracts(self) -> TaskContracts | None:
        """The compiled `tasks:` contracts (None without any): built once per definition."""
        return compiled_contracts(self.tasks)

    @cached_property
    def flow(self) -> Any:
        """The flow-control declarations (orbit.core.flow.spec.FlowSpec): parsed once per definition."""
        from orbit.core.flow.spec import parse_flow

        return parse_flow(self.raw, self.raw.get("tasks"), self.raw.get("queues"))[0]

    def signal_names(self) -> list[str]:
        """Every signal the workflow accepts: declared, waited for by a step, or handled."""
        names = list(self.signals)
        names += [st.wait_for for st in self.steps.values() if st.kind == "wait_for" and st.wait_for]
        names += list(self.handlers)
        return list(dict.fromkeys(names))
