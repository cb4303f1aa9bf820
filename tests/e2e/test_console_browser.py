"""The web console in a real browser (Debian's Chromium driven by Playwright), served by `orbit ui`'s
server against `orbit dev` on a running local stack. Screenshots of each view go to
test-artifacts/console/."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.console_browser import *  # noqa: F403  (the browser and page fixtures)
from tests.e2e.console_browser import shot
from tests.e2e.console_stack import XSS, Consoles, consoles

pytestmark = pytest.mark.e2e
GREEN, RED = "rgb(220, 252, 231)", "rgb(254, 226, 226)"
AMBER, GREY = "rgb(254, 243, 199)", "rgb(243, 244, 246)"


@pytest.fixture(scope="module")
def stack() -> Iterator[Consoles]:
    with consoles() as c:
        yield c


def open_execution(page: Page, stack: Consoles, key: str) -> None:
    page.goto(stack.ui.url + "#/execution/" + stack.ids[key])
    expect(page.locator("#timeline .vis-item").first).to_be_visible(timeout=15000)


def node_fill(page: Page, step: str) -> str:
    rect = page.locator(f'svg.step-graph g.node[data-step="{step}"] > rect:not(.stack)')
    return str(rect.evaluate("r => getComputedStyle(r).fill"))


def test_list_counts_filters_and_pages(page: Page, stack: Consoles) -> None:
    page.goto(stack.ui.url)
    rows = page.locator("#executions tbody tr[data-id]")
    expect(rows).to_have_count(6)
    expect(page.locator('.count[data-status="FAILED"] .n')).to_have_text("1")
    expect(page.locator('.count[data-status="RUNNING"] .n')).to_have_text("3")
    shot(page, "executions")

    page.select_option("select[name=status]", "FAILED")
    page.click("#filters button[type=submit]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", "order-declined")

    page.goto(stack.ui.url + "#/executions")
    page.fill("input[name=id_prefix]", "order-w")
    page.fill("input[name=workflow]", "order-fulfilment")
    page.click("#filters button[type=submit]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-id", "order-waiting")

    page.goto(stack.ui.url + "#/executions")
    page.fill("input[name=before]", "2001-01-01T00:00")
    page.click("#filters button[type=submit]")
    expect(page.locator("#executions")).to_contain_text("No executions match.")

    page.goto(stack.ui.url + "#/executions?started_after=1")
    expect(rows).to_have_count(6)


def test_cursor_pages(page: Page, stack: Consoles, monkeypatch: pytest.MonkeyPatch) -> None:
    page.goto(stack.ui.url + "#/executions?id_prefix=order-")
    expect(page.locator("#executions tbody tr[data-id]")).to_have_count(5)
    seen = []
    # pages of 50 hold all five: walk pages of two instead, through the API the list view calls
    cursor = ""
    for _ in range(5):
        url = "/console/api/executions?limit=2" + (f"&cursor={cursor}" if cursor else "")
        got = page.evaluate("u => fetch(u).then(r => r.json())", url)
        seen += [e["execution_id"] for e in got["executions"]]
        cursor = got["next_cursor"]
        if not cursor:
            break
    assert sorted(seen) == sorted(stack.ids.values())


def test_completed_execution_graph_timeline_and_payload(page: Page, stack: Consoles) -> None:
    open_execution(page, stack, "ok")
    expect(page.locator("#exec-status .badge")).to_have_text("COMPLETED")
    for step in ("reserve", "approval", "charge", "ship"):
        expect(page.locator(f'g.node[data-step="{step}"]')).to_have_attribute("data-status", "SUCCEEDED")
        assert node_fill(page, step) == GREEN
    expect(page.locator('g.node[data-step="ship"] text.detail')).to_have_text("3 elements: 3 succeeded")
    assert node_fill(page, "compensate:charge") == GREY  # compensation shown, never run
    groups = page.locator("#timeline .vis-label .tl-unit")
    expect(groups).to_have_text(["reserve", "approval", "charge", "ship", "ship[0]", "ship[1]", "ship[2]"])
    expect(page.locator("#timeline .vis-item.seg-fanout")).to_contain_text("fan-out 3 elements")
    expect(page.locator("#timeline .vis-item.seg-signal")).to_have_count(1)
    expect(page.locator("#timeline .vis-item.seg-attempt").first).to_be_attached()
    expect(page.locator("#timeline .vis-item.seg-queue").first).to_contain_text("#1 queue wait")
    row = page.locator('#history tr.event[data-type="StepSucceeded"]').first
    detail = row.locator("xpath=following-sibling::tr[1]")
    expect(detail).to_be_hidden()
    row.locator("button.expand").click()
    expect(detail).to_be_visible()
    expect(detail).to_contain_text('"reservation_id"')
    page.select_option("#type-filter", "SignalReceived")
    expect(page.locator("#history tr.event")).to_have_count(1)
    expect(page.locator("#actions #action-buttons")).to_contain_text("no action for a completed execution")
    shot(page, "execution-completed")


def test_failed_execution_shows_compensation(page: Page, stack: Consoles) -> None:
    open_execution(page, stack, "declined")
    expect(page.locator("#exec-status")).to_contain_text("FAILED compensation completed")
    expect(page.locator("#header .error-json")).to_contain_text("CARD_DECLINED")
    assert node_fill(page, "charge") == RED
    assert node_fill(page, "compensate:reserve") == GREEN
    expect(page.locator('g.node[data-step="ship"]')).to_have_attribute("data-status", "PENDING")
    units = page.locator("#timeline .vis-label .tl-unit")
    expect(units).to_contain_text(["(execution)", "compensate:reserve"])
    expect(page.locator("#timeline .vis-item.seg-compensation")).to_have_count(1)
    expect(page.locator("#timeline .vis-item.seg-failed")).to_have_count(1)
    shot(page, "execution-failed")


def test_signal_checked_sent_and_completes_without_reload(page: Page, stack: Consoles) -> None:
    open_execution(page, stack, "waiting")
    expect(page.locator('#waiting li[data-step="approval"]')).to_contain_text("signal approval")
    assert node_fill(page, "approval") == AMBER
    shot(page, "execution-waiting")
    page.evaluate("() => { window.__same_page = true }")
    page.fill("#signal-payload", '{"approved": "yes"}')
    page.click("#signal-send")
    expect(page.locator("#signal-check")).to_contain_text("payload")
    expect(page.locator("#modal")).to_be_hidden()
    page.fill("#signal-payload", "{not json")
    page.click("#signal-validate")
    expect(page.locator("#signal-check")).to_contain_text("payload is not JSON")
    page.fill("#signal-payload", '{"approved": true, "by": "console"}')
    page.click("#signal-validate")
    expect(page.locator("#signal-check")).to_have_text("✓ matches the signal's contract")
    page.click("#signal-send")
    expect(page.locator("#modal")).to_be_visible()
    expect(page.locator("#modal-body")).to_contain_text('"by": "console"')
    page.click("#modal-ok")
    expect(page.locator("#action-result")).to_contain_text("signal approval sent")
    expect(page.locator("#exec-status .badge")).to_have_text("COMPLETED", timeout=30000)
    expect(page.locator('g.node[data-step="ship"]')).to_have_attribute("data-status", "SUCCEEDED")
    assert page.evaluate("() => window.__same_page") is True  # updated live, not reloaded
    shot(page, "execution-signalled")


def test_cancel_asks_and_shows_the_api_refusal_word_for_word(page: Page, stack: Consoles) -> None:
    open_execution(page, stack, "cancel")
    page.click("#action-cancel")
    expect(page.locator("#modal-title")).to_have_text("Cancel")
    page.click("#modal-cancel")  # backing out sends nothing
    assert stack.client.describe(stack.ids["cancel"])["status"] == "RUNNING"
    page.click("#action-cancel")
    page.fill("#action-reason", "customer asked")
    page.click("#modal-ok")
    expect(page.locator("#exec-status .badge")).to_have_text("CANCELLED", timeout=30000)
    assert any(e["type"] == "CancelRequested" and e["reason"] == "customer asked"
               for e in stack.client.history(stack.ids["cancel"]))

    open_execution(page, stack, "xss")  # ended behind the page's back: the API refuses with 409
    expect(page.locator("#action-force-cancel")).to_be_visible()
    stack.client.cancel(stack.ids["xss"], "elsewhere", force=True)
    stack.wait_status(stack.ids["xss"], ("CANCELLED",))
    page.evaluate("() => { for (const id of window.Orbit.timers) clearInterval(id) }")  # keep the button
    page.click("#action-force-cancel")
    page.click("#modal-ok")
    refusal = page.locator("#modal-error")
    expect(refusal).to_be_visible()
    body = stack.client._once  # the API's own words for the same request
    with pytest.raises(Exception) as info:
        body("POST", f"/executions/{stack.ids['xss']}/cancel", {"force": True})
    message = info.value.body["error"]["message"]  # type: ignore[attr-defined]
    expect(refusal).to_have_text(f"CONFLICT: {message}")
    shot(page, "action-refused")


def test_values_from_a_history_render_as_text(page: Page, stack: Consoles) -> None:
    open_execution(page, stack, "xss")
    expect(page.locator("#header pre.input")).to_contain_text(XSS.replace('"', '\\"'))
    page.locator('#history tr.event[data-type="WorkflowCreated"] button.expand').click()
    expect(page.locator("#history tr.payload").first).to_contain_text("onerror")
    assert page.locator("main img, main script").count() == 0
    page.goto(stack.ui.url + "#/executions?id_prefix=order-x")
    expect(page.locator("#executions tbody tr[data-id]")).to_have_count(1)


def test_code_workflow_shows_its_units_in_call_order(page: Page, stack: Consoles) -> None:
    open_execution(page, stack, "code")
    expect(page.locator("#graph h3")).to_have_text("Units in call order")
    units = page.locator("#graph ol.units li")
    expect(units.first).to_have_attribute("data-step", "1.reserve")
    names = units.evaluate_all("els => els.map(e => e.dataset.step)")
    assert names[:3] == ["1.reserve", "2.wait_for(approval)", "3.charge"] and len(names) >= 4, names
    assert all(s == "SUCCEEDED" for s in units.evaluate_all("els => els.map(e => e.dataset.status)"))
    expect(page.locator("#header")).to_contain_text("code build")
    shot(page, "execution-code")


def test_workflows_view(page: Page, stack: Consoles) -> None:
    page.goto(stack.ui.url + "#/workflows")
    row = page.locator('#workflows tr[data-name="order-fulfilment"]')
    expect(row).to_contain_text("definition")
    shot(page, "workflows")
    row.locator("td:nth-child(4) a").click()
    expect(page.locator("svg.step-graph g.node")).to_have_count(6)
    expect(page.locator("pre.source")).to_contain_text('"wait_for": "approval"')
    shot(page, "workflow")


def test_workflows_view_marks_a_retired_version(page: Page, stack: Consoles) -> None:
    stack.client.register("orbit: 1\nname: retired-one\nsteps:\n  a: {compute: 1}\n")
    stack.client.retire("retired-one", "1")
    page.goto(stack.ui.url + "#/workflows")
    expect(page.locator('#workflows tr[data-name="retired-one"] td:nth-child(3)')).to_have_text("1 (retired)")


def test_dev_serves_the_console_and_actions_need_the_csrf_token(stack: Consoles) -> None:
    with urllib.request.urlopen(stack.dev.url + "/console/") as resp:
        html = resp.read().decode()
        assert "default-src 'self'" in resp.headers["content-security-policy"]
    assert stack.dev_console is not None and f'content="{stack.dev_console.csrf}"' in html
    req = urllib.request.Request(stack.dev.url + f"/console/api/executions/{stack.ids['ok']}/cancel",
                                 data=b"{}", method="POST", headers={"content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req)
    assert info.value.code == 403
