"""The chaos harness imports the integration suite's moto helpers (tests/integration) itself;
this file prints the CPU time per seed at the end of a run that ran seeds."""

from __future__ import annotations

import sys
from typing import Any


def pytest_terminal_summary(terminalreporter: Any) -> None:
    module = sys.modules.get("test_delivery_chaos")
    times = getattr(module, "TIMES", None)
    if times:
        mean = sum(times) / len(times)
        terminalreporter.write_line(f"delivery chaos: {len(times)} seeds, {mean:.2f}s of CPU per seed, "
                                    f"{sum(times):.0f}s in all")
