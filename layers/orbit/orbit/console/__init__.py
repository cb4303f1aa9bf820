"""The web console: `orbit ui` and `orbit dev` serve it (see docs/console.md)."""

from orbit.console.server import ConsoleApp, client_backend, mount_on, serve_console

__all__ = ["ConsoleApp", "client_backend", "mount_on", "serve_console"]
