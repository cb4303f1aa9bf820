"""`orbit.testing.replay(history, workflow)`: does a recorded history replay on this code?

Use it in CI with histories exported by `orbit history ID --json` (or the golden
histories you keep), so a change that would park running executions fails the
build instead of the deploy:

    def test_running_orders_replay_on_this_code():
        for path in Path("histories").glob("*.json"):
            orbit.testing.replay(path, order_saga)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orbit.core.runtime.replay_check import Divergence, find_divergence, parse_history
from orbit.errors import NonDeterminismError, ValidationError


class ReplayDiverged(NonDeterminismError):
    """The history does not replay on the workflow; `.divergence` says where and how."""

    def __init__(self, divergence: Divergence) -> None:
        self.divergence = divergence
        self.details = divergence.details
        super().__init__(divergence.message)


def load_history(source: Any) -> Any:
    """A history from a path (a JSON file), JSON text, a list of events or a `{history: [...]}`."""
    if isinstance(source, Path) or (isinstance(source, str) and not source.lstrip().startswith(("[", "{"))):
        path = Path(source)
        if not path.is_file():
            raise ValidationError(f"file {path} not found", "history")
        source = path.read_text()
    if isinstance(source, (str, bytes)):
        try:
            return json.loads(source)
        except ValueError as e:
            raise ValidationError(f"not a history: not JSON ({e})", "history") from None
    return source


def replay(history: Any, workflow: Any) -> None:
    """Replay `history` through `workflow` (an @orbit.workflow function or a Definition).

    Returns None when it replays cleanly; raises `ReplayDiverged` naming the first divergence
    (recorded and requested call, the values that differ), or `ValidationError` when `history`
    is not a history.
    """
    records = parse_history(load_history(history))
    found = find_divergence(workflow, records)
    if found is not None:
        raise ReplayDiverged(found)
