"""The console's Limits page (docs/flow-control.md, "What you see"), in Chromium, against `orbit
dev`'s server on an in-process local stack: each limit's row shows the holders and waiting counts
the API reports, and follows them as the line moves. Screenshots go to test-artifacts/console/."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from orbit.client import Client
from orbit.console.server import ConsoleServer, client_backend
from orbit.local import LocalStack
from orbit.local.devserver import DevServer
from playwright.sync_api import Page, expect

from tests.e2e.console_browser import *  # noqa: F403  (the browser and page fixtures)
from tests.e2e.console_browser import shot

pytestmark = pytest.mark.e2e
DOOR = {"orbit": 1, "name": "consolelim-door", "version": "1",
        "concurrency": {"limit": 1, "key": "{% input.customer %}"},
        "signals": {"go": {}}, "steps": {"hold": {"wait_for": "go"}}}
PARTNER = {"orbit": 1, "name": "consolelim-partner", "version": "1",
           "tasks": {"consolelim.call": {"concurrency": {"limit": 4, "key": "{% input.partner %}"}}},
           "steps": {"call": {"task": "consolelim.call"}}}
RATED = {"orbit": 1, "name": "consolelim-rated", "version": "1",
         "rate": {"limit": 2, "period": "1m", "burst": 3}, "steps": {"hold": {"wait_for": "go"}},
         "signals": {"go": {}}}


@dataclass
class Lim:
    stack: LocalStack
    dev: DevServer
    ui: ConsoleServer
    client: Client

    def wait(self, check: Any, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError("timed out")
            time.sleep(0.1)

    def row(self, limit: str, key: str) -> dict[str, Any]:
        return next(r for r in self.client.limits()["limits"] if (r["limit"], r["key"]) == (limit, key))


@pytest.fixture(scope="module")
def lim() -> Iterator[Lim]:
    with LocalStack(mode="inprocess") as stack:
        stack.register(DOOR)
        stack.register(RATED)
        stack.register(PARTNER)  # a task limit every workflow's attempts count under
        dev = DevServer(stack, 0)
        thread = threading.Thread(target=dev.serve_forever, daemon=True)
        thread.start()
        client = Client(url=dev.url)
        ui = ConsoleServer(client_backend(client), port=0, target=dev.url).start()
        try:
            yield Lim(stack, dev, ui, client)
        finally:
            ui.stop()
            dev.httpd.shutdown()
            thread.join(timeout=10)


def cells(page: Page, limit: str, key: str) -> list[str]:
    row = page.locator(f'#limits tr[data-limit="{limit}"][data-key="{key}"] td')
    return [t.strip() for t in row.all_inner_texts()]


def test_the_limits_page_shows_the_holders_and_the_waiting_counts(page: Page, lim: Lim) -> None:
    page.goto(lim.ui.url + "#/limits")
    expect(page.locator("main")).to_contain_text("No limit has been used yet")
    declared = page.locator('#shared tr[data-limit="task:consolelim.call"] td')
    expect(declared).to_have_text(["task:consolelim.call",
                                   'concurrency {"limit":4,"key":"{% input.partner %}"}',
                                   "consolelim-partner v1"])
    for i in range(3):
        lim.client.start("consolelim-door", {"customer": "acme"}, id=f"lim-acme-{i}")
    lim.client.start("consolelim-door", {"customer": "zeta"}, id="lim-zeta-0")
    lim.client.start("consolelim-rated", {}, id="lim-rated-0")
    api = lim.row("workflow:consolelim-door", "acme")
    assert (api["held"], api["waiting"], api["holders"]) == (1, 2, ["x:lim-acme-0"])
    page.goto(lim.ui.url + "#/workflows")
    page.goto(lim.ui.url + "#/limits")
    acme = page.locator('#limits tr[data-limit="workflow:consolelim-door"][data-key="acme"]')
    expect(acme).to_be_visible(timeout=15000)
    assert cells(page, "workflow:consolelim-door", "acme") == [
        "workflow:consolelim-door", "acme", "1 / 1", "2", "x:lim-acme-0"]
    assert cells(page, "workflow:consolelim-door", "zeta") == [
        "workflow:consolelim-door", "zeta", "1 / 1", "0", "x:lim-zeta-0"]
    rate = page.locator("#rates tr", has_text="workflow:consolelim-rated")
    expect(rate).to_contain_text("2 per")
    expect(rate).to_contain_text("burst 3")
    shot(page, "limits-two-waiting")

    lim.client.signal("lim-acme-0", "go", {})  # the holder ends: the first in line takes its slot
    lim.wait(lambda: lim.row("workflow:consolelim-door", "acme")["holders"] == ["x:lim-acme-1"])
    # the page refreshes itself every 5 s: the row follows the API, holder and count
    expect(acme.locator("td").nth(4)).to_have_text("x:lim-acme-1", timeout=15000)
    expect(acme.locator("td").nth(3)).to_have_text("1")
    assert cells(page, "workflow:consolelim-door", "acme")[2:] == ["1 / 1", "1", "x:lim-acme-1"]
    shot(page, "limits-one-waiting")

    for eid in ("lim-acme-1", "lim-acme-2", "lim-zeta-0"):
        lim.wait(lambda e=eid: lim.client.describe(e)["status"] == "RUNNING")
        lim.client.signal(eid, "go", {})
    lim.wait(lambda: lim.row("workflow:consolelim-door", "acme")["held"] == 0)
    expect(acme.locator("td").nth(2)).to_have_text("0 / 1", timeout=15000)
    assert cells(page, "workflow:consolelim-door", "acme")[2:] == ["0 / 1", "0", "-"]
    assert cells(page, "workflow:consolelim-door", "zeta")[2:] == ["0 / 1", "0", "-"]
