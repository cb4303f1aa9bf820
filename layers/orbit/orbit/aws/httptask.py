"""The built-in HTTP task (`orbit.http`, queue `http`): one request, `{status, headers, body}` back.

Safety, because a definition author chooses the URL:
- off unless the deployment enables it (`ORBIT_HTTP_ENABLED=true`), and only
  for hosts on the allow-list (`ORBIT_HTTP_ALLOWED_HOSTS`, `*.example.com`
  matches sub-domains): otherwise `ADAPTER_DISABLED`, not retried;
- the host is resolved once and every address is checked: private, loopback,
  link-local (which holds the instance metadata service 169.254.169.254),
  multicast, reserved and unspecified addresses are refused unless the host is
  listed in `ORBIT_HTTP_PRIVATE_HOSTS`; the connection then goes to the very
  address that was checked, so a DNS answer that changes between check and
  connect (rebinding) cannot smuggle a private address in;
- redirects are not followed (a 3xx is a non-2xx answer).
Non-2xx -> `HTTP_ERROR`, retryable for 429 and 5xx; network failures are retryable.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from orbit.core.history.events import TaskError

MAX_RESPONSE_BYTES = 50 * 1024 * 1024
DEFAULT_TIMEOUT_S = 30.0
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}


@dataclass(frozen=True)
class HttpConfig:
    enabled: bool = False
    allowed_hosts: tuple[str, ...] = ()
    private_hosts: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> HttpConfig:
        def hosts(name: str) -> tuple[str, ...]:
            return tuple(h.strip().lower() for h in env.get(name, "").split(",") if h.strip())

        return cls(env.get("ORBIT_HTTP_ENABLED", "false").strip().lower() == "true",
                   hosts("ORBIT_HTTP_ALLOWED_HOSTS"), hosts("ORBIT_HTTP_PRIVATE_HOSTS"))

    def host_allowed(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return any(host == h or (h.startswith("*.") and host.endswith(h[1:])) for h in self.allowed_hosts)


def _refused(message: str) -> TaskError:
    return TaskError("ADAPTER_DISABLED", message, retryable=False)


def vet_addresses(host: str, port: int, config: HttpConfig) -> list[str]:
    """Resolve `host` and return its addresses, refusing any internal one unless allowed."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise TaskError("HTTP_ERROR", f"cannot resolve {host!r}: {e}", retryable=True) from None
    addresses = sorted({str(info[4][0]) for info in infos})
    if host.lower() in config.private_hosts:
        return addresses
    for a in addresses:
        ip = ipaddress.ip_address(a.split("%", 1)[0])
        if ip in _METADATA or not ip.is_global or ip.is_multicast:
            raise _refused(f"host {host!r} resolves to {a}, an internal address; list it in the template "
                           "parameter HttpPrivateHosts (environment ORBIT_HTTP_PRIVATE_HOSTS) to allow it")
    return addresses


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to a vetted address while sending the original Host header."""

    def __init__(self, host: str, address: str, port: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, address: str, port: int, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def call(request: Any, config: HttpConfig) -> dict[str, Any]:
    """Perform the request described by a step's `http` block (already evaluated)."""
    if not config.enabled:
        raise _refused(
            "the built-in HTTP task is disabled in this deployment: set the template parameter "
            "HttpTaskEnabled=true (environment ORBIT_HTTP_ENABLED of the HTTP task function; "
            "locally: orbit run or orbit dev --parameter HttpTaskEnabled=true)"
        )
    if not isinstance(request, dict) or not isinstance(request.get("url"), str):
        raise TaskError("HTTP_ERROR", "http step needs an object with a string `url`", retryable=False)
    url = urlsplit(request["url"])
    if url.scheme not in ("http", "https") or not url.hostname:
        raise TaskError("HTTP_ERROR", f"unsupported URL {request['url']!r} (http or https only)",
                        retryable=False)
    host = url.hostname
    if not config.host_allowed(host):
        hosts = ",".join((*config.allowed_hosts, host))  # the parameter replaces the list: keep the others
        raise _refused(
            f"host {host!r} is not allowed: add it to the template parameter HttpAllowedHosts "
            "(environment ORBIT_HTTP_ALLOWED_HOSTS; locally: orbit run or orbit dev "
            f"--parameter HttpAllowedHosts={hosts})"
        )
    port = url.port or (443 if url.scheme == "https" else 80)
    address = vet_addresses(host, port, config)[0]
    method = str(request.get("method", "GET")).upper()
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    if request.get("query"):
        path += ("&" if "?" in path else "?") + urlencode(request["query"], doseq=True)
    headers = {str(k): str(v) for k, v in (request.get("headers") or {}).items()}
    body = request.get("body")
    data: bytes | None = None
    if body is not None:
        if isinstance(body, (bytes, str)):
            data = body.encode() if isinstance(body, str) else body
        else:
            data = json.dumps(body).encode()
            headers.setdefault("Content-Type", "application/json")
    timeout = _timeout_s(request.get("timeout"))
    conn_cls = _PinnedHTTPSConnection if url.scheme == "https" else _PinnedHTTPConnection
    conn = conn_cls(host, address, port, timeout)
    try:
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        raw = resp.read(MAX_RESPONSE_BYTES + 1)
        status, resp_headers = resp.status, {k.lower(): v for k, v in resp.getheaders()}
    except (OSError, http.client.HTTPException) as e:
        raise TaskError("HTTP_ERROR", f"{method} {request['url']}: {type(e).__name__}: {e}",
                        retryable=True) from None
    finally:
        conn.close()
    if len(raw) > MAX_RESPONSE_BYTES:
        raise TaskError("HTTP_ERROR", f"{method} {request['url']}: response larger than "
                        f"{MAX_RESPONSE_BYTES} bytes; refusing rather than truncating", retryable=False)
    output = {"status": status, "headers": resp_headers, "body": _decode(raw, resp_headers)}
    if not 200 <= status < 300:
        raise TaskError("HTTP_ERROR", f"{method} {request['url']} answered {status}",
                        retryable=status == 429 or status >= 500, details=output)
    return output


def _timeout_s(value: Any) -> float:
    if value is None:
        return DEFAULT_TIMEOUT_S
    if isinstance(value, (int, float)):
        return float(value) / 1000.0  # durations travel as ms
    from orbit.core.definition import parse_duration

    return parse_duration(value) / 1000.0


def _decode(raw: bytes, headers: Mapping[str, str]) -> Any:
    text = raw.decode("utf-8", errors="replace")
    if "json" in headers.get("content-type", ""):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text
