"""The compact table of bench_cost.py: one measured run per workflow length K, and what they imply.

Each row is a full run (N workflows of K steps through the handlers). The cost of
one execution is modelled as `a + b*K`: `b` is what every step costs however long
the workflow (its commit, its dispatch and result messages, the decider's share),
`a` what an execution costs once (the start's commit and pre-read, the index row
written at the start and at the end, the start message). Both are fitted by least
squares to the measured rows, never assumed, and the largest deviation of a row
from the fit is printed so a poor fit shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    """What one run measured, as totals over the run (orchestration and dedupe records apart)."""

    workflows: int
    steps_each: int
    requests: float  # AWS requests by the handlers + the mapping's receive/delete, no dedupe records
    wru: float
    rru: float
    dollars: float  # orchestration (decider, queues, table) without the dedupe records
    dedupe_requests: float
    dedupe_wru: float
    dedupe_rru: float
    dedupe_dollars: float

    @property
    def steps(self) -> int:
        return self.workflows * self.steps_each


METRICS = ("requests", "wru", "rru", "dollars", "with_dedupe")


def value(run: Run, metric: str) -> float:
    """A run's total for `metric`; `with_dedupe` adds the dedupe records' dollars."""
    if metric == "with_dedupe":
        return run.dollars + run.dedupe_dollars
    return float(getattr(run, metric))


def fit(runs: list[Run], metric: str) -> tuple[float, float, float]:
    """Least squares of per-execution totals on K: (per execution a, per step b, largest deviation %)."""
    xs = [float(r.steps_each) for r in runs]
    ys = [value(r, metric) / r.workflows for r in runs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    a = my - b * mx
    worst = max((abs(a + b * x - y) / y if y else 0.0) for x, y in zip(xs, ys, strict=True))
    return a, b, worst * 100


def print_table(runs: list[Run], target: float, sfn: float, dedupe: bool) -> None:
    runs = sorted(runs, key=lambda r: r.steps_each)
    n = runs[0].workflows
    print(
        f"\n== per step over workflow length K ({n} workflows each; orchestration = decider, queues, "
        f"table; '+' = the worker SDK's dedupe records{'' if dedupe else ' (off: --no-dedupe)'}; "
        f"SFN = Step Functions Standard ${sfn:.0f} per million steps)"
    )
    print(
        f"  {'K':>3s} {'requests/step':>14s} {'WRU/step':>12s} {'RRU/step':>12s} "
        f"{'$/M steps w/o dedupe':>21s} {'$/M with dedupe':>16s} {'with/SFN':>10s}"
    )
    for r in runs:
        s = r.steps
        without, with_ = r.dollars / s * 1e6, (r.dollars + r.dedupe_dollars) / s * 1e6
        print(
            f"  {r.steps_each:3d} {r.requests / s:7.2f}+{r.dedupe_requests / s:<6.2f}"
            f" {r.wru / s:5.2f}+{r.dedupe_wru / s:<6.2f} {r.rru / s:5.2f}+{r.dedupe_rru / s:<6.2f}"
            f" {without:13.2f} {_mark(without, target):>7s} {with_:8.2f} {_mark(with_, target):>7s}"
            f" {with_ / sfn:9.0%}"
        )
    if len(runs) < 2:
        print("  (one row: no per-step floor without at least two workflow lengths)")
        return
    fits = {m: fit(runs, m) for m in METRICS}
    worst = max(f[2] for f in fits.values())
    print(
        f"fixed per-step floor (cost as K grows) and per-execution overhead, fitted as a + b*K per "
        f"execution over these rows (largest deviation of a row from the fit: {worst:.1f}%):"
    )
    units = {"requests": "requests", "wru": "WRU", "rru": "RRU"}
    for m, label in units.items():
        a, b, _ = fits[m]
        da, db, _ = fit(runs, "dedupe_" + m) if dedupe else (0.0, 0.0, 0.0)
        print(f"  {label:8s} per step {b:5.2f} (+{db:.2f} dedupe)   per execution {a:5.2f} (+{da:.2f})")
    dollars = [("dollars", "without the dedupe records")]
    if dedupe:
        dollars.append(("with_dedupe", "with the dedupe records"))
    for m, label in dollars:
        a, b, _ = fits[m]
        print(
            f"  $ {label:27s} floor ${b * 1e6:.2f} per million steps, overhead ${a * 1e6:.2f} per million "
            f"executions: {_verdict(a * 1e6, b * 1e6, target)}"
        )


def _mark(dollars: float, target: float) -> str:
    return "meets" if dollars <= target else "misses"


def _verdict(a: float, b: float, target: float) -> str:
    """Where the fitted curve b + a/K crosses the target, in words (computed from the fit)."""
    if a <= 0 and b <= target:
        return f"meets the ${target:.2f} target at every length"
    if b >= target:
        return f"misses the ${target:.2f} target at every length (the floor alone is not below it)"
    return f"meets the ${target:.2f} target from K = {max(1, math.ceil(a / (target - b)))} steps (fit)"
