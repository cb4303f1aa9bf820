"""What a committed decision means for operations, computed from the state alone (pure).

`decision_metrics`: the per-workflow counters a decision adds (what the engine meters).
`retirement`: what an ended execution leaves behind that must expire with it (what the engine
hands to `HistoryStore.retire`).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from orbit.core.history.events import Recorded
from orbit.core.history.hook_tokens import identity
from orbit.core.history.state import FAILED, TERMINAL_WORKFLOW, TIMED_OUT, ExecutionState

_STEP_METRICS = MappingProxyType({"StepScheduled": "StepAttempts", "StepFailed": "StepFailures"})


def decision_metrics(state: ExecutionState, was: tuple[str, bool], events: list[Recorded]) -> list[str]:
    """Metric names, once per occurrence: the execution started or ended, step attempts and failures,
    the execution parked or un-parked.
    `was` is (status, created) before the decision."""
    out = []
    if state.created and not was[1]:
        out.append("ExecutionsStarted")
    if state.status != was[0] and state.status in TERMINAL_WORKFLOW:
        failed = state.status in (FAILED, TIMED_OUT)
        out.append("ExecutionsFailed" if failed else f"Executions{state.status.title()}")
    out += [_STEP_METRICS[r.event.type] for r in events if r.event.type in _STEP_METRICS]
    # Parked executions (a bug in the code, a build mismatch): counted once when they park (a
    # parked one re-records ExecutionParked at each retry: not counted again) and when they
    # come back, so ExecutionsParked - ExecutionsUnparked is how many wait for someone.
    parked = [r for r in events if r.event.type == "ExecutionParked"]
    if state.parked is not None and any(r.timestamp_ms == state.parked_since_ms for r in parked):
        out.append("ExecutionsParked")
    out += ["ExecutionsUnparked" for r in events if r.event.type == "ExecutionUnparked"]
    return out


@dataclass(frozen=True)
class Retirement:
    ended_at_ms: int
    hook_tokens: list[str]  # as stores take them: a token, or `sha256:<hex>` (hook_tokens.identity)
    dedupe_keys: list[str]  # worker dedupe records: each unit's key and `cancel#<token>` ones


def ended_at_ms(state: ExecutionState) -> int:
    """When an ended execution ended (its last update for one that recorded no finish time)."""
    return state.finished_at_ms or state.updated_at_ms


def retirement(state: ExecutionState) -> Retirement:
    # the token (older histories) or its hash, as the hook's lookup item is keyed
    tokens = [identity(h) for h in state.hooks.values() if h.get("token") or h.get("token_sha256")]
    dedupe = [u.idempotency_key for u in state.units.values() if u.idempotency_key]
    dedupe += [f"cancel#{t}" for u in state.units.values() for t in u.tokens]
    return Retirement(ended_at_ms(state), tokens, dedupe)
