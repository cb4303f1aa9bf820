"""The built-in HTTP task: off by default, allow-list, no internal addresses, status -> error mapping."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from orbit.aws.httptask import HttpConfig, call, vet_addresses
from orbit.core.history.events import TaskError

PUBLIC = HttpConfig(enabled=True, allowed_hosts=("api.example.com", "*.hooks.example.com"))


def fake_dns(monkeypatch: pytest.MonkeyPatch, *addresses: str) -> None:
    def getaddrinfo(host: str, port: int, *args: Any, **kw: Any) -> list[Any]:
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
                for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def code_of(request: dict[str, Any], config: HttpConfig) -> tuple[str, bool]:
    with pytest.raises(TaskError) as info:
        call(request, config)
    return info.value.code, info.value.retryable


def test_disabled_by_default() -> None:
    config = HttpConfig.from_env({})
    assert config.enabled is False
    assert code_of({"url": "https://api.example.com/"}, config) == ("ADAPTER_DISABLED", False)


def test_refusals_say_how_to_turn_the_task_on_in_a_stack_and_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TaskError) as info:
        call({"url": "https://api.example.com/"}, HttpConfig.from_env({}))
    assert info.value.message == (
        "the built-in HTTP task is disabled in this deployment: set the template parameter "
        "HttpTaskEnabled=true (environment ORBIT_HTTP_ENABLED of the HTTP task function; "
        "locally: orbit run or orbit dev --parameter HttpTaskEnabled=true)"
    )
    fake_dns(monkeypatch, "93.184.216.34")
    with pytest.raises(TaskError) as info:
        call({"url": "https://evil.example.net/"}, PUBLIC)
    assert info.value.message == (
        "host 'evil.example.net' is not allowed: add it to the template parameter HttpAllowedHosts "
        "(environment ORBIT_HTTP_ALLOWED_HOSTS; locally: orbit run or orbit dev "
        "--parameter HttpAllowedHosts=api.example.com,*.hooks.example.com,evil.example.net)"
    )


def test_host_must_be_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dns(monkeypatch, "93.184.216.34")
    assert code_of({"url": "https://evil.example.net/"}, PUBLIC) == ("ADAPTER_DISABLED", False)
    assert code_of({"url": "https://hooks.example.com.evil.net/"}, PUBLIC) == ("ADAPTER_DISABLED", False)
    assert PUBLIC.host_allowed("a.hooks.example.com") and not PUBLIC.host_allowed("hooks.example.com")


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "172.16.0.9", "192.168.1.1", "169.254.169.254",
                                     "100.100.100.200", "0.0.0.0", "::1", "fe80::1", "fd00:ec2::254",
                                     "::ffff:127.0.0.1", "224.0.0.1"])
def test_internal_addresses_are_refused_after_resolution(monkeypatch: pytest.MonkeyPatch,
                                                         address: str) -> None:
    fake_dns(monkeypatch, "93.184.216.34", address)  # one bad answer among good ones is enough
    with pytest.raises(TaskError) as info:
        vet_addresses("api.example.com", 443, PUBLIC)
    assert info.value.code == "ADAPTER_DISABLED" and address in info.value.message
    assert "template parameter HttpPrivateHosts" in info.value.message


def test_private_hosts_can_be_allowed_explicitly(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dns(monkeypatch, "10.1.2.3")
    config = HttpConfig(enabled=True, allowed_hosts=("svc.internal",), private_hosts=("svc.internal",))
    assert vet_addresses("svc.internal", 80, config) == ["10.1.2.3"]


@pytest.fixture
def server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"null")
            status = int(self.path.split("?")[0].rsplit("/", 1)[-1])
            payload = json.dumps({"echo": body, "path": self.path, "host": self.headers["host"]}).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://localhost:{httpd.server_address[1]}"
    httpd.shutdown()


def test_real_request_and_status_mapping(server: str) -> None:
    local = HttpConfig(enabled=True, allowed_hosts=("localhost",), private_hosts=("localhost",))
    request = {"method": "POST", "url": f"{server}/status/200", "body": {"a": 1}, "query": {"q": "x"}}
    out = call(request, local)
    assert out["status"] == 200 and out["body"]["echo"] == {"a": 1}
    assert out["body"]["path"] == "/status/200?q=x" and out["body"]["host"].startswith("localhost")
    assert code_of({"method": "POST", "url": f"{server}/status/503"}, local) == ("HTTP_ERROR", True)
    assert code_of({"method": "POST", "url": f"{server}/status/429"}, local) == ("HTTP_ERROR", True)
    assert code_of({"method": "POST", "url": f"{server}/status/404"}, local) == ("HTTP_ERROR", False)
    with pytest.raises(TaskError) as info:
        call({"method": "POST", "url": f"{server}/status/422", "body": {}}, local)
    assert info.value.details["status"] == 422  # the answer travels with the error


def test_loopback_is_refused_without_the_explicit_allowance(server: str) -> None:
    config = HttpConfig(enabled=True, allowed_hosts=("localhost",))
    assert code_of({"method": "POST", "url": f"{server}/status/200"}, config) == ("ADAPTER_DISABLED", False)
