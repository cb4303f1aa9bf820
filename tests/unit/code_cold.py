"""A pytest plugin (`-p code_cold`): every `code_harness.Harness` replays each decision cold.

The engine gets a `CodeRuntime(cache_size=0)` of its own, so no paused workflow instance outlives
a decision: a scenario that passes so shows that no decision depends on what an earlier one left
in memory (issue 24). `test_code_cold_scenarios.py` runs the code-workflow scenarios with it; the
summary line `cold decisions: N harnesses, M replays, 0 warm` shows it took effect.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

HARNESSES: list[Any] = []


@pytest.fixture(autouse=True)
def _cold_code_harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # imported under two names (`code_harness`, `tests.unit.code_harness`): two classes
    for name in ("code_harness", "tests.unit.code_harness"):
        module = sys.modules.get(name)
        if module is None:
            continue
        cls = module.Harness
        monkeypatch.setattr(cls, "code_cache_size", 0)
        init = cls.__init__

        def counted(self: Any, *args: Any, __init: Any = init, **kwargs: Any) -> None:
            __init(self, *args, **kwargs)
            HARNESSES.append(self)

        monkeypatch.setattr(cls, "__init__", counted)
    yield


def pytest_terminal_summary(terminalreporter: Any) -> None:
    runtimes = [h.engine.code_runtime for h in HARNESSES]
    cold = sum(rt.stats["cold"] for rt in runtimes if rt is not None)
    warm = sum(rt.stats["warm"] for rt in runtimes if rt is not None)
    shared = sum(rt is None for rt in runtimes)
    terminalreporter.write_line(f"cold decisions: {len(runtimes)} harnesses, {cold} replays, {warm} warm, "
                                f"{shared} on the process runtime")
