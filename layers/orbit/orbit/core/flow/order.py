"""The waiting line of one concurrency counter: who is let in next.

Higher priority first (1 before 5). Within a priority, tenants (fairness keys) take turns in
weighted round-robin by stride scheduling: each tenant has a `pass` at each priority it waits at;
the lowest pass goes next and adds STRIDE / weight to it, so over any stretch a tenant of weight w
gets w shares of that priority's turns (its turns at another priority are counted there). A tenant that
starts waiting joins at the counter's virtual time (the pass of the last grant), so time spent
away earns no credit and one with 10,000 waiting items cannot hold back one with 3. Within a
tenant and priority: first in, first out (the store keeps that order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

STRIDE = 1_000_000


@dataclass
class Counter:
    """One concurrency counter as stored (see adapters: dynamodb/limits.py, memory_limits.py)."""

    scope: str
    name: str = ""
    key: str = ""
    limit: int = 0
    holders: set[str] = field(default_factory=set)
    granted: set[str] = field(default_factory=set)  # let in from the line; their ticket still kept
    waiting: dict[tuple[int, str], int] = field(default_factory=dict)  # (priority, tenant) -> count
    passes: dict[tuple[int, str], int] = field(default_factory=dict)  # (priority, tenant) -> pass
    weights: dict[str, int] = field(default_factory=dict)
    vt: int = 0  # the pass of the last grant

    @property
    def waiting_total(self) -> int:
        return sum(n for n in self.waiting.values() if n > 0)

    def free(self, limit: int | None = None) -> int:
        return max(0, (limit if limit is not None else self.limit) - len(self.holders))


def next_in_line(c: Counter, limit: int | None = None) -> tuple[int, str] | None:
    """(priority, tenant) of the next item to let in, or None (no room, or nobody waits)."""
    if c.free(limit) <= 0:
        return None
    lines = [(p, t) for (p, t), n in c.waiting.items() if n > 0]
    if not lines:
        return None
    top = min(p for p, _ in lines)
    tenants = sorted(t for p, t in lines if p == top)
    return top, min(tenants, key=lambda t: (c.passes.get((top, t), c.vt), t))


def after_grant(c: Counter, priority: int, tenant: str) -> tuple[int, int | None]:
    """(new vt, the tenant's new pass at `priority` or None when it has nobody left waiting there)
    after letting in one item of `tenant` at `priority`; the caller writes both with the grant. The
    virtual time is the pass of the grant, or, when the tenant leaves the line, the pass it leaves
    with. A pass per priority: a tenant let in at priority 1 has not used its turns at priority 3
    (one pass per tenant let another tenant in there more than once a turn: hypothesis,
    tests/unit/test_flow_properties.py)."""
    start = max(c.passes.get((priority, tenant), c.vt), c.vt)
    left = c.waiting.get((priority, tenant), 0) - 1
    weight = max(1, c.weights.get(tenant, 1))
    after = start + STRIDE // weight
    # A tenant that leaves the line moves the virtual time to the pass it would have had: joining
    # again at `vt`, it must not tie with (and, by its name, beat) a tenant that waited all along.
    # Left at `start`, a tenant whose items came one at a time was let in again and again while
    # another waited (hypothesis, tests/unit/test_flow_properties.py).
    return (start, after) if left > 0 else (after, None)
