"""How fast the web console shows big things, in Debian's Chromium driven by Playwright.

    python benchmarks/bench_console.py [--elements 3333] [--executions 10000]

1. One execution with about 10,000 events (a `for` step of 3,333 elements, each scheduled,
   dispatched and succeeded, run for real through the handlers on moto in process): the time
   from navigation to the first screen of its page (header, step graph, the first 25 events of
   the history drawn; the rest of the page follows), against the target of 1 s, and to the
   timeline drawn (which reads the whole history once, then what is new).
2. 10,000 executions in the index (rows written with the store's own put_index): the time to
   the first page of the list, to each of the next pages, and the rows each page holds, so the
   list pages by cursor without loading the whole index. Counts by status are timed apart.

The console runs as `orbit ui` does (its server, the Client) against `orbit dev`'s server.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEFINITION: dict[str, Any] = {
    "orbit": 1, "name": "bench-console", "version": "1",
    "steps": {"each": {"for": "{% input.items %}", "concurrency": 500, "task": "bench.console.echo",
                       "input": {"v": "{% item %}"}}},
}


TARGET_MS = 1000  # the first screen of a 10,000-event execution (issue 12)
FIRST_EVENTS = 25  # history.js FIRST: the events the first screen asks for
NEW_FIRST_ROW = ("b => { const r = document.querySelector('#executions tbody tr[data-id]');"
                 " return r && r.dataset.id !== b; }")


def build(stack: Any, elements: int, executions: int) -> tuple[str, int]:
    from orbit.service.ports import IndexEntry
    from orbit.worker import task

    task("bench.console.echo")(lambda inp, ctx: {"v": inp["v"]})
    stack.register(DEFINITION)
    t0 = time.perf_counter()
    eid = stack.start("bench-console", {"items": list(range(elements))}, id="bench-console-big")
    desc = stack.run_until_done(eid, wall_timeout_s=3600)
    events = len(stack.history(eid))
    print(f"setup: {elements:,}-element execution {desc['status']} with {events:,} events "
          f"in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    base = stack.now_ms() - executions * 1000
    for i in range(executions):
        at = base + i * 1000
        stack.engine.store.put_index(IndexEntry(f"bench-list-{i:05d}", "bench-list", "1",
                                                "COMPLETED" if i % 10 else "FAILED", at, at))
    print(f"setup: {executions:,} index rows in {time.perf_counter() - t0:.1f} s")
    return eid, events


def measure(ui_url: str, eid: str, pages: int, executions: int) -> None:
    from playwright.sync_api import sync_playwright

    from tests.e2e.console_stack import chromium_path

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1360, "height": 1000})
        page.goto(ui_url + "#/workflows")  # warm: static files cached, as for a user's second page
        page.wait_for_selector("#workflows")
        first, timeline = [], []
        for _ in range(3):
            page.goto("about:blank")
            page.goto(ui_url + "#/execution/" + eid)
            page.wait_for_selector("#history tr.event")
            page.wait_for_selector("svg.step-graph g.node")
            # the app marks the moment its first screen is drawn (header, graph, first history page)
            first.append(page.evaluate("performance.getEntriesByName('orbit:first-screen')[0].startTime"))
            page.wait_for_selector("#timeline .vis-item", timeout=120_000)
            timeline.append(page.evaluate("performance.now()"))
        shown = page.locator("#history tr.event").count()
        median = statistics.median(first)
        verdict = "met" if median < TARGET_MS else "NOT met"
        print(f"execution page: first screen (header, actions, step graph, the first {FIRST_EVENTS} history "
              f"events; the rest of page 1 follows) in {median:.0f} ms (median of 3, first open "
              f"{first[0]:.0f} ms, range {min(first):.0f}-{max(first):.0f}): target < {TARGET_MS} ms "
              f"{verdict}; {shown} events drawn in all; "
              f"timeline drawn at {statistics.median(timeline):.0f} ms")

        page.goto("about:blank")
        page.goto(ui_url + "#/executions?workflow=bench-list")
        page.wait_for_selector("#executions tbody tr[data-id]")
        took = [page.evaluate("performance.now()")]
        rows = [page.locator("#executions tbody tr[data-id]").count()]
        for _ in range(pages):
            before = page.locator("#executions tbody tr[data-id]").first.get_attribute("data-id")
            t0 = time.perf_counter()
            page.click("#older")
            page.wait_for_function(NEW_FIRST_ROW, arg=before)
            took.append((time.perf_counter() - t0) * 1000)
            rows.append(page.locator("#executions tbody tr[data-id]").count())
        t0 = time.perf_counter()
        counts = page.evaluate("() => fetch('/console/api/counts?workflow=bench-list').then(r => r.json())")
        counted = (time.perf_counter() - t0) * 1000
        whole = "never the whole index: target met" if max(rows) <= 50 else "NOT paged: target not met"
        print(f"executions list of {executions:,}: first page in {took[0]:.0f} ms from navigation, "
              f"next {pages} pages {', '.join(f'{t:.0f}' for t in took[1:])} ms; "
              f"rows per page {rows} ({whole})")
        print(f"counts by status: {counts['counts']} in {counted:.0f} ms "
              f"(refreshed every 15 s, capped at {counts['cap']:,})")
        browser.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=3333)
    ap.add_argument("--executions", type=int, default=10_000)
    ap.add_argument("--pages", type=int, default=3)
    args = ap.parse_args()
    from orbit.client import Client
    from orbit.console.server import ConsoleServer, client_backend
    from orbit.local import LocalStack
    from orbit.local.devserver import DevServer

    with LocalStack(mode="inprocess") as stack:
        eid, _ = build(stack, args.elements, args.executions)
        dev = DevServer(stack, 0)
        threading.Thread(target=dev.serve_forever, daemon=True).start()
        client = Client(url=dev.url)
        ui = ConsoleServer(client_backend(client), port=0, target=dev.url).start()
        calls = {"describe": lambda: client.describe(eid),
                 "first history page": lambda: client.history_page(eid),
                 "pinned workflow": lambda: client.execution_workflow(eid)}
        parts = []
        for name, call in calls.items():
            t0 = time.perf_counter()
            size = len(json.dumps(call()))
            parts.append(f"{name} {(time.perf_counter() - t0) * 1000:.0f} ms ({size / 1024:.0f} KB)")
        print("API calls behind the first screen (orbit dev, moto in process): " + ", ".join(parts))
        try:
            measure(ui.url, eid, args.pages, args.executions)
        finally:
            ui.stop()
            dev.httpd.shutdown()


if __name__ == "__main__":
    main()
