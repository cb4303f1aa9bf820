"""`@orbit.workflow` and the code registry: builds, versions side by side, clear errors."""

from __future__ import annotations

import orbit
import pytest
from orbit.errors import BuildMismatch, UnknownWorkflow, ValidationError
from orbit.workflow import CodeRegistry, CodeWorkflow, source_build_id, workflow


def test_decorator_registers_a_build_named_by_the_source_hash():
    reg = CodeRegistry()

    @workflow("orders", version="2", timeout="2h", registry=reg)
    def wf(ctx, input):
        return input

    assert isinstance(wf, CodeWorkflow)
    assert (wf.name, wf.version, wf.timeout_ms) == ("orders", "2", 7_200_000)
    assert wf.build == source_build_id(wf.fn) and wf.build.startswith("src:") and len(wf.build) == 20
    assert reg.get("orders") is wf and reg.get("orders", "2", wf.build) is wf
    assert wf(None, 5) == 5  # still callable as a function


def test_explicit_build_and_several_builds_and_versions_side_by_side():
    reg = CodeRegistry()
    a = workflow("w", version="1", build="b1", registry=reg)(lambda ctx, i: 1)
    b = workflow("w", version="1", build="b2", registry=reg)(lambda ctx, i: 2)
    c = workflow("w", version="2", build="b1", registry=reg)(lambda ctx, i: 3)
    assert reg.get("w") is c  # newest version by default
    assert reg.get("w", "1") is b  # newest build of version 1
    assert reg.get("w", "1", "b1") is a
    reg.unregister("w", "1", "b2")
    assert reg.get("w", "1") is a


def test_different_source_gives_a_different_build():
    def one(ctx, input):
        return 1

    def two(ctx, input):
        return 2

    assert source_build_id(one) != source_build_id(two)


def test_errors_name_what_is_missing():
    reg = CodeRegistry()
    workflow("w", build="b1", registry=reg)(lambda ctx, i: 1)
    with pytest.raises(UnknownWorkflow, match="'nope'"):
        reg.get("nope")
    with pytest.raises(UnknownWorkflow, match="no version '9'"):
        reg.get("w", "9")
    with pytest.raises(BuildMismatch, match="pinned to build 'b0'.*holds \\['b1'\\]"):
        reg.get("w", "1", "b0")
    assert reg.find("w", "1", "b0") is None


@pytest.mark.parametrize("kwargs, path", [
    ({"name": ""}, "workflow.name"),
    ({"name": "x", "version": ""}, "workflow.version"),
    ({"name": "x", "build": " "}, "workflow.build"),
    ({"name": "x", "timeout": "soon"}, "workflow.timeout"),
])
def test_bad_decorator_arguments(kwargs, path):
    with pytest.raises(ValidationError) as e:
        workflow(**kwargs, registry=CodeRegistry())
    assert e.value.problems[0].path == path


def test_function_must_take_ctx_and_input():
    with pytest.raises(ValidationError, match=r"\(ctx, input\)"):
        workflow("x", registry=CodeRegistry())(lambda ctx: None)


def test_public_names():
    assert orbit.workflow is workflow
    assert orbit.StepFailed.__name__ == "StepFailed" and issubclass(orbit.Cancelled, Exception)
    assert orbit.Step("a.b", 1).queue is None
