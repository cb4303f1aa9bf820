"""What every console browser test module shares: Debian's Chromium for pytest-playwright, a page
that fails its test on any dialog or script error, and screenshots under test-artifacts/console/."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.e2e.console_stack import ARTIFACTS, chromium_path

__all__ = ["browser_context_args", "browser_type_launch_args", "page"]


@pytest.fixture(scope="session")
def browser_type_launch_args() -> dict[str, Any]:
    return {"executable_path": chromium_path(), "args": ["--no-sandbox", "--disable-gpu"]}


@pytest.fixture(scope="session")
def browser_context_args() -> dict[str, Any]:
    return {"viewport": {"width": 1360, "height": 1000}}


@pytest.fixture
def page(page: Page) -> Iterator[Page]:
    """Every test's page records dialogs and script errors; none may happen."""
    page.dialogs = []  # type: ignore[attr-defined]
    page.errors = []  # type: ignore[attr-defined]
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))  # type: ignore[attr-defined]
    page.on("pageerror", lambda e: page.errors.append(str(e)))  # type: ignore[attr-defined]
    yield page
    assert page.dialogs == [] and page.errors == []  # type: ignore[attr-defined]


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
