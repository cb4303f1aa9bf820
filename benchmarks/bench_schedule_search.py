"""The worst a question about a schedule costs (docs/decisions/sec-values-schedules-bounded.md).

Each spec below hides its occurrences behind exclusions; the search for the next five occurrences
runs on one budget of MAX_STEPS candidates. Prints process CPU and steps taken. A few seconds.

    python benchmarks/bench_schedule_search.py
"""

from __future__ import annotations

import time

from orbit.core.schedule import state as st
from orbit.core.schedule.config import parse_config
from orbit.core.schedule.spec import MAX_STEPS, Budget, SearchExhausted, parse_spec
from orbit.core.schedule.times import parse_time

HIDE_ALL = (["0-58 * * * *", "59 * * * *"] + [f"{i} 3 * * *" for i in range(58)]
            + [f"{i} 4 * * *" for i in range(40)])
CASES = {
    "every 1s, 100 minute-level cron exclusions hiding everything": {"every": "1s", "exclude": HIDE_ALL},
    "cron * * * * * in Pacific/Chatham, the same exclusions": {
        "cron": "* * * * *", "timezone": "Pacific/Chatham", "exclude": HIDE_ALL},
    "cron * * * * * in Europe/Paris, hour blocks hiding everything": {
        "cron": "* * * * *", "timezone": "Europe/Paris", "exclude": ["* 0-22 * * *", "* 23 * * *"]},
    "every 1s, 31 excluded dates": {"every": "1s", "exclude": [f"2027-01-{d:02d}" for d in range(1, 32)]},
}


def main() -> None:
    now = parse_time("2026-12-03T11:00:00Z")
    for name, raw in CASES.items():
        spec, budget = parse_spec(raw), Budget()
        t = time.process_time()
        try:
            got = f"{len(spec.between(now, 2**62, 5, budget))} occurrences"
        except SearchExhausted:
            got = "SearchExhausted"
        print(f"{name}: {time.process_time() - t:.3f} s CPU, {MAX_STEPS - budget.left} steps, {got}")
    inside = parse_spec({"every": "1s", "exclude": ["0 0 29 2 *"] * 6})
    budget = Budget()
    inside.between(parse_time("2028-02-29T00:00:00Z") - 1, 2**62, 5, budget)
    print(f"issue 25's every 1s + six '0 0 29 2 *', asked inside the excluded minute: "
          f"{MAX_STEPS - budget.left} steps")
    for exclude in ([], ["0-58 * * * *", "59 0-22 * * *"], ["0 0 29 2 *"] * 100):
        c = parse_config({"id": "s", "workflow": "wf", "every": "1s", "exclude": exclude})
        s = st.new_state(c, parse_time("2026-12-31T23:00:00Z"))
        t = time.process_time()
        st.tick(s, parse_time("2036-12-31T23:00:00Z"), set())
        print(f"a fire after ten years down, every 1s, {len(exclude)} exclusions: "
              f"{time.process_time() - t:.3f} s CPU")


if __name__ == "__main__":
    main()
