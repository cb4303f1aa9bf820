"""The console's Schedules view, its redrive and un-park actions, and values kept in S3 fetched only
when a payload is expanded: in Chromium, against `orbit dev`'s server on an in-process local stack
(tasks and code workflows from this module). Screenshots go to test-artifacts/console/."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
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
from tests.e2e.console_browser import shot

pytestmark = pytest.mark.e2e
FLAKY = {"fail": True}
BLOB = os.urandom(30_000).hex()  # 60 KB: above the 32 KB limit, so the value is an S3 object of its own


@task("consolerec.flaky")
def flaky(input: Any, ctx: Any) -> Any:
    if FLAKY["fail"]:
        raise orbit.TaskError("UPSTREAM_DOWN", "the upstream service is down", retryable=False)
    return {"done": True}


@task("consolerec.ok")
def ok(input: Any, ctx: Any) -> Any:
    return {"ok": True}


@task("consolerec.big")
def big(input: Any, ctx: Any) -> Any:
    return {"blob": BLOB, "size": len(BLOB)}


@task("consolerec.first")
def first(input: Any, ctx: Any) -> Any:
    return {"first": input}


@task("consolerec.second")
def second(input: Any, ctx: Any) -> Any:
    return {"second": input}


def v1(ctx: Any, input: Any) -> Any:
    a = ctx.step("consolerec.first", input)
    go = ctx.wait_for("go")
    return [a, ctx.step("consolerec.second", go)]


def v2_reordered(ctx: Any, input: Any) -> Any:
    b = ctx.step("consolerec.second", input)
    go = ctx.wait_for("go")
    return [ctx.step("consolerec.first", go), b]


def build(fn: Any) -> Any:
    """A build of `consolerec-code` that no registry holds yet (deploy hands it to the deciders)."""
    return orbit.workflow("consolerec-code", registry=CodeRegistry())(fn)


DEFINITIONS = [
    {"orbit": 1, "name": "consolerec-flaky", "version": "1", "steps": {"work": {"task": "consolerec.flaky"}}},
    {"orbit": 1, "name": "consolerec-saga", "version": "1", "steps": {
        "book": {"task": "consolerec.ok", "compensate": {"task": "consolerec.ok"}},
        "pay": {"after": ["book"], "task": "consolerec.flaky"}}},
    {"orbit": 1, "name": "consolerec-big", "version": "1", "steps": {"make": {"task": "consolerec.big"}}},
    {"orbit": 1, "name": "consolerec-nightly", "version": "1", "steps": {"work": {"task": "consolerec.ok"}}},
]


@dataclass
class Rec:
    stack: LocalStack
    dev: DevServer
    ui: ConsoleServer
    client: Client
    gets: list[str] = field(default_factory=list)  # every payload-store read (S3 GetObject or cache)

    def locked(self, fn: Any, *args: Any, **kw: Any) -> Any:
        """Call the stack between two turns of `orbit dev`'s pump."""
        with self.dev.lock:
            return fn(*args, **kw)

    def wait(self, eid: str, statuses: tuple[str, ...], timeout_s: float = 30) -> dict[str, Any]:
        import time

        deadline = time.monotonic() + timeout_s
        while True:
            d = self.client.describe(eid)
            if d["status"] in statuses or time.monotonic() > deadline:
                return d
            time.sleep(0.1)


@pytest.fixture(scope="module")
def rec() -> Iterator[Rec]:
    held = REGISTRY.all()
    with LocalStack(mode="inprocess") as stack:
        for d in DEFINITIONS:
            stack.register(d)
        dev = DevServer(stack, 0)
        thread = threading.Thread(target=dev.serve_forever, daemon=True)
        thread.start()
        client = Client(url=dev.url)
        ui = ConsoleServer(client_backend(client), port=0, target=dev.url).start()
        r = Rec(stack, dev, ui, client)
        payloads = stack.services.payloads
        read = payloads.get
        payloads.get = lambda ref: (r.gets.append(ref), read(ref))[1]  # the history store's reads
        try:
            yield r
        finally:
            ui.stop()
            dev.httpd.shutdown()
            thread.join(timeout=10)
    REGISTRY.replace(held)


def open_execution(page: Page, rec: Rec, eid: str) -> None:
    page.goto(rec.ui.url + "#/execution/" + eid)
    expect(page.locator("#history tr.event").first).to_be_visible(timeout=15000)


def test_redrive_asks_then_the_execution_goes_on_live(page: Page, rec: Rec) -> None:
    FLAKY["fail"] = True
    eid = rec.client.start("consolerec-flaky", {}, id="flaky-1")["id"]
    assert rec.wait(eid, ("FAILED",))["status"] == "FAILED"
    open_execution(page, rec, eid)
    expect(page.locator("#action-cancel")).to_have_count(0)
    page.click("#action-redrive")
    expect(page.locator("#modal-title")).to_have_text("Redrive")
    expect(page.locator("#modal-body")).to_contain_text("same id and input")
    page.click("#modal-cancel")  # backing out sends nothing
    assert rec.client.describe(eid).get("redrive_count", 0) == 0
    FLAKY["fail"] = False  # the worker is fixed
    page.click("#action-redrive")
    page.click("#modal-ok")
    expect(page.locator("#action-result")).to_contain_text("redriven (redrive 1); running again: work")
    expect(page.locator("#exec-status .badge")).to_have_text("COMPLETED", timeout=30000)
    expect(page.locator('#history tr.event[data-type="ExecutionRedriven"]')).to_have_count(1)
    shot(page, "execution-redriven")


def test_a_refused_redrive_shows_the_api_words(page: Page, rec: Rec) -> None:
    FLAKY["fail"] = True
    eid = rec.client.start("consolerec-saga", {}, id="saga-1")["id"]
    assert rec.wait(eid, ("FAILED",))["status"] == "FAILED"  # `book` was compensated
    open_execution(page, rec, eid)
    expect(page.locator("#exec-status")).to_contain_text("compensation completed")
    expect(page.locator("#action-redrive")).to_have_count(0)  # the console offers only what the API accepts
    # offered anyway (a console older than the rule, or a race): the API refuses, word for word
    page.evaluate("""() => { Orbit.actions.find((a) => a.id === "redrive").when = () => true;
                             location.hash = "#/workflows"; }""")
    expect(page.locator("#workflows")).to_be_visible()
    page.evaluate("eid => { location.hash = '#/execution/' + eid }", eid)  # the same page, not a reload
    page.click("#action-redrive")
    page.click("#modal-ok")
    refusal = page.locator("#modal-error")
    expect(refusal).to_be_visible()
    status, body = rec.dev.call("POST", f"/executions/{eid}/redrive", {})  # the API's own words
    assert status == 409
    expect(refusal).to_have_text(f"{body['error']['code']}: {body['error']['message']}")
    expect(page.locator("#modal")).to_be_visible()  # the dialog stays open
    shot(page, "action-redrive-refused")
    page.click("#modal-cancel")


def test_unpark_asks_and_the_parked_execution_completes(page: Page, rec: Rec) -> None:
    rec.locked(rec.stack.deploy, build(v1))
    eid = rec.client.start("consolerec-code", {"n": 1}, id="parked-1")["id"]
    rec.locked(rec.stack.run_until_idle)
    rec.locked(rec.stack.deploy, build(v2_reordered))  # the pinned build is gone, the new one disagrees
    rec.client.signal(eid, "go", "kept")
    rec.locked(rec.stack.run_until_idle)
    assert rec.client.describe(eid)["parked"]["code"] == "BUILD_MISMATCH"
    open_execution(page, rec, eid)
    expect(page.locator("#header")).to_contain_text("BUILD_MISMATCH")
    rec.locked(rec.stack.deploy, build(v1))  # the compatible code is back
    page.click("#action-unpark")
    expect(page.locator("#modal-title")).to_have_text("Un-park")
    page.click("#modal-ok")
    expect(page.locator("#action-result")).to_contain_text("un-park sent")
    expect(page.locator("#exec-status .badge")).to_have_text("COMPLETED", timeout=30000)
    expect(page.locator("#action-unpark")).to_have_count(0)
    shot(page, "execution-unparked")

    # un-parking what is no longer parked: the API refuses, the dialog says it word for word
    page.evaluate("""() => { Orbit.actions.find((a) => a.id === "unpark").when = () => true;
                             location.hash = "#/workflows"; }""")
    expect(page.locator("#workflows")).to_be_visible()
    page.evaluate("eid => { location.hash = '#/execution/' + eid }", eid)  # the same page, not a reload
    page.click("#action-unpark")
    page.click("#modal-ok")
    status, body = rec.dev.call("POST", f"/executions/{eid}/unpark", {})
    assert status == 409
    expect(page.locator("#modal-error")).to_have_text(f"{body['error']['code']}: {body['error']['message']}")
    page.click("#modal-cancel")


def test_values_kept_in_s3_are_read_only_when_a_payload_is_expanded(page: Page, rec: Rec) -> None:
    eid = rec.client.start("consolerec-big", {}, id="big-1")["id"]
    assert rec.wait(eid, ("COMPLETED",))["status"] == "COMPLETED"
    page.goto(rec.ui.url + "#/workflows")
    rec.gets.clear()
    open_execution(page, rec, eid)
    expect(page.locator("#timeline .vis-item").first).to_be_visible(timeout=15000)
    row = page.locator('#history tr.event[data-type="StepSucceeded"]')
    expect(row).to_have_attribute("data-stored", "1")
    assert rec.gets == []  # the page, its live view and timeline read no stored value
    row.locator("button.expand").click()
    detail = row.locator("xpath=following-sibling::tr[1]")
    expect(detail.locator(".stored-note")).to_have_text("kept in S3, fetched on demand: output.blob")
    expect(detail.locator("pre.json")).to_contain_text(BLOB[:64])
    assert len(rec.gets) == 1  # the one value of the one event expanded
    shot(page, "execution-s3-value")


def test_schedules_list_detail_and_pause_resume(page: Page, rec: Rec) -> None:
    rec.locked(rec.stack.create_schedule, "nightly", "consolerec-nightly", {"from": "schedule"},
               cron="0 2 * * *", timezone="Europe/Paris", overlap="buffer_one")
    run = rec.locked(rec.stack.trigger_schedule, "nightly")
    assert run and rec.wait(run, ("COMPLETED",))["status"] == "COMPLETED"
    page.goto(rec.ui.url + "#/schedules")
    row = page.locator('#schedules tr[data-id="nightly"]')
    expect(row).to_contain_text("cron 0 2 * * * (Europe/Paris)")
    expect(row).to_contain_text("ACTIVE")
    shot(page, "schedules")
    row.locator("a").click()
    expect(page.locator("#schedule-header h2")).to_have_text("nightly")
    expect(page.locator("#schedule-header pre.spec")).to_contain_text('"cron": "0 2 * * *"')
    expect(page.locator("#schedule-header pre.input")).to_contain_text('"from": "schedule"')
    expect(page.locator("#next-occurrences li")).to_have_count(5)
    action = page.locator(f'#schedule-actions tr[data-execution="{run}"]')
    expect(action).to_contain_text("trigger")
    expect(action.locator(".badge")).to_have_text("COMPLETED", timeout=15000)
    shot(page, "schedule")

    page.click("#schedule-toggle")
    expect(page.locator("#modal-title")).to_have_text("Pause")
    page.click("#modal-cancel")  # backing out sends nothing
    assert rec.client.describe_schedule("nightly")["state"]["paused"] is False
    page.click("#schedule-toggle")
    page.fill("#schedule-note", "maintenance <b>window</b>")
    page.click("#modal-ok")
    expect(page.locator("#schedule-state")).to_contain_text("PAUSED maintenance <b>window</b>")
    assert rec.client.describe_schedule("nightly")["state"]["paused"] is True
    expect(page.locator("#paused-note")).to_contain_text("Paused: these occurrences are skipped")
    shot(page, "schedule-paused")
    page.click("#schedule-toggle")
    expect(page.locator("#modal-title")).to_have_text("Resume")
    page.click("#modal-ok")
    expect(page.locator("#schedule-state .badge")).to_have_text("ACTIVE")
    assert rec.client.describe_schedule("nightly")["state"]["paused"] is False

    action.locator("a").click()  # a recent action opens its run
    expect(page.locator("#header h2")).to_have_text(run)


def test_pause_holds_the_execution_and_unpause_lets_it_finish(page: Page, rec: Rec) -> None:
    rec.locked(rec.stack.deploy, build(v1))
    eid = rec.client.start("consolerec-code", {"n": 1}, id="paused-1")["id"]
    rec.locked(rec.stack.run_until_idle)
    open_execution(page, rec, eid)
    expect(page.locator("#action-unpause")).to_have_count(0)
    page.click("#action-pause")
    expect(page.locator("#modal-title")).to_have_text("Pause")
    page.click("#modal-ok")
    expect(page.locator("#action-result")).to_contain_text("pause sent")
    expect(page.locator("#action-unpause")).to_be_visible(timeout=30000)
    expect(page.locator("#action-pause")).to_have_count(0)
    rec.client.signal(eid, "go", "while paused")
    rec.locked(rec.stack.run_until_idle)
    d = rec.client.describe(eid)
    assert d["status"] == "RUNNING" and d["paused"]["reason"] == "console"
    shot(page, "execution-paused")
    page.click("#action-unpause")
    expect(page.locator("#modal-title")).to_have_text("Unpause")
    page.click("#modal-ok")
    expect(page.locator("#exec-status .badge")).to_have_text("COMPLETED", timeout=30000)
    expect(page.locator("#action-unpause")).to_have_count(0)
    assert rec.client.describe(eid)["paused"] is None
