"""`Engine` composes its stages (issue 28 section 1): typed collaborators, no mixins, no stage that
reads another's private members, and a `_decide_and_commit` that reads top to bottom."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import orbit
from orbit.service.committing import Commits
from orbit.service.effects import Effects
from orbit.service.engine import Engine
from orbit.service.operations import EngineApi
from orbit.service.recovery import Recovery
from orbit.service.redelivery import Redelivery
from orbit.service.retention import Retention
from orbit.service.starts import Starts
from orbit.service.state_cache import StateCache

from tests.unit.dsl_harness import sim_with

SERVICE = Path(orbit.__file__).parent / "service"
# class -> its module; a class may use the private members it defines and those of its bases here
STAGES = {"Engine": "engine.py", "EngineApi": "operations.py", "CatalogApi": "catalog.py",
          "Starts": "starts.py", "Effects": "effects.py", "Retention": "retention.py",
          "Recovery": "recovery.py", "StateCache": "state_cache.py", "Commits": "committing.py",
          "Redelivery": "redelivery.py"}


def _class(name: str) -> ast.ClassDef:
    tree = ast.parse((SERVICE / STAGES[name]).read_text())
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def _defined(cls: ast.ClassDef) -> set[str]:
    """The members a class defines: its methods, class attributes and what its methods assign to self."""
    names: set[str] = set()
    for n in cls.body:
        if isinstance(n, ast.FunctionDef):
            names.add(n.name)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            names.add(n.target.id)
        elif isinstance(n, ast.Assign):
            names.update(t.id for t in n.targets if isinstance(t, ast.Name))
    for n in ast.walk(cls):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and \
                isinstance(n.value, ast.Name) and n.value.id == "self":
            names.add(n.attr)
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in STAGES:
            names |= _defined(_class(base.id))
    return names


def test_the_engine_is_its_api_and_composes_its_stages() -> None:
    assert Engine.__bases__ == (EngineApi,)
    engine = sim_with({"a": {"compute": "{% 1 %}"}}).engine
    stages = {"starts": Starts, "effects": Effects, "retention": Retention, "recovery": Recovery,
              "commits": Commits, "redelivery": Redelivery, "_cache": StateCache}
    assert {name: type(getattr(engine, name)) for name in stages} == stages


def test_each_stage_takes_what_it_uses_in_its_constructor() -> None:
    for cls in (Starts, Effects, Retention, Recovery, StateCache, Commits, Redelivery):
        params = inspect.signature(cls).parameters
        assert params and "engine" not in params, cls  # ports and callables, never the engine itself


def test_no_stage_reads_a_private_member_it_does_not_define() -> None:
    found = []
    for name in STAGES:
        cls = _class(name)
        defined = _defined(cls)
        for n in ast.walk(cls):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" and \
                    n.attr.startswith("_") and not n.attr.startswith("__") and n.attr not in defined:
                found.append(f"{name}: self.{n.attr} (line {n.lineno})")
            elif isinstance(n, ast.Call) and getattr(n.func, "id", None) == "getattr" and \
                    len(n.args) > 1 and isinstance(n.args[1], ast.Constant) and \
                    str(n.args[1].value).startswith("_"):
                found.append(f"{name}: getattr(..., {n.args[1].value!r}) (line {n.lineno})")
            elif isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__") and \
                    isinstance(n.value, ast.Name) and n.value.id not in ("self", "cls"):
                found.append(f"{name}: {n.value.id}.{n.attr} (line {n.lineno})")
    assert found == []


def test_decide_and_commit_reads_as_named_steps_with_no_store_read_in_a_condition() -> None:
    fn = next(n for n in _class("Engine").body
              if isinstance(n, ast.FunctionDef) and n.name == "_decide_and_commit")
    assert fn.end_lineno is not None and fn.end_lineno - fn.lineno < 30
    for n in ast.walk(fn):
        if isinstance(n, ast.If | ast.While | ast.IfExp | ast.BoolOp):
            test = n.test if isinstance(n, ast.If | ast.While | ast.IfExp) else n
            calls = [ast.unparse(c.func) for c in ast.walk(test) if isinstance(c, ast.Call)]
            assert not [c for c in calls if "store" in c or "overtaken" in c], ast.unparse(test)
