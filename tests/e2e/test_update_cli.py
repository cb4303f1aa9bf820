"""Updates through `orbit dev`'s HTTP server: orbit.Client.update, the `orbit update` CLI (its
result, a refusal as one line, an ended execution), and `orbit schedule update`."""

from __future__ import annotations

import json
import threading

import orbit
import pytest
from orbit.client import ApiError, Client
from orbit.errors import UpdateFailed
from orbit.local import LocalStack
from orbit.local.devserver import DevServer

QUICK = {"orbit": 1, "name": "upd-quick", "version": "1", "steps": {"done": {"compute": "{% input %}"}}}


@orbit.workflow("upd-counter", version="1")
def counter(ctx, input):
    total = {"n": 0}

    def add(by):
        total["n"] += by
        return total["n"]

    def positive(by):
        if not isinstance(by, int) or by <= 0:
            raise ValueError(f"by must be a positive integer, not {by!r}")

    ctx.update_handler("add", add, validator=positive)
    ctx.update_handler("boom", lambda _: {}["missing"])
    ctx.wait_for("stop")
    return total


@pytest.fixture(scope="module")
def server():
    with LocalStack(mode="inprocess") as st:
        st.register(QUICK)
        st.register(counter)
        dev = DevServer(st, port=0)
        t = threading.Thread(target=dev.serve_forever, daemon=True)
        t.start()
        yield dev
        dev.httpd.shutdown()
        t.join(timeout=10)


def test_client_update_waits_for_the_result_and_is_idempotent(server):
    c = Client(url=server.url)
    eid = c.start("upd-counter", {}, id="upd-c-1")["id"]
    assert c.update(eid, "add", 2) == 2  # the dev server pumps the queue while the request waits
    assert c.update(eid, "add", 3, update_id="same") == 5
    assert c.update(eid, "add", 3, update_id="same") == 5
    with pytest.raises(ApiError) as e:
        c.update(eid, "add", -1)
    assert e.value.status == 400
    assert e.value.body["error"]["message"] == "by must be a positive integer, not -1"
    with pytest.raises(UpdateFailed, match="KeyError") as failed:
        c.update(eid, "boom", None)
    assert failed.value.code == "UPDATE_FAILED"


def test_cli_update(server, cli):
    url = ["--url", server.url]
    eid = Client(url=server.url).start("upd-counter", {}, id="upd-cli-1")["id"]
    r = cli("update", eid, "add", "--input", "4", "--update-id", "cli-1", *url)
    assert r.returncode == 0 and json.loads(r.stdout) == 4, r.stderr
    r = cli("update", eid, "add", "--input", "4", "--update-id", "cli-1", *url)
    assert r.returncode == 0 and json.loads(r.stdout) == 4
    r = cli("update", eid, "add", "--input", "0", *url)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("by must be a positive integer, not 0"), r.stderr
    r = cli("update", eid, "nope", *url)
    assert r.returncode == 1 and "it declares: add, boom" in r.stderr
    Client(url=server.url).signal(eid, "stop", None)
    server.stack.run_until_idle()
    r = cli("update", eid, "add", "--input", "1", *url)
    assert r.returncode == 1 and "has already ended (COMPLETED)" in r.stderr
    r = cli("update", eid, "add", "--input", "4", "--update-id", "cli-1", *url)
    assert r.returncode == 0 and json.loads(r.stdout) == 4  # its id still answers its result


def test_cli_schedule_update_changes_only_the_named_fields(server, cli):
    url = ["--url", server.url]
    r = cli("schedule", "create", "upd-s", "upd-quick", "--cron", "30 2 * * *", "--timezone", "Europe/Paris",
            "--input", '{"a": 1}', "--overlap", "buffer_one", *url)
    assert r.returncode == 0, r.stderr
    r = cli("schedule", "update", "upd-s", "--cron", "0 3 * * MON", *url)
    assert r.returncode == 0 and "upd-s: upd-quick 0 3 * * MON [Europe/Paris] overlap=buffer_one" in r.stdout
    desc = Client(url=server.url).describe_schedule("upd-s")
    assert desc["input"] == {"a": 1} and desc["overlap"] == "buffer_one"
    r = cli("schedule", "update", "upd-s", "--every", "15m", "--input", '{"a": 2}', "--json", *url)
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["spec"]["every_ms"] == 900_000 and "cron" not in out["spec"]
    assert out["input"] == {"a": 2}
    r = cli("schedule", "update", "upd-s", *url)
    assert r.returncode == 2 and "name at least one field" in r.stderr
    r = cli("schedule", "update", "upd-s", "--timezone", "Nowhere/City", *url)
    assert r.returncode == 1 and "timezone" in r.stderr and "Traceback" not in r.stderr
    assert cli("schedule", "delete", "upd-s", *url).returncode == 0
