"""Code-workflow scenarios of the crash matrix: a deploy that switches the build, and a deploy that
parks the execution until compatible code is deployed again and `orbit unpark` is called.

A deploy changes the code the functions run (the process-wide code registry), not any AWS
resource, so it makes no call the crash matrix could crash at; what it causes (the
BuildSwitched commit, the park, the un-park message and its commit) does.
"""

from __future__ import annotations

from typing import Any

import orbit
from crash_world import Scenario
from orbit.workflow import REGISTRY, CodeRegistry

_HELD: list[Any] = []
NAME = "crashmx-code"
UNITS = ("1.crashmx.double", "2.wait_for(approval)", "3.again")


def v1(ctx: Any, input: Any) -> Any:
    a = ctx.step("crashmx.double", {"v": input["v"]})
    by = ctx.wait_for("approval")
    b = ctx.step("crashmx.double", {"v": a["v2"]}, name="again")
    return {"a": a["v2"], "b": b["v2"], "by": by["by"]}


def v1_comment(ctx: Any, input: Any) -> Any:
    # the deploy edits only this comment
    a = ctx.step("crashmx.double", {"v": input["v"]})
    by = ctx.wait_for("approval")
    b = ctx.step("crashmx.double", {"v": a["v2"]}, name="again")
    return {"a": a["v2"], "b": b["v2"], "by": by["by"]}


def reordered(ctx: Any, input: Any) -> Any:
    by = ctx.wait_for("approval")
    a = ctx.step("crashmx.double", {"v": input["v"]})
    b = ctx.step("crashmx.double", {"v": a["v2"]}, name="again")
    return {"a": a["v2"], "b": b["v2"], "by": by["by"]}


def buggy(ctx: Any, input: Any) -> Any:
    a = ctx.step("crashmx.double", {"v": input["v"]})
    by = ctx.wait_for("approval")
    b = ctx.step("crashmx.double", {"v": a["v2"]}, name="again")
    return {"a": a["v2"], "b": b["v2"], "by": by.by}  # a bug: AttributeError (test_aws_bug_parks.py)


BUILDS = {name: orbit.workflow(NAME, registry=CodeRegistry())(fn)
          for name, fn in (("v1", v1), ("v1_comment", v1_comment), ("reordered", reordered),
                           ("buggy", buggy))}


def branches(ctx: Any, input: Any) -> Any:
    """A group of branches (issue 14): a step, a sleep then a step, a signal wait."""
    a, b, by = ctx.parallel(lambda c: c.step("crashmx.double", {"v": input["v"]}),
                            lambda c: (c.sleep("1m"), c.step("crashmx.double", {"v": 1}))[1],
                            lambda c: c.wait_for("approval"))
    return {"a": a["v2"], "b": b["v2"], "by": by["by"]}


BRANCHES_NAME = "crashmx-branches"
BRANCH_UNITS = ("1.parallel()", "1.parallel()/0/1.crashmx.double", "1.parallel()/1/1.sleep()",
                "1.parallel()/1/2.crashmx.double", "1.parallel()/2/1.wait_for(approval)")
BUILDS["branches"] = orbit.workflow(BRANCHES_NAME, registry=CodeRegistry())(branches)
SIGNAL = ("approval", {"payload": {"by": "ops"}, "id": "approval-1"})
SWITCH = Scenario((), {"v": 3}, SIGNAL, code=(NAME, UNITS, "v1"), before_signal=("deploy:v1_comment",))
BRANCHES = Scenario((), {"v": 3}, SIGNAL, code=(BRANCHES_NAME, BRANCH_UNITS, "branches"))
UNPARK = Scenario((), {"v": 3}, SIGNAL, code=(NAME, UNITS, "v1"), before_signal=("deploy:reordered",),
                  after_signal=("deploy:v1", "unpark"))


def deploy(build: str) -> None:
    """The functions now run exactly this build (what a Lambda deployment does)."""
    if not _HELD:
        _HELD.append(REGISTRY.all())
    REGISTRY.replace([BUILDS[build]])


def restore() -> None:
    """Give back what the registry held before the first deploy (other tests' workflows)."""
    if _HELD:
        REGISTRY.replace(_HELD.pop())
