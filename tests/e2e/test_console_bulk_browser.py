"""Search and bulk actions in the web console (issue 31 §2, the console's part), in Chromium: the
list takes a filter text, a bulk action previews how many executions match before anything
happens, asks (the confirm button red only for a cancel), starts the batch and shows its progress;
a filter that would read the whole table is refused with its one line."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.console_browser import *  # noqa: F403  (the browser and page fixtures)
from tests.e2e.console_browser import shot
from tests.e2e.console_stack import Consoles, consoles

pytestmark = pytest.mark.e2e
RED = "rgb(214, 69, 69)"  # var(--bad) on a .modal button.danger


@pytest.fixture(scope="module")
def stack() -> Iterator[Consoles]:
    with consoles() as c:
        yield c


def test_a_filter_text_a_refusal_and_a_bulk_pause_with_its_preview(page: Page, stack: Consoles) -> None:
    rows = page.locator("#executions tbody tr[data-id]")
    page.goto(stack.ui.url + "#/executions")
    page.fill("input[name=where]", "status IN (COMPLETED, FAILED) AND id STARTS_WITH order-")
    page.click("#filters button[type=submit]")
    expect(rows).to_have_count(2)

    page.goto(stack.ui.url + "#/executions?where=" + "id%20STARTS_WITH%20order-")
    expect(page.locator("#refreshed")).to_contain_text("would read the whole table")
    page.click("#bulk-go")
    expect(page.locator("#bulk-refused")).to_contain_text("there is no index by id prefix")

    page.goto(stack.ui.url + "#/executions?status=RUNNING&workflow=order-fulfilment")
    expect(rows).to_have_count(3)
    page.select_option("#bulk-action", "pause")
    page.fill("#bulk-reason", "supplier outage")
    page.click("#bulk-go")
    expect(page.locator("#bulk-count")).to_have_text(
        'Pause: 3 execution(s) match workflow = "order-fulfilment" AND status = RUNNING')
    ok = page.locator("#modal-ok")
    assert ok.evaluate("b => getComputedStyle(b).backgroundColor") != RED  # a pause is undone by unpause
    shot(page, "bulk-preview")
    ok.click()
    expect(page.locator("#bulk-progress")).to_have_attribute("data-status", "COMPLETED", timeout=20000)
    expect(page.locator("#bulk-counts")).to_have_text("seen 3 · acted 3 · skipped 0 · failed 0")
    shot(page, "bulk-done")
    for key in ("waiting", "xss", "cancel"):
        assert stack.client.describe(stack.ids[key]).get("paused"), key

    page.select_option("#bulk-action", "cancel")
    page.click("#bulk-go")
    expect(page.locator("#bulk-count")).to_contain_text("Cancel: 3 execution(s)")
    assert ok.evaluate("b => getComputedStyle(b).backgroundColor") == RED
    page.click("#modal-cancel")  # nothing happens
    for key in ("waiting", "xss", "cancel"):
        assert stack.client.describe(stack.ids[key])["status"] == "RUNNING", key
