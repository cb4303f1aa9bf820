"""Helpers shared by the branch, scope, children, condition and hook tests of code workflows."""
from __future__ import annotations

from orbit.testing.replay import replay as deploy_check
from test_code_golden import replay

END = {"WorkflowCompleted", "WorkflowFailed", "WorkflowCancelled", "WorkflowTimedOut"}


def _clean(h, wf, id="ex-1"):
    """Cold replay at every prefix asks only for what history records (up to the end event:
    a late answer to a cancelled step may be recorded after it)."""
    history = h.history(id)
    last = max((i for i, e in enumerate(history) if e["type"] in END), default=len(history) - 1)
    assert replay(wf, history[:last + 1]) == []
    deploy_check(history[:last + 1], wf)  # one cold replay of the whole history ends as it ended


def echo(input, attempt):
    return input
