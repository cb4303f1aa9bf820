"""`orbit events put` against `orbit dev` (docs/triggers.md): the event goes on the local EventBridge,
the trigger's rule matches it and the execution it names starts; a second event for the same order
signals the same execution; an event no pattern matches starts nothing."""

from __future__ import annotations

import json
import time

from orbit.client import Client

from tests.e2e.conftest import orbit_cli, orbit_dev


def _wait(client: Client, ok, timeout_s: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while True:
        got = client.list(workflow="order-events")["executions"]
        if ok(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def test_orbit_events_put_starts_and_signals_through_the_local_eventbridge() -> None:
    with orbit_dev("examples/triggers/order_events.yaml") as (url, _lines):
        client = Client(url)
        put = orbit_cli(
            "events",
            "put",
            "--url",
            url,
            "--bus",
            "default",
            "--source",
            "shop",
            "--detail-type",
            "OrderPlaced",
            "--detail",
            json.dumps({"order_id": "A1", "total": 30}),
        )
        assert put.returncode == 0, put.stderr
        assert put.stdout.startswith("event ") and "put on bus default" in put.stdout
        got = _wait(client, lambda rows: len(rows) == 1)
        assert [r["execution_id"] for r in got] == ["order-A1"]
        for sku in ("mug", "kettle"):
            put = orbit_cli(
                "events",
                "put",
                "--url",
                url,
                "--source",
                "shop",
                "--detail-type",
                "ItemAdded",
                "--detail",
                json.dumps({"order_id": "A1", "sku": sku}),
                "--json",
            )
            assert put.returncode == 0 and json.loads(put.stdout)["event_id"], put.stderr
        nothing = orbit_cli(
            "events",
            "put",
            "--url",
            url,
            "--source",
            "elsewhere",
            "--detail-type",
            "OrderPlaced",
            "--detail",
            json.dumps({"order_id": "B2", "total": 5}),
        )
        assert nothing.returncode == 0
        deadline = time.monotonic() + 30
        while True:
            items = [e["payload"] for e in client.history("order-A1") if e["type"] == "SignalReceived"]
            if len(items) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert items == ["mug", "kettle"]
        assert [r["execution_id"] for r in _wait(client, lambda rows: False, 1.0)] == ["order-A1"]
        bad = orbit_cli("events", "put", "--url", url, "--detail-type", "X", "--detail", "[1]")
        assert bad.returncode != 0 and "--detail" in bad.stderr and "Traceback" not in bad.stderr
