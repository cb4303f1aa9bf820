"""How late timers and schedule fires land, before and after timers on the second (issue 30 §2).

One run, two local stacks on the virtual clock (the real handlers on moto, the timers function on its
`rate(1 minute)` tick, EventBridge Scheduler modelled with AWS's 60-second invocation window):

- before: `ORBIT_TIMER_LEAD_S=0`, today's sweep: a table timer (> 15 min) fires at the first tick
  after its time (plus the sweep's 1 s skew); a schedule's one-time AWS schedule is armed at its
  occurrence and lands somewhere in that minute;
- after: the default 900 s lead: each tick hands the table timers due within 15 minutes to SQS
  delayed to their second; the AWS schedule is armed a minute early and the decider delays the
  fire to its second (docs/decisions/timers-on-the-second.md).

Timers: `--timers` executions sleeping `until` a time drawn log-uniformly from 5 s to 6 h (seeded);
lateness = TimerFired's time - the timer's fire time. Schedules: every 7 minutes, offset 13 s, for
`--hours`; lateness = the run's first event - its occurrence. Then what the sweep costs per timer
handed over (requests counted by botocore hooks, priced with bench_cost's list prices) and per
month at 100,000 pending timers.

    python benchmarks/bench_timers.py [--timers 60] [--hours 2] [--seed 7]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks")]
os.environ.setdefault("ORBIT_LOG_LEVEL", "ERROR")

from bench_cost import PRICE  # noqa: E402
from cost_meter import Meter  # noqa: E402

NAP = {"orbit": 1, "name": "bench-nap", "version": "1",
       "steps": {"nap": {"sleep": {"until": "{% input.at %}"}}}}
QUICK = {"orbit": 1, "name": "bench-tick", "version": "1", "steps": {"done": {"compute": "{% input %}"}}}
MONTH_S = 30 * 86_400
TICKS = MONTH_S // 60  # the timers function's invocations a month


def pct(values: list[int], p: float) -> int:
    s = sorted(values)
    return s[min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1)]


def run(lead_s: int, n: int, hours: float, seed: int) -> dict[str, Any]:
    import boto3
    from orbit.core.schedule.times import parse_time
    from orbit.local import LocalStack, clock

    # (bench_cost's import set ORBIT_TIMERS=table)
    os.environ.update({"ORBIT_TIMERS": "sqs-delay", "ORBIT_TIMER_LEAD_S": str(lead_s)})
    out: dict[str, Any] = {}
    with LocalStack(mode="inprocess") as stack:
        assert stack.services.settings.lead_ms == lead_s * 1000
        stack.register(NAP)
        stack.register(QUICK)
        svc = stack.services
        meter = Meter(boto3.client("dynamodb", region_name="us-east-1"), svc.settings.table)
        sweep: Counter[str] = Counter()
        ticks = [0]
        sched = stack.cloud.scheduler
        assert sched is not None

        def counted(handler: Any) -> Any:
            def call(event: Any, context: Any) -> Any:
                # the timer sweep's own requests (the same tick also runs the retention sweeper)
                before = Counter({k: v for k, v in meter.requests.items() if _timer_op(k)})
                wru, rru = Counter(meter.wru_by), Counter(meter.rru_by)
                try:
                    return handler(event, context)
                finally:
                    ticks[0] += 1
                    sweep.update(Counter({k: v for k, v in meter.requests.items() if _timer_op(k)}) - before)
                    sweep["wru"] += int(sum((meter.wru_by[k] - wru[k]) * 1000 for k in ("timer", "timerptr")))
                    sweep["rru"] += int((meter.rru_by["timer"] - rru["timer"]) * 1000)
            return call

        sched.rules = [(r, counted(h)) for r, h in sched.rules]
        for client in (svc.dynamodb, svc.sqs):
            meter.attach(client)
        rng = random.Random(seed)
        ids = []
        for i in range(n):
            length = int(math.exp(rng.uniform(math.log(5_000), math.log(6 * 3_600_000))))
            ids.append(stack.start("bench-nap", {"at": clock.now_ms() + length}, id=f"nap-{i}"))
        out["item_bytes"] = timer_item_bytes(meter.raw, svc.settings.table, svc.settings.timer_shards)
        stack.cloud.run_until_idle(auto_advance=True, wall_timeout_s=600)
        late, long_late = [], []
        for eid in ids:
            h = stack.history(eid)
            started = next(e for e in h if e["type"] == "TimerStarted")
            fired = next(e for e in h if e["type"] == "TimerFired")
            ms = int(fired["timestamp_ms"]) - int(started["fire_at_ms"])
            late.append(ms)
            if int(started["fire_at_ms"]) - int(started["timestamp_ms"]) > 900_000:
                long_late.append(ms)
        out["timers"], out["long timers"] = late, long_late
        handed = sweep["sqs:SendMessage"]
        out["sweep"] = dict(sweep)
        out["handed"] = handed
        out["ticks"] = ticks[0]
        for client in (svc.dynamodb, svc.sqs):
            meter.detach(client)

        at = stack.cloud.at_schedules
        assert at is not None
        at.precision_ms = 60_000
        now = clock.now_ms()
        clock.advance_ms(3_600_000 - now % 3_600_000 + 17_000)
        stack.create_schedule("odd7", "bench-tick", {"n": 1}, every="7m", offset="13s", catchup_window="1h")
        stack.advance(hours * 3600)
        runs = [e["execution_id"] for e in stack.list(limit=500) if e["execution_id"].startswith("odd7:")]
        out["schedules"] = [int(stack.history(r)[0]["timestamp_ms"]) - parse_time(r.split(":", 1)[1])
                            for r in runs]
    return out


def _timer_op(key: str) -> bool:
    return key == "sqs:SendMessage" or key.split(" ")[-1] in ("timer", "timerptr")


def timer_item_bytes(raw: Any, table: str, shards: int) -> float:
    """The mean size of the armed timer items (what a sweep's Query returns), measured."""
    from cost_meter import item_size

    sizes = [item_size(i) for k in range(shards)
             for i in raw.query(TableName=table, KeyConditionExpression="pk = :p",
                                ExpressionAttributeValues={":p": {"S": f"TIMER#{k}"}})["Items"]]
    return sum(sizes) / max(1, len(sizes))


def row(name: str, values: list[int]) -> str:
    if not values:
        return f"| {name} | 0 | - | - | - |"
    return (f"| {name} | {len(values)} | {pct(values, 50) / 1000:.3f} | {pct(values, 99) / 1000:.3f} | "
            f"{max(values) / 1000:.3f} |")


def cost_table(after: dict[str, Any], shards: int = 4) -> list[str]:
    """$/month of the sweep at 100,000 pending timers, for three mean waits (fire rate = 100,000 /
    mean wait). Reads: each tick one eventually consistent Query per shard, 0.5 RRU per 4 KB of the
    items it returns (those handed over: the due-soon range only); writes and sends per timer as
    measured (the same before and after: the lead changes when, not how often)."""
    s, handed = after["sweep"], max(1, after["handed"])
    per_timer_wru = s["wru"] / 1000 / handed
    lines = ["| mean wait of a timer | fires / month | sweep reads (RRU) | sweep deletes (WRU) | "
             "SQS sends | $ / month |", "|---|---|---|---|---|---|"]
    for label, wait_s in (("1 hour", 3_600), ("1 day", 86_400), ("7 days", 7 * 86_400)):
        fires = 100_000 * MONTH_S / wait_s
        per_shard_tick = fires / TICKS / shards * after["item_bytes"]
        rru = TICKS * shards * 0.5 * max(1, math.ceil(per_shard_tick / 4096))
        wru = fires * per_timer_wru
        sends = fires * s.get("sqs:SendMessage", 0) / handed
        dollars = (rru * PRICE["rru"] + wru * PRICE["wru"] + sends * PRICE["sqs"]) / 1e6
        lines.append(f"| {label} | {fires:,.0f} | {rru:,.0f} | {wru:,.0f} | {sends:,.0f} | {dollars:,.2f} |")
    return lines


def main(argv: list[str]) -> int:
    import logging

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timers", type=int, default=60)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    results = {name: run(lead, args.timers, args.hours, args.seed)
               for name, lead in (("before", 0), ("after", 900))}
    print(f"Lateness (s), {args.timers} timers of 5 s to 6 h (seed {args.seed}); schedules every 7 min "
          f"(offset 13 s) for {args.hours:g} h, Scheduler's 60 s window modelled\n")
    print("| what | n | p50 | p99 | max |\n|---|---|---|---|---|")
    for name, r in results.items():
        print(row(f"timers, all ({name})", r["timers"]))
        print(row(f"timers > 15 min ({name})", r["long timers"]))
        print(row(f"schedule fires ({name})", r["schedules"]))
    for name, r in results.items():
        s = r["sweep"]
        reqs = {k: v for k, v in s.items() if k not in ("wru", "rru")}
        print(f"\nsweep ({name}): {r['ticks']} ticks, {r['handed']} timers handed over; requests {reqs}; "
              f"{s['rru'] / 1000:.1f} RRU, {s['wru'] / 1000:.1f} WRU; timer items {r['item_bytes']:.0f} B")
    print("\nThe sweep at 100,000 pending timers (after; before makes the same requests, later), "
          f"list prices: RRU ${PRICE['rru']}/M, WRU ${PRICE['wru']}/M, SQS ${PRICE['sqs']}/M\n")
    print("\n".join(cost_table(results["after"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
