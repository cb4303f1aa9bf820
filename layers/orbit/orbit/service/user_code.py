"""Where the workflow author's code runs inside an API request: a code workflow's query handler and
update validator, and the replay that comes before them.

On AWS each request is its own Lambda invocation: a handler that loops holds up no other caller,
and the code runs here under the stall guard's time bound (`ORBIT_CODE_BUDGET_S`, 5 s by default;
orbit/service/stall.py), well inside the API function's timeout (30 s, as API Gateway's
integration timeout): the caller gets a 400 USER_CODE_TIMEOUT naming the handler, not a 503.
`orbit dev` serves every caller from one process, its requests and its queue pump taking turns
under one lock; it installs a runner (`runner(...)`) that lets go of that lock and runs the code on
a thread of its own under a time bound (orbit/local/bounded.py). Either way a `SystemExit` or
`KeyboardInterrupt` the code raises is its failure, not the server's.
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
    from orbit.core.runtime.code.errors import Stalled
    from orbit.service.stall import StallGuard

    guard = StallGuard()  # a time bound alone: the handler makes no durable call to count
    try:
        with guard(what, lambda: 0):
            return fn()
    except Stalled:
        raise UserCodeStopped("USER_CODE_TIMEOUT", f"{what} ran past {guard.budget_s:g} s and was stopped "
                              "(ORBIT_CODE_BUDGET_S); a handler must answer from the state it has, without "
                              "waiting or looping") from None
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
