"""Who may talk to a server on this machine: `orbit dev` and `orbit ui` answer only their own pages
and non-browser clients (docs/security.md, "Local servers: Host, Origin and content type").

A web page the developer has open elsewhere can send requests to a loopback port. The browser
lets it send (not read) a "simple" cross-origin request: a POST with `text/plain` and
`mode: "no-cors"`, which skips the CORS preflight. A page on a name that the attacker re-points at
127.0.0.1 (DNS rebinding) is even same-origin to the browser. So every request, on every route,
must pass three checks before anything is routed:

- `Host` names the address served: localhost, 127.0.0.1 or [::1] with the served port, or the
  explicit bind address (a rebound name is refused);
- `Origin`, when the browser sends one, is this server's own origin (`http://` + `Host`), and
  `Sec-Fetch-Site` (sent by browsers since 2020) is not `cross-site` or `same-site`, save for
  the user's own navigation to a page (a link to the console);
- a mutating request (POST, PUT, PATCH, DELETE) with a body says `Content-Type:
  application/json`: a cross-origin page cannot send that without a preflight, which we never
  answer with CORS headers.

Clients that are not browsers (the CLI, `orbit.Client`, boto, curl) send no `Origin` and pass.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "")
MUTATING = ("POST", "PUT", "PATCH", "DELETE")


@dataclass(frozen=True)
class Refusal:
    status: int
    code: str
    message: str

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


@dataclass(frozen=True)
class ServedHosts:
    """The `Host` values a server bound to `bind` on `port` answers."""

    port: int
    bind: str = "127.0.0.1"

    def names(self) -> list[str]:
        named = [*LOOPBACK_NAMES]
        bind = _bracketed(self.bind)
        if self.bind not in WILDCARDS and bind not in named:
            named.append(bind)
        if self.bind in WILDCARDS:  # every address of this machine: its names too
            for name in {socket.gethostname(), socket.getfqdn()}:
                if name and name not in named:
                    named.append(name.lower())
        return named

    def allows(self, host: str) -> bool:
        host = host.strip().lower()
        name, _, port = host.rpartition(":")
        if not name or port != str(self.port):
            return False
        if name in self.names():
            return True
        # Bound to every address: an IP literal cannot be a rebound name (a page whose origin is an
        # IP address of this machine is this server's own page).
        return self.bind in WILDCARDS and _ip_literal(name)

    def describe(self) -> str:
        return ", ".join(f"{n}:{self.port}" for n in self.names()) + (
            f", or any IP address of this machine with port {self.port}" if self.bind in WILDCARDS else "")


def refusal(method: str, headers: Mapping[str, str] | Any, served: ServedHosts,
            has_body: bool) -> Refusal | None:
    """Why this request must not be served (one line), or None. `headers` reads case-insensitively
    (an `http.client.HTTPMessage`) or has lower-case keys."""
    host = (headers.get("host") or "").strip()
    if not host:
        return Refusal(400, "BAD_HOST", "the request has no Host header; send "
                       f"Host: 127.0.0.1:{served.port}")
    if not served.allows(host):
        return Refusal(421, "MISDIRECTED", f"Host {host!r} is not an address this server answers "
                       f"({served.describe()}); a page on another name is refused (DNS rebinding)")
    origin = headers.get("origin")
    if origin is not None:
        parts = urlsplit(origin.strip())
        if origin.strip().lower() == "null" or parts.scheme != "http" or parts.netloc.lower() != host.lower():
            return Refusal(403, "CROSS_ORIGIN", f"cross-origin request from Origin {origin!r} refused; "
                           f"only pages of http://{host} may call this server")
    site = (headers.get("sec-fetch-site") or "").strip().lower()
    navigating = method == "GET" and (headers.get("sec-fetch-mode") or "").strip().lower() == "navigate"
    if site in ("cross-site", "same-site") and not navigating:
        return Refusal(403, "CROSS_ORIGIN", f"request from another site refused (Sec-Fetch-Site: {site}); "
                       f"only pages of http://{host} may call this server")
    # A SigV4-signed request (an AWS SDK's, e.g. the durable functions' Lambda API: binary Invoke
    # payloads) may carry any body: a page cannot send an Authorization header to another origin
    # without a CORS preflight, which this server never grants.
    signed = (headers.get("authorization") or "").startswith("AWS4-HMAC-SHA256 ")
    if method.upper() in MUTATING and has_body and not signed:
        ctype = (headers.get("content-type") or "").split(";", 1)[0].strip().lower()
        if ctype != "application/json":
            shown = headers.get("content-type")
            return Refusal(415, "UNSUPPORTED_MEDIA_TYPE",
                           f"{method.upper()} bodies must be Content-Type: application/json, not "
                           f"{shown!r}" if shown else f"{method.upper()} bodies must be sent with "
                           "Content-Type: application/json")
    return None


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host.lower()


def _ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") and name.endswith("]") else name)
    except ValueError:
        return False
    return True
