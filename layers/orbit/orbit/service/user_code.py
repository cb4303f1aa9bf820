"""Where the workflow author's code runs inside an API request: a code workflow's query handler and
update validator, and the replay that comes before them.

On AWS each request is its own Lambda invocation, bounded by the API function's timeout (30 s, as
API Gateway's integration timeout): a handler that loops holds up no other caller. `orbit dev`
serves every caller from one process, its requests and its queue pump taking turns under one
lock; it installs a runner (`runner(...)`) that lets go of that lock and runs the code on a thread
of its own under a time bound (orbit/local/bounded.py). Without a runner the code runs here.
Either way a `SystemExit` or `KeyboardInterrupt` the code raises is its failure, not the server's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from orbit.errors import UserCodeStopped

Runner = Callable[[Callable[[], Any], str], Any]
_RUNNER: ContextVar[Runner | None] = ContextVar("orbit_user_code_runner", default=None)


def run_user_code(fn: Callable[[], Any], what: str) -> Any:
    """`fn()`, with the runner of this request if there is one; `what` names the code in errors
    (e.g. "query 'total' of execution 'e1'")."""
    run = _RUNNER.get()
    if run is not None:
        return run(fn, what)
    try:
        return fn()
    except (SystemExit, KeyboardInterrupt) as e:
        raise UserCodeStopped("USER_CODE_ERROR", f"{what} raised {type(e).__name__}: {e}") from None


@contextmanager
def runner(run: Runner) -> Iterator[None]:
    """Run the user code of the requests served inside the block with `run`."""
    token = _RUNNER.set(run)
    try:
        yield
    finally:
        _RUNNER.reset(token)
