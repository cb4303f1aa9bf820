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


def test_a_signed_webhook_over_orbit_devs_http_starts_and_an_unsigned_one_is_401(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import re
    import urllib.error
    import urllib.request

    import boto3
    from orbit.service.webhooks import sign

    spec = tmp_path / "paid.yaml"
    spec.write_text(
        json.dumps(
            {
                "orbit": 1,
                "name": "paid",
                "version": "1",
                "steps": {"a": {"compute": "{% input %}"}},
                "output": "{% steps.a.output %}",
                "triggers": {
                    "stripe": {
                        "webhook": {"secret": "orbit/webhooks/stripe"},
                        "id": "{% 'pay-' & body.id %}",
                        "input": "{% body.amount %}",
                    }
                },
            }
        )
    )
    with orbit_dev(str(spec)) as (url, lines):
        endpoint = re.search(r"AWS emulator on (http://\S+)\)", "".join(lines)).group(1)
        boto3.client(
            "secretsmanager",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
        ).create_secret(Name="orbit/webhooks/stripe", SecretString="whsec")
        raw = json.dumps({"id": "p1", "amount": 12}).encode()

        def post(headers: dict[str, str]) -> tuple[int, dict]:  # type: ignore[type-arg]
            req = urllib.request.Request(
                f"{url}/webhooks/paid/stripe",
                data=raw,
                method="POST",
                headers={"Content-Type": "application/json", **headers},
            )
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as e:
                return e.code, json.loads(e.read())

        assert post({})[0] == 401
        assert post({"X-Orbit-Signature": sign(b"wrong", raw)})[0] == 401
        client = Client(url)
        assert client.list(workflow="paid")["executions"] == []
        assert post({"X-Orbit-Signature": sign(b"whsec", raw)}) == (
            202,
            {"status": "started", "execution_id": "pay-p1"},
        )
        deadline = time.monotonic() + 30
        while client.describe("pay-p1")["status"] != "COMPLETED" and time.monotonic() < deadline:
            time.sleep(0.2)
        assert client.describe("pay-p1")["output"] == 12
