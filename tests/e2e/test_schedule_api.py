"""Schedules through the HTTP API (orbit dev's server, the API function's router), orbit.Client and the
`orbit schedule` CLI."""

from __future__ import annotations

import threading

import pytest
from orbit.client import ApiError, Client
from orbit.core.schedule.times import format_time
from orbit.local import LocalStack, clock
from orbit.local.devserver import DevServer

QUICK = {"orbit": 1, "name": "api-quick", "version": "1", "steps": {"done": {"compute": "{% input %}"}},
         "queries": {"echo": "{% [steps.done.output, query] %}"}}


@pytest.fixture(scope="module")
def server():
    with LocalStack(mode="inprocess") as st:
        st.register(QUICK)
        dev = DevServer(st, port=0)
        t = threading.Thread(target=dev.serve_forever, daemon=True)
        t.start()
        yield dev
        dev.httpd.shutdown()
        t.join(timeout=10)


def test_client_operations(server):
    c = Client(url=server.url)
    d = c.create_schedule("api-hourly", "api-quick", {"x": 1}, cron="0 * * * *", timezone="Europe/Paris",
                          overlap="allow_all")
    assert d["id"] == "api-hourly" and len(d["next_occurrences"]) == 5
    assert c.describe_schedule("api-hourly")["spec"]["cron"] == "0 * * * *"
    assert [s["id"] for s in c.list_schedules()["schedules"]] == ["api-hourly"]
    assert c.pause_schedule("api-hourly", "why")["state"]["note"] == "why"
    assert not c.resume_schedule("api-hourly", "ok")["state"]["paused"]
    eid = c.trigger_schedule("api-hourly")
    assert eid and eid.startswith("api-hourly:")
    now = clock.now_ms()
    end = now - now % 3_600_000
    ids = c.backfill_schedule("api-hourly", format_time(end - 3 * 3_600_000), format_time(end))
    assert len(ids) == 3
    updated = c.update_schedule("api-hourly", {"workflow": "api-quick", "every": "30m"})
    assert updated["spec"]["every_ms"] == 1_800_000
    c.delete_schedule("api-hourly")
    with pytest.raises(ApiError) as e:
        c.describe_schedule("api-hourly")
    assert e.value.status == 404


def test_bad_input_is_a_400_naming_the_field(server):
    with pytest.raises(ApiError) as e:
        Client(url=server.url).create_schedule("bad", "api-quick", cron="0 9 * * *", timezone="Nowhere/City")
    assert e.value.status == 400
    assert e.value.body["error"]["problems"][0]["path"] == "timezone"
    with pytest.raises(ApiError) as e:
        Client(url=server.url).create_schedule("bad", "nope", every="1h")
    assert e.value.body["error"]["problems"][0]["path"] == "workflow"
    assert Client(url=server.url).list_schedules()["schedules"] == []


def test_cli(server, cli):
    url = ["--url", server.url]
    r = cli("schedule", "create", "cli-s", "api-quick", "--cron", "30 2 * * *", "--timezone", "Europe/Paris",
            "--input", '{"a": 1}', *url)
    assert r.returncode == 0, r.stderr
    assert "cli-s: api-quick 30 2 * * * [Europe/Paris]" in r.stdout
    r = cli("schedule", "list", *url)
    assert "cli-s" in r.stdout
    r = cli("schedule", "trigger", "cli-s", *url)
    assert r.returncode == 0 and r.stdout.startswith("cli-s:")
    r = cli("schedule", "pause", "cli-s", "--note", "hold", *url)
    assert "PAUSED - hold" in r.stdout
    r = cli("schedule", "describe", "cli-s", "--json", *url)
    assert '"paused": true' in r.stdout
    r = cli("schedule", "create", "cli-bad", "api-quick", "--cron", "0 9 * *", *url)
    assert r.returncode == 1 and "cron" in r.stderr and "Traceback" not in r.stderr
    assert cli("schedule", "delete", "cli-s", *url).returncode == 0


def test_query_through_client_and_cli(server, cli):
    c = Client(url=server.url)
    eid = c.start("api-quick", {"v": 1}, id="api-q-1")["id"]
    server.stack.run_until_idle()
    assert c.query(eid, "echo", {"x": 2}) == [{"v": 1}, {"x": 2}]
    with pytest.raises(ApiError) as e:
        c.query(eid, "nope")
    assert e.value.status == 400 and "it declares: echo" in e.value.body["error"]["message"]
    r = cli("query", eid, "echo", "--input", "3", "--url", server.url)
    assert r.returncode == 0 and '"v": 1' in r.stdout and "3" in r.stdout
    r = cli("query", eid, "nope", "--url", server.url)
    assert r.returncode == 1 and "it declares: echo" in r.stderr and "Traceback" not in r.stderr
