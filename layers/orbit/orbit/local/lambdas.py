"""Load and invoke handler code the way the Lambda runtime does, in this process.

Each function's `Handler: module.attr` is imported from its `CodeUri` directory
(as a uniquely named module, so every `functions/*/app.py` can be called `app`),
with the function's environment variables in place while it is imported and
invoked; handlers get a Lambda-shaped context object.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from .cfn import TemplateError
from .emulator import ACCOUNT, REGION
from .resources import FunctionInfo

Handler = Callable[[dict[str, Any], Any], Any]
_counter = itertools.count()


class LambdaContext:
    """The attributes handlers and powertools read from the Lambda context."""

    def __init__(self, fn: FunctionInfo) -> None:
        self.function_name = fn.logical_id
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{fn.logical_id}"
        self.memory_limit_in_mb = 512
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{fn.logical_id}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + fn.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


_env_lock = threading.Lock()
_env_layers: list[dict[str, str]] = []  # the environments of the invocations running now, in order
_env_base: dict[str, str | None] = {}  # a key some layer set -> its value before the first one did


@contextmanager
def function_env(fn: FunctionInfo) -> Iterator[None]:
    """The function's environment variables in place for the block. Invocations may overlap on
    several threads (`orbit dev` runs them beside its pump): each is a layer, and when one ends
    a key goes back to the newest layer still running that sets it, else to its value before."""
    layer = dict(fn.env)
    with _env_lock:
        for k in layer:
            _env_base.setdefault(k, os.environ.get(k))
        _env_layers.append(layer)
        os.environ.update(layer)
    try:
        yield
    finally:
        with _env_lock:
            _env_layers.remove(layer)
            for k in layer:
                holder = next((lay for lay in reversed(_env_layers) if k in lay), None)
                value = holder[k] if holder is not None else _env_base.pop(k, None)
                if value is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = value


class EmfFilter:
    """stdout that drops CloudWatch EMF metric lines (`{"_aws": ...}`) and writes the rest to `target`.

    On Lambda those lines become metrics; on a terminal they are noise. powertools
    prints them even with POWERTOOLS_METRICS_DISABLED once 100 values pile up, so
    the local stack filters them out. Everything else printed passes through.
    """

    def __init__(self, target: Any) -> None:
        self.target = target
        self._dropping = False  # print() writes the newline separately

    def write(self, text: str) -> int:
        if text.startswith('{"_aws"') or (self._dropping and text == "\n"):
            self._dropping = text != "\n"
            return len(text)
        self._dropping = False
        return int(self.target.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


def load_handler(fn: FunctionInfo) -> Handler:
    module_name, _, attr = fn.handler.rpartition(".")
    path = fn.code_dir / (module_name.replace(".", "/") + ".py")
    if not path.is_file():
        raise TemplateError(f"Resources.{fn.logical_id}: handler file {path} does not exist")
    unique = f"_orbit_fn_{fn.logical_id}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(unique, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    # Lambda puts the code directory first on sys.path: sibling modules must import
    sys.path.insert(0, str(fn.code_dir))
    try:
        with function_env(fn):
            spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(fn.code_dir))
    from .readable_logs import make_readable

    make_readable()  # a worker's exception as a Python traceback, not a JSON line (AWS keeps JSON)
    handler = getattr(module, attr, None)
    if not callable(handler):
        raise TemplateError(f"Resources.{fn.logical_id}: {path} has no callable {attr!r}")
    return handler


def invoke(fn: FunctionInfo, handler: Handler, event: dict[str, Any]) -> Any:
    with function_env(fn):
        return handler(event, LambdaContext(fn))
