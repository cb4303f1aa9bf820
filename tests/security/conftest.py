from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.security.harness import DevProcess


@pytest.fixture(scope="session")
def dev() -> Iterator[DevProcess]:
    """A real `orbit dev` in a child process, one per test session (per xdist worker)."""
    server = DevProcess()
    try:
        yield server
    finally:
        server.stop()
