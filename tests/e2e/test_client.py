"""orbit.Client: SigV4-signed requests for deployed stacks, plain ones for loopback, --stack lookup."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws
from orbit.client import ApiError, Client, stack_api_url

from tests.e2e.http_servers import Quiet, serve


@pytest.fixture
def recorder():
    seen: list[dict] = []

    class Rec(Quiet):
        def _answer(self):
            seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                         "body": self.read_body().decode()})
            missing = "missing" in self.path
            body = {"error": {"code": "NOT_FOUND", "message": "no such execution"}} if missing else \
                {"id": "e-1", "status": "RUNNING"}
            self.reply(404 if missing else 200, json.dumps(body).encode())

        do_GET = do_POST = _answer  # noqa: N815

    with serve(Rec) as url:
        yield url, seen


def test_loopback_requests_are_not_signed(recorder):
    url, seen = recorder
    Client(url=url).start("wf", {"a": 1}, id="e-1")
    assert seen[0]["method"] == "POST" and seen[0]["path"] == "/executions"
    assert json.loads(seen[0]["body"]) == {"workflow": "wf", "input": {"a": 1}, "id": "e-1"}
    assert "Authorization" not in seen[0]["headers"]


def test_deployed_stack_requests_are_sigv4_signed(recorder, monkeypatch):
    url, seen = recorder
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    Client(url=url, region="eu-west-1", sign=True).signal("e 1", "approval", {"ok": True})
    auth = seen[0]["headers"]["Authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request" in auth
    assert seen[0]["path"] == "/executions/e%201/signals/approval"
    assert Client(url="https://abc.execute-api.us-east-1.amazonaws.com").sign is True


def test_api_errors_carry_status_and_code(recorder):
    url, _ = recorder
    with pytest.raises(ApiError, match="HTTP 404: NOT_FOUND: no such execution") as err:
        Client(url=url).describe("missing")
    assert err.value.status == 404


@mock_aws
def test_stack_name_resolves_the_api_url_output():
    cfn = boto3.client("cloudformation", region_name="us-east-1")
    template = {
        "Resources": {"Q": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"ApiUrl": {"Value": "https://abc123.execute-api.us-east-1.amazonaws.com"}},
    }
    cfn.create_stack(StackName="orbit-prod", TemplateBody=json.dumps(template))
    assert stack_api_url("orbit-prod", "us-east-1") == "https://abc123.execute-api.us-east-1.amazonaws.com"
    with pytest.raises(Exception, match="cannot read stack 'nope'"):
        stack_api_url("nope", "us-east-1")


def test_a_url_that_is_not_http_is_refused_up_front():
    from orbit.errors import OrbitError

    for bad in ("notaurl", "ftp://x/y", "http://"):
        with pytest.raises(OrbitError, match="not an http"):
            Client(url=bad)


@pytest.fixture
def flaky():
    """An API that dies (HTTP 503, then a dropped connection) before answering the third try."""
    seen: list[dict] = []

    class Flaky(Quiet):
        def do_POST(self):  # noqa: N802
            seen.append({"path": self.path, "body": json.loads(self.read_body() or b"null")})
            if len(seen) == 2:  # the connection drops: no answer at all
                self.close_connection = True
                self.wfile.flush()
                self.connection.shutdown(2)
                return
            if len(seen) == 1:
                self.reply(503, json.dumps({"message": "down"}).encode())
            else:
                self.reply(201, json.dumps({"id": seen[-1]["body"].get("id")}).encode())

    with serve(Flaky) as url:
        yield url, seen


def test_a_start_without_an_id_is_retried_under_the_id_the_client_chose(flaky):
    url, seen = flaky
    got = Client(url=url, backoff_s=0.01).start("wf", {"a": 1})
    ids = [s["body"]["id"] for s in seen]
    assert len(seen) == 3 and len(set(ids)) == 1 and ids[0].startswith("wf-")
    assert got == {"id": ids[0]}  # the same execution each time: a lost answer never starts two


def test_a_signal_is_retried_under_one_signal_id(flaky):
    url, seen = flaky
    Client(url=url, backoff_s=0.01).signal("e-1", "go", {"ok": True})
    ids = {s["body"]["id"] for s in seen}
    assert len(seen) == 3 and len(ids) == 1
    # the engine records it as `signal:<id>`: the id itself has no prefix (no `signal:signal:...`)
    chosen = next(iter(ids))
    assert len(chosen) == 32 and not chosen.startswith("signal:")


def test_a_client_error_is_not_retried(recorder):
    url, seen = recorder
    with pytest.raises(ApiError):
        Client(url=url, backoff_s=0.01).describe("missing")
    assert len(seen) == 1


def test_retries_give_up_after_the_last_attempt(flaky):
    url, seen = flaky
    with pytest.raises(ApiError, match="HTTP 503"):
        Client(url=url, attempts=1).start("wf", {}, id="e-9")
    assert len(seen) == 1


def test_unpark_posts_to_the_execution(recorder):
    url, seen = recorder
    Client(url=url).unpark("e 1")
    assert seen[-1]["method"] == "POST" and seen[-1]["path"] == "/executions/e%201/unpark"


def test_pause_and_unpause_post_to_the_execution(recorder):
    url, seen = recorder
    Client(url=url).pause("e 1", "outage")
    assert seen[-1]["method"] == "POST" and seen[-1]["path"] == "/executions/e%201/pause"
    Client(url=url).unpause("e 1")
    assert seen[-1]["path"] == "/executions/e%201/unpause"
