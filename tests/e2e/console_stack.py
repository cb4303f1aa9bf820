"""The local stack, `orbit dev`'s server and `orbit ui`'s server for the console's browser tests, and
the system Chromium that Playwright drives (Playwright's own browser download is not used)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orbit.client import Client
from orbit.console.server import ConsoleApp, ConsoleServer, client_backend, mount_on
from orbit.local import LocalStack, load_workers
from orbit.local.devserver import DevServer

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "console"
XSS = '<script>alert("x")</script><img src=x onerror="alert(1)">'


def chromium_path() -> str:
    """Debian's chromium (`apt-get install chromium`, done by `make test`); $ORBIT_CHROMIUM overrides."""
    found = os.environ.get("ORBIT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise RuntimeError("no chromium on PATH: `apt-get install chromium` (make test installs it)")
    return found


@dataclass
class Consoles:
    stack: LocalStack
    dev: DevServer
    ui: ConsoleServer
    client: Client
    ids: dict[str, str]
    dev_console: ConsoleApp | None = None

    def wait_status(self, eid: str, statuses: tuple[str, ...], timeout_s: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            d = self.client.describe(eid)
            if d["status"] in statuses or time.monotonic() > deadline:
                return d
            time.sleep(0.1)

    def wait_waiting(self, eid: str, step: str, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            events = self.client.history(eid)
            if any(e["type"] == "WaitStarted" and step in e.get("step", "") for e in events):
                return
            time.sleep(0.1)
        raise AssertionError(f"{eid} never waited at {step}")


@contextmanager
def consoles() -> Iterator[Consoles]:
    """Order sagas on a running local stack: completed, failed with compensation, two waiting for
    the approval signal (one with an XSS attempt in its input), one to cancel; and the code saga."""
    with LocalStack(workers=[str(ROOT / "examples/workers/orders.py")], mode="server") as stack:
        stack.register(ROOT / "examples/order_fulfilment.yaml")
        stack.register(load_workers(str(ROOT / "examples/code/order_saga.py")).order_saga)
        dev = DevServer(stack, 0)
        thread = threading.Thread(target=dev.serve_forever, daemon=True)
        thread.start()
        client = Client(url=dev.url)
        ui = ConsoleServer(client_backend(client), port=0, target=dev.url).start()
        mounted = mount_on(dev)  # as `orbit dev` serves it
        try:
            c = _started(stack, dev, ui, client)
            c.dev_console = mounted
            yield c
        finally:
            ui.stop()
            dev.httpd.shutdown()
            thread.join(timeout=10)


def _started(stack: LocalStack, dev: DevServer, ui: ConsoleServer, client: Client) -> Consoles:
    """Starts the executions and brings each to where the tests want it."""
    order = json.loads((ROOT / "examples/inputs/order.json").read_text())
    inputs = {
        "ok": order,
        "declined": {**order, "card": "tok_declined"},
        "waiting": order,
        "xss": {**order, "order_id": XSS},
        "cancel": order,
    }
    ids = {k: client.start("order-fulfilment", v, id=f"order-{k}")["id"] for k, v in inputs.items()}
    ids["code"] = client.start("order-fulfilment-code", order, id="code-order")["id"]
    c = Consoles(stack, dev, ui, client, ids)
    for key in ("ok", "declined", "code"):
        c.wait_waiting(ids[key], "approval")
        client.signal(ids[key], "approval", {"approved": True, "by": "ada"})
    c.wait_status(ids["ok"], ("COMPLETED",))
    c.wait_status(ids["declined"], ("FAILED",))
    c.wait_status(ids["code"], ("COMPLETED",))
    for key in ("waiting", "xss", "cancel"):
        c.wait_waiting(ids[key], "approval")
    return c
