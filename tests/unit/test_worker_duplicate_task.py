"""One task name, one function (issue 26): a second function under a name is refused at import, naming
both functions with their files and lines; the same module imported again is not a second function."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from orbit.errors import DuplicateTask
from orbit.worker import tasks as sdk

_names = itertools.count()


def _import(path: Path) -> ModuleType:
    """Import a file under a fresh module name, as the local stack imports `functions/*/app.py`."""
    name = f"_dup_task_{path.stem}_{next(_names)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _worker_file(path: Path, task: str, fn: str) -> Path:
    path.write_text(f"from orbit.worker import task\n\n\n@task({task!r})\ndef {fn}(input, ctx):\n"
                    f"    return {path.stem!r}\n")
    return path


@pytest.fixture
def task_name(request: pytest.FixtureRequest) -> Iterator[str]:
    """A name no other test uses, taken out of the process-wide registry afterwards (xdist shares it)."""
    name = f"dup.{request.node.name}"
    yield name
    with sdk._TASKS_LOCK:
        sdk._TASKS.pop(name, None)


def test_two_functions_under_one_name_fail_at_import_naming_both(tmp_path: Path, task_name: str) -> None:
    first = _worker_file(tmp_path / "billing.py", task_name, "charge")
    second = _worker_file(tmp_path / "payments.py", task_name, "take_payment")
    _import(first)
    with pytest.raises(DuplicateTask) as caught:
        _import(second)
    message = str(caught.value)
    assert message == (f"task {task_name!r} is registered twice: by charge ({first.resolve()}:4) and by "
                       f"take_payment ({second.resolve()}:4); rename one of them")
    assert sdk.registered_tasks()[task_name](None, None) == "billing"  # the first one still serves it


def test_the_same_name_in_one_file_twice_is_refused(tmp_path: Path, task_name: str) -> None:
    path = tmp_path / "twice.py"
    path.write_text(f"from orbit.worker import task\n\n@task({task_name!r})\ndef a(input, ctx):\n"
                    f"    return 1\n\n@task({task_name!r})\ndef b(input, ctx):\n    return 2\n")
    with pytest.raises(DuplicateTask, match=rf"by a \({path.resolve()}:3\) and by b \({path.resolve()}:7\)"):
        _import(path)


def test_importing_the_same_module_again_is_not_an_error(tmp_path: Path, task_name: str) -> None:
    path = _worker_file(tmp_path / "orders.py", task_name, "ship")
    _import(path)
    again = _import(path)  # a second module name for the same file: the local stack does this per stack
    assert sdk.registered_tasks()[task_name] is again.ship  # the newest import serves it
    path.write_text("\n\n" + path.read_text())  # edited and reloaded: the same function, moved down
    _import(path)


def test_two_lambdas_of_one_file_are_two_functions(tmp_path: Path, task_name: str) -> None:
    path = tmp_path / "lambdas.py"
    path.write_text(f"from orbit.worker import task\n\ntask({task_name!r})(lambda i, c: 1)\n"
                    f"task({task_name!r})(lambda i, c: 2)\n")
    both = r"by <lambda> \(.*lambdas.py:3\) and by <lambda> \(.*lambdas.py:4\)"
    with pytest.raises(DuplicateTask, match=both):
        _import(path)
