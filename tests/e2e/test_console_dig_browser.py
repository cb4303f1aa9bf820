"""Digging into an execution in the console (issue 31 §3), in Chromium against `orbit dev`'s server
on an in-process local stack: a graph node's story on click, labels in full, a succeeded
compensation in green, the graph across the panel; a timeline that runs to now, with visible
sub-second bars and one time scale; failures highlighted and filtered in the history; query,
update, fork and start from the console, redrive only where it is accepted, red only for
destructive confirms, fork links both ways; code workflow calls as a tree. One browser for the
module; screenshots go to test-artifacts/console/ (docs/console/ holds the ones the docs show)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orbit
import pytest
from orbit.client import Client
from orbit.console.server import ConsoleServer, client_backend
from orbit.local import LocalStack
from orbit.local.devserver import DevServer
from orbit.worker import task
from orbit.workflow import REGISTRY, CodeRegistry
from playwright.sync_api import Page, expect

from tests.e2e.console_browser import *  # noqa: F403  (the browser and page fixtures)
from tests.e2e.console_stack import ARTIFACTS, XSS

pytestmark = pytest.mark.e2e
GREEN, RED_BG = "rgb(220, 252, 231)", "rgb(254, 242, 242)"
RED, BLUE = "rgb(214, 69, 69)", "rgb(37, 99, 235)"
LONG = "reserve_the_stock_in_every_warehouse_of_the_region"
FAILURES = {"StepAttemptFailed", "StepAttemptUncertain", "StepFailed", "CompensationFailed",
            "WorkflowTimeoutReached", "WorkflowFailed", "WorkflowTimedOut", "ExecutionParked"}


@task("dig.ok")
def ok(input: Any, ctx: Any) -> Any:
    return {"ok": True, "got": input}


@task("dig.broken")
def broken(input: Any, ctx: Any) -> Any:
    raise orbit.TaskError("UPSTREAM_DOWN", f"the upstream is down for {input}", retryable=True)


@task("dig.slow")
def slow(input: Any, ctx: Any) -> Any:
    time.sleep(0.3)
    return {"slow": True}


def calls(ctx: Any, input: Any) -> Any:
    """Every kind of group: a parallel of two branches, a map over functions, a race and a scope."""
    ctx.step("dig.ok", {"first": True}, name="first")
    ctx.parallel(lambda c: c.step("dig.ok", 1, name="left"), lambda c: c.step("dig.ok", 2, name="right"))
    ctx.map([1, 2], lambda c, item: c.step("dig.ok", item, name="each"))
    ctx.race(quick=lambda c: c.step("dig.ok", 3, name="quick"), late=lambda c: c.sleep("1h"))
    with ctx.scope():
        ctx.step("dig.ok", 4, name="inside")
    return "done"


SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
DEFINITIONS = [
    {"orbit": 1, "name": "dig-saga", "version": "1", "input": SCHEMA,
     "queries": {"stage": "{% steps.pay.status %}", "echo": "{% query %}"},
     "steps": {
         LONG: {"task": "dig.ok", "compensate": {"task": "dig.ok"}},
         "pay": {"after": [LONG], "task": "dig.slow", "compensate": {"task": "dig.ok"}},
         "lines": {"after": ["pay"], "for": "{% [1, 2, 3] %}", "task": "dig.ok", "input": "{% item * 100 %}",
                   "compensate": {"task": "dig.ok"}},  # compensated element by element
         "notify": {"after": ["lines"], "task": "dig.broken",
                    "retry": {"max_attempts": 2, "backoff": "100ms"}}}},
    {"orbit": 1, "name": "dig-plain", "version": "1",
     "steps": {"work": {"task": "dig.broken", "retry": {"max_attempts": 1}}}},
    {"orbit": 1, "name": "dig-wait", "version": "1",
     "steps": {"open": {"wait_for": "item"},
               "total": {"after": ["open"], "compute": "{% steps.open.output.qty * 10 %}"}},
     "updates": {"add_item": {"signal": "item",
                              "validator": "{% update.qty > 0 ? true : 'qty must be a positive number' %}",
                              "result": "{% {'line': update.qty * 10} %}"}}},
]


@dataclass
class Dig:
    stack: LocalStack
    dev: DevServer
    ui: ConsoleServer
    client: Client

    def wait(self, eid: str, statuses: tuple[str, ...], timeout_s: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            d = self.client.describe(eid)
            if d["status"] in statuses or time.monotonic() > deadline:
                return d
            time.sleep(0.1)

    def open(self, page: Page, eid: str) -> None:
        page.goto(self.ui.url + "#/execution/" + eid)
        expect(page.locator("#timeline .vis-item").first).to_be_visible(timeout=15000)


@pytest.fixture(scope="module")
def dig() -> Iterator[Dig]:
    held = REGISTRY.all()
    with LocalStack(mode="inprocess") as stack:
        for d in DEFINITIONS:
            stack.register(d)
        stack.deploy(orbit.workflow("dig-code", registry=CodeRegistry())(calls))
        dev = DevServer(stack, 0)
        thread = threading.Thread(target=dev.serve_forever, daemon=True)
        thread.start()
        client = Client(url=dev.url)
        ui = ConsoleServer(client_backend(client), port=0, target=dev.url).start()
        r = Dig(stack, dev, ui, client)
        client.start("dig-saga", {"n": 1, "note": XSS}, id="saga")
        client.start("dig-plain", {}, id="plain")
        client.start("dig-code", {}, id="code")
        assert r.wait("saga", ("FAILED",))["compensation"] == "completed"
        assert r.wait("plain", ("FAILED",))["status"] == "FAILED"
        assert r.wait("code", ("COMPLETED",))["status"] == "COMPLETED"
        try:
            yield r
        finally:
            ui.stop()
            dev.httpd.shutdown()
            thread.join(timeout=10)
    REGISTRY.replace(held)


def shot(page: Page, css: str, name: str) -> None:
    """One part of the page (small enough for the docs: docs/console/ holds copies of these)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(css).first.screenshot(path=str(ARTIFACTS / f"dig-{name}.png"))


def fill(page: Page, css: str) -> str:
    return str(page.locator(css).evaluate("e => getComputedStyle(e).fill"))


def test_graph_node_shows_its_story_labels_in_full_and_fills_the_panel(page: Page, dig: Dig) -> None:
    dig.open(page, "saga")
    node = 'svg.step-graph g.node[data-step="{}"]'
    # a compensation that succeeded is green, as its step is
    expect(page.locator(node.format("compensate:pay"))).to_have_attribute("data-status", "SUCCEEDED")
    assert fill(page, node.format("compensate:pay") + " > rect") == GREEN
    # a `for` step's compensation is its elements' (units compensate:lines[0]...): green, counted
    expect(page.locator(node.format("compensate:lines"))).to_have_attribute("data-status", "SUCCEEDED")
    assert fill(page, node.format("compensate:lines") + " > rect:not(.stack)") == GREEN
    counted = page.locator(node.format("compensate:lines") + " text.detail")
    expect(counted).to_have_text("3 elements: 3 succeeded")
    # the long name is all there, on lines that stay inside the node
    long = page.locator(node.format(LONG))
    titles = long.locator("text.title").all_text_contents()
    assert "".join(titles).replace(" ", "") == LONG, titles
    width = float(long.locator("rect").first.get_attribute("width") or 0)
    for box in long.locator("text").evaluate_all("ts => ts.map(t => t.getBBox().x + t.getBBox().width)"):
        assert box <= width, (box, width)
    # the graph spreads across the panel
    svg_w = page.locator("svg.step-graph").evaluate("s => s.getBoundingClientRect().width")
    panel_w = page.locator("#graph").evaluate("p => p.clientWidth")
    assert svg_w >= 0.8 * panel_w, (svg_w, panel_w)
    page.set_viewport_size({"width": 1200, "height": 1000})  # a narrower window: laid out again, no scroll
    page.wait_for_function("() => document.querySelector('svg.step-graph').getBoundingClientRect().width"
                           " <= document.getElementById('graph').clientWidth - 30")
    page.set_viewport_size({"width": 1360, "height": 1000})

    page.locator(node.format("notify")).click()
    story = page.locator("#step-detail")
    expect(story).to_be_visible()
    expect(story.locator("h3")).to_have_text("notify")
    expect(story.locator("tr.attempt")).to_have_count(2)
    expect(story.locator('tr.attempt[data-outcome="failed"]')).to_have_count(2)
    expect(story.locator(".step-error")).to_contain_text("UPSTREAM_DOWN")
    expect(story.locator("#step-timing")).to_contain_text("took")
    expect(page.locator(node.format("notify"))).to_have_class("node st-FAILED clickable selected")
    shot(page, "#graph", "graph-node")

    page.locator(node.format("pay")).click()
    expect(story.locator("h3")).to_have_text("pay")
    expect(story.locator(".step-output")).to_contain_text('"slow": true')
    expect(story.locator(".step-input")).to_contain_text("null")
    page.locator(node.format("lines")).click()
    expect(story.locator(".element-list li")).to_have_count(3)
    story.locator('.element-list a[data-step="lines[1]"]').click()
    expect(story.locator("h3")).to_have_text("lines[1]")
    expect(story.locator(".step-input")).to_have_text("200")
    page.click("#step-close")
    expect(story).to_be_hidden()


def test_timeline_one_scale_visible_short_bars_and_a_running_one_reaches_now(page: Page, dig: Dig) -> None:
    dig.open(page, "saga")
    page.click("text=Fit")
    majors = page.locator("#timeline .vis-time-axis .vis-text.vis-major").evaluate_all(
        "els => els.filter(e => e.getBoundingClientRect().height > 0 && e.textContent.trim())"
        ".map(e => e.textContent)")
    assert majors == [], majors  # no second row of dates beside the clock times
    expect(page.locator("#timeline-origin")).to_contain_text("times in UTC")
    page.wait_for_timeout(300)
    widths = page.locator("#timeline .vis-item.vis-range").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().width)")
    assert widths and min(widths) >= 4, widths
    shot(page, "#timeline-panel", "timeline")

    eid = dig.client.start("dig-wait", {}, id="waiting-now")["id"]
    dig.open(page, eid)
    end = "() => document.getElementById('timeline').orbitTimeline.getWindow().end.getTime()"
    first = page.evaluate(end)
    page.wait_for_timeout(3500)
    later, now = page.evaluate(end), page.evaluate("() => Date.now()")
    assert later - first >= 2000 and later >= now - 2500, (first, later, now)
    open_bar = page.locator("#timeline .vis-item.seg-signal.open")
    expect(open_bar).to_have_count(1)


def test_history_highlights_failures_and_filters_them(page: Page, dig: Dig) -> None:
    dig.open(page, "saga")
    bad = page.locator("#history tr.event.bad")
    types = bad.evaluate_all("rs => rs.map(r => r.dataset.type)")
    assert set(types) == {"StepAttemptFailed", "StepFailed", "WorkflowFailed"} and len(types) == 4, types
    assert bad.first.locator("td").first.evaluate("t => getComputedStyle(t).backgroundColor") == RED_BG
    ok_row = page.locator('#history tr.event[data-type="StepSucceeded"]').first
    assert ok_row.locator("td").first.evaluate("t => getComputedStyle(t).backgroundColor") != RED_BG
    page.check("#failures-only")
    rows = page.locator("#history tr.event")
    expect(rows).to_have_count(4)
    assert set(rows.evaluate_all("rs => rs.map(r => r.dataset.type)")) <= FAILURES
    shot(page, "#history", "history-failures")
    page.uncheck("#failures-only")
    expect(rows).not_to_have_count(4)


def test_redrive_only_where_accepted_and_red_only_for_destructive(page: Page, dig: Dig) -> None:
    dig.open(page, "saga")  # its compensation ran: the API refuses a redrive, the console offers none
    expect(page.locator("#action-buttons")).to_be_visible()
    expect(page.locator("#action-redrive")).to_have_count(0)
    dig.open(page, "plain")  # failed, nothing compensated: redrive is offered
    page.click("#action-redrive")
    assert page.locator("#modal-ok").evaluate("b => getComputedStyle(b).backgroundColor") == BLUE
    shot(page, ".modal-box", "confirm-redrive")
    page.click("#modal-cancel")
    eid = dig.client.start("dig-wait", {}, id="to-cancel")["id"]
    dig.open(page, eid)
    page.click("#action-cancel")
    assert page.locator("#modal-ok").evaluate("b => getComputedStyle(b).backgroundColor") == RED
    shot(page, ".modal-box", "confirm-destructive")
    page.click("#modal-cancel")
    page.click("#action-pause")
    assert page.locator("#modal-ok").evaluate("b => getComputedStyle(b).backgroundColor") == BLUE
    page.click("#modal-cancel")


def test_query_update_and_fork_from_the_console(page: Page, dig: Dig) -> None:
    dig.open(page, "saga")
    page.select_option("#query-name", "echo")
    page.fill("#query-input", '{"text": "%s"}' % XSS.replace('"', '\\"'))
    page.click("#query-run")
    expect(page.locator("#explore-result")).to_contain_text("onerror")
    assert page.locator("main img, main script").count() == 0  # an answer is text, never markup
    page.select_option("#query-name", "stage")
    page.fill("#query-input", "")
    page.click("#query-run")
    expect(page.locator("#explore-result")).to_have_text('"SUCCEEDED"')

    page.select_option("#fork-step", "notify")
    page.fill("#fork-id", "saga-fork")
    page.click("#fork-run")
    expect(page.locator("#modal-title")).to_have_text("Fork")
    page.click("#modal-ok")  # saga's compensation undid the steps a fork would reuse: refused, said why
    expect(page.locator("#modal-error")).to_contain_text("despite")
    page.check("#fork-despite")
    page.click("#modal-ok")
    page.click("#fork-link")
    expect(page.locator("#header .eid")).to_have_text("saga-fork")
    expect(page.locator("#forked-from a")).to_have_text("saga")
    expect(page.locator("#forked-from")).to_contain_text("notify")
    page.click("#forked-from a")
    expect(page.locator("#header .eid")).to_have_text("saga")
    expect(page.locator("#forks a")).to_have_text(["saga-fork"])
    shot(page, "#header-slot", "fork-links")

    eid = dig.client.start("dig-wait", {}, id="to-update")["id"]
    dig.open(page, eid)
    page.select_option("#update-name", "add_item")
    page.fill("#update-input", '{"qty": 0}')
    page.click("#update-send")
    page.click("#modal-ok")
    expect(page.locator("#modal-error")).to_contain_text("qty must be a positive number")
    page.click("#modal-cancel")
    page.fill("#update-input", '{"qty": 3}')
    page.click("#update-send")
    page.click("#modal-ok")
    expect(page.locator("#explore-result")).to_contain_text('"line": 30')
    expect(page.locator("#exec-status .badge")).to_have_text("COMPLETED", timeout=30000)
    shot(page, "#explore", "query-update-fork")


def test_start_checks_the_input_schema_then_starts(page: Page, dig: Dig) -> None:
    build = dig.client._call("GET", "/workflows")["workflows"]
    saga = next(w for w in build if w["name"] == "dig-saga")["versions"][0]["builds"][0]
    page.goto(dig.ui.url + f"#/workflow/dig-saga/1/{saga}")
    page.fill("#start-input", '{"n": "one"}')
    page.click("#start-run")
    expect(page.locator("#start-check")).to_contain_text("input.n")
    expect(page.locator("#modal")).to_be_hidden()  # refused before anything is sent
    page.fill("#start-input", '{"n": 2}')
    page.click("#start-validate")
    expect(page.locator("#start-check")).to_have_text("✓ matches the workflow's input schema")
    page.fill("#start-id", "started-here")
    page.click("#start-run")
    shot(page, "#start", "start")
    expect(page.locator("#modal-body")).to_contain_text('"n": 2')
    page.click("#modal-ok")
    expect(page.locator("#header .eid")).to_have_text("started-here")
    assert dig.client.describe("started-here")["input"] == {"n": 2}


def test_code_calls_as_a_tree_of_groups_and_branches(page: Page, dig: Dig) -> None:
    dig.open(page, "code")
    tree = page.locator("#graph ol.units.tree")
    tops = tree.locator(":scope > li").evaluate_all("ls => ls.map(l => l.dataset.step)")
    assert [t.split(".", 1)[1] for t in tops] == ["first", "parallel()", "map()", "race()", "scope()"], tops
    par = tree.locator(':scope > li[data-step="2.parallel()"]')
    branches = par.locator(":scope > ol > li.branch")
    expect(branches).to_have_count(2)
    assert branches.evaluate_all("bs => bs.map(b => b.dataset.status)") == ["SUCCEEDED", "SUCCEEDED"]
    expect(branches.first.locator("li[data-step]")).to_have_attribute("data-step", "2.parallel()/0/1.left")
    race = tree.locator(':scope > li[data-step="4.race()"] > ol > li.branch')
    assert sorted(race.evaluate_all("bs => bs.map(b => b.dataset.branch + ':' + b.dataset.status)")) == [
        "4.race()/late:CANCELLED", "4.race()/quick:SUCCEEDED"]
    scope = tree.locator(':scope > li[data-step="5.scope()"] li[data-step]')
    expect(scope).to_have_attribute("data-step", "5.scope()/0/1.inside")
    tree.locator('a[title="2.parallel()/1/1.right"]').click()
    expect(page.locator("#step-detail h3")).to_have_text("2.parallel()/1/1.right")
    expect(page.locator("#step-detail .step-input")).to_contain_text("2")
    shot(page, "#graph", "code-tree")
