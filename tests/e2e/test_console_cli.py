"""`orbit ui` as a user runs it, and the console's server in front of a deployed (signed) API."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest
from orbit.client import Client
from orbit.console.server import ConsoleServer, client_backend

from tests.e2e.conftest import ROOT
from tests.e2e.http_servers import Quiet, serve


def test_orbit_ui_prints_its_url_listens_on_loopback_and_says_when_the_api_is_unreachable() -> None:
    argv = [sys.executable, "-m", "orbit.cli", "ui", "--url", "http://127.0.0.1:9", "--port", "0"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("Orbit console: http://127.0.0.1:") and "/console/" in line, line
        url = line.split()[2]
        with urllib.request.urlopen(url) as resp:
            assert b'name="orbit-csrf"' in resp.read()
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(url + "api/executions")
        body = json.loads(info.value.read())
        assert info.value.code == 502 and body["error"]["code"] == "UNREACHABLE"
        assert "cannot reach the Orbit API at http://127.0.0.1:9" in body["error"]["message"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert "Traceback" not in proc.stderr.read()  # type: ignore[union-attr]


def test_the_server_signs_api_calls_and_the_browser_never_sees_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A deployed stack's API uses IAM auth: the console's server signs each call with SigV4 from
    the usual credential chain; what reaches the browser is the API's answer only."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDCONSOLETEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "console-secret-key")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "console-session-token")
    monkeypatch.delenv("AWS_SECURITY_TOKEN", raising=False)  # botocore reads it first (moto sets it)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    seen: list[dict[str, Any]] = []

    class Api(Quiet):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            seen.append(dict(self.headers))
            self.reply(200, json.dumps({"executions": [], "next_cursor": None}).encode())

    with serve(Api) as api_url:
        client = Client(url=api_url, region="eu-west-1", sign=True)
        ui = ConsoleServer(client_backend(client), port=0, target=api_url).start()
        try:
            with urllib.request.urlopen(ui.url + "api/executions?status=FAILED") as resp:
                raw = resp.read().decode()
                headers = str(resp.headers)
        finally:
            ui.stop()
    auth = seen[0]["Authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDCONSOLETEST/")
    assert "/eu-west-1/execute-api/" in auth
    assert seen[0]["X-Amz-Security-Token"] == "console-session-token"
    assert json.loads(raw) == {"executions": [], "next_cursor": None}
    for secret in ("AKIDCONSOLETEST", "console-secret-key", "console-session-token", "AWS4"):
        assert secret not in raw and secret not in headers
