"""A web page cannot drive `orbit dev` (issue 25, item 2), tried in the browser the console tests use
(Debian's Chromium through Playwright).

1. A page on another local origin (another port) sends `fetch(..., {mode: "no-cors"})` POSTs with
   text/plain, which need no CORS preflight: register a definition, start it, signal and cancel a
   waiting execution; and tries to read the list. Nothing is registered, started, signalled,
   cancelled or read: the router never sees one of those requests.
2. DNS rebinding: the browser resolves `rebound.test` to 127.0.0.1 (`--host-resolver-rules`), the
   attacker's page is served as `http://rebound.test:<dev port>/`, so to the browser every request
   to the dev server is same-origin, JSON included, and its answers readable. The Host check
   refuses each with 421. (Chromium's own Private Network Access guard is turned off for this
   one, as other browsers have none: the server must hold on its own.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from orbit.local import LocalStack
from orbit.local.devserver import DevServer
from playwright.sync_api import Browser, BrowserType

from tests.e2e.console_stack import chromium_path
from tests.e2e.http_servers import Quiet, dev_serving, serve

pytestmark = pytest.mark.e2e
VICTIM = {"orbit": 1, "name": "victim", "version": "1",
          "steps": {"wait": {"wait_for": "go"}, "done": {"compute": "{% 1 %}"}}}
PRIVATE_NETWORK_ACCESS = ["BlockInsecurePrivateNetworkRequests", "PrivateNetworkAccessSendPreflights",
                          "PrivateNetworkAccessRespectPreflightResults", "LocalNetworkAccessChecks"]
EVIL = {"orbit": 1, "name": "evil", "version": "1", "steps": {"a": {"compute": "{% 1 %}"}}}

# Each request of the attack, as the pages send it; their outcomes go to window.outcomes.
ATTACK = """
<!doctype html><title>cat pictures</title><script>
const dev = %(dev)s, mode = %(mode)s;
const calls = [
  ["POST", "/definitions", %(evil)s],
  ["POST", "/executions", {"workflow": "evil", "id": "pwned"}],
  ["POST", "/executions", {"workflow": "victim", "id": "pwned2"}],
  ["POST", "/executions/target/signals/go", {"payload": {"by": "attacker"}}],
  ["POST", "/executions/target/cancel", {"reason": "attacker"}],
  ["GET", "/executions", null],
  ["GET", "/executions/target/history", null],
];
window.outcomes = [];
(async () => {
  for (const [method, path, body] of calls) {
    const init = {method, mode};
    if (body !== null) {
      init.body = JSON.stringify(body);
      init.headers = {"content-type": mode === "no-cors" ? "text/plain" : "application/json"};
    }
    try {
      const r = await fetch(dev + path, init);
      window.outcomes.push({path, status: r.status, type: r.type, body: await r.text()});
    } catch (e) {
      window.outcomes.push({path, error: String(e)});
    }
  }
  // no-cors also lets a page read nothing but send a simple GET: try the read with cors too
  try {
    const r = await fetch(dev + "/executions", {mode: "cors"});
    window.outcomes.push({path: "cors read", status: r.status, body: await r.text()});
  } catch (e) {
    window.outcomes.push({path: "cors read", error: String(e)});
  }
  window.done = true;
})();
</script>
"""


@pytest.fixture(scope="module")
def dev() -> Iterator[DevServer]:
    with LocalStack(mode="inprocess") as stack:
        stack.register(VICTIM)
        stack.start("victim", {}, id="target")
        stack.run_until_idle()
        server = DevServer(stack, port=0)
        routed: list[tuple[str, str]] = []
        inner = server.request

        def recording(method: str, target: str, raw: bytes) -> tuple[int, Any]:
            routed.append((method, target))
            return inner(method, target, raw)

        server.request = recording  # type: ignore[method-assign]
        server.routed = routed  # type: ignore[attr-defined]
        with dev_serving(server):
            yield server


@pytest.fixture(scope="module")
def chromium(browser_type: BrowserType) -> Iterator[Browser]:
    """Its own Chromium: the rebinding test needs a host resolver rule the shared one has not."""
    browser = browser_type.launch(executable_path=chromium_path(), args=[
        "--no-sandbox", "--disable-gpu", "--host-resolver-rules=MAP rebound.test 127.0.0.1",
        # Chromium's Private Network Access would stop a public name's page from reaching loopback
        # before our server sees it; Firefox and Safari have no such guard, so the test goes without
        f"--disable-features={','.join(PRIVATE_NETWORK_ACCESS)}"])
    try:
        yield browser
    finally:
        browser.close()


def untouched(dev: DevServer) -> None:
    """Nothing registered, started, signalled or cancelled: read in process, past the HTTP checks."""
    engine = dev.stack.engine
    names = [w["name"] for w in engine.workflows()]  # code workflows of other modules are listed too
    assert "victim" in names and "evil" not in names
    entries, _ = engine.list(None, None, 100, None)
    assert [e.to_dict()["execution_id"] for e in entries] == ["target"]
    events = [e["type"] for e in engine.history("target", 0, 1000, True)]
    assert not [t for t in events if "Signal" in t or "Cancel" in t], events
    assert engine.describe("target", None, 10)["status"] == "RUNNING"


def run_attack(chromium: Browser, url: str) -> list[dict[str, Any]]:
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.goto(url)
        page.wait_for_function("window.done === true", timeout=20000)
        outcomes: list[dict[str, Any]] = page.evaluate("window.outcomes")
        return outcomes
    finally:
        context.close()


def test_a_page_on_another_local_origin_cannot_register_start_signal_or_read(dev: DevServer,
                                                                             chromium: Browser) -> None:
    page = (ATTACK % {"dev": json.dumps(dev.url), "mode": '"no-cors"', "evil": json.dumps(EVIL)}).encode()

    class Attacker(Quiet):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

    with serve(Attacker) as attacker_url:  # 127.0.0.1 on another port: another origin, the same site
        assert attacker_url != dev.url
        outcomes = run_attack(chromium, attacker_url + "/")
    assert len(outcomes) == 8, outcomes
    for sent in outcomes[:-1]:  # no-cors: the browser sent them and shows the page nothing of the answer
        assert sent.get("type") == "opaque" and sent["body"] == "", sent
    assert "error" in outcomes[-1], outcomes[-1]  # the cors read: no CORS header, nothing readable
    assert dev.routed == []  # type: ignore[attr-defined]  # refused before the router, every one
    untouched(dev)


def test_a_dns_rebound_page_is_refused_though_the_browser_thinks_it_same_origin(dev: DevServer,
                                                                                chromium: Browser) -> None:
    origin = f"http://rebound.test:{dev.port}"
    page = ATTACK % {"dev": json.dumps(origin), "mode": '"same-origin"', "evil": json.dumps(EVIL)}
    context = chromium.new_context()
    try:
        tab = context.new_page()
        # the attacker's server answered the page before the name was re-pointed at 127.0.0.1
        tab.route(origin + "/", lambda route: route.fulfill(status=200, content_type="text/html", body=page))
        tab.goto(origin + "/")
        tab.wait_for_function("window.done === true", timeout=20000)
        outcomes: list[dict[str, Any]] = tab.evaluate("window.outcomes")
    finally:
        context.close()
    assert len(outcomes) == 8, outcomes
    for sent in outcomes[:-1]:  # same-origin to the browser: it reads the answer, which is a refusal
        assert sent.get("status") == 421, sent
        assert json.loads(sent["body"])["error"]["code"] == "MISDIRECTED"
    assert dev.routed == []  # type: ignore[attr-defined]
    untouched(dev)
