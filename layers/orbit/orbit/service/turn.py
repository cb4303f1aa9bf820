"""One pass of the decision pipeline for one execution (`Engine._pipeline`), handed from stage to stage
as an argument, never kept on the thread (docs/decisions/pipeline-one-decision-pipeline.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from orbit.core.history.effects import DispatchTask


@dataclass
class Turn:
    """One pass of the decision pipeline for one execution, handed from stage to stage (no state
    on the thread): `Engine._traced` makes one per inbound group, the API's decisions a blank one."""

    drives: bool = False  # the attempts this pass schedules may run in this process (a decider's pass)
    taking: bool = False  # the decision takes hand-over wakes only (their check is `take_over`'s)
    trace: str | None = None  # the trace header the messages it sends carry
    pending: list[DispatchTask] = field(default_factory=list)  # attempts to run after the commit
    recovered: bool = False  # `Engine.recover` ran for this pass already
    recovered_since: int | None = None  # ... from the commits since this time (None: the newest only)
    resent: set[int] = field(default_factory=set)  # first seqs of the commits it re-sent

    def take_pending(self) -> list[DispatchTask]:
        pending, self.pending = self.pending, []
        return pending

    def recovers(self, since_ms: int | None) -> None:
        self.recovered = True
        if since_ms is not None:
            known = self.recovered_since
            self.recovered_since = since_ms if known is None else min(known, since_ms)

    def recovery_due(self, since_ms: int | None) -> bool:
        """Must a redelivery that may have left commits unsent since `since_ms` recover again? Yes
        unless this pass recovered from as far back already: a batch that holds a handled message
        (its commit's time) and an older redelivered one (its send time) recovers from the older
        (chaos seed 9574: the older invocation's chain commit was never dispatched)."""
        if not self.recovered:
            return True
        return since_ms is not None and (self.recovered_since is None or since_ms < self.recovered_since)
