"""What the local stack changes in moto, botocore and werkzeug, applied only while a stack runs.

Nothing here runs on import. `applied()` (an emulator's start and stop) puts the patches in for the
first user and takes every one of them out when the last user leaves: each replaced attribute gets
back the very object it held (or is deleted again if the owner did not hold it itself), and the
handler added to botocore's `BUILTIN_HANDLERS` is removed. Two stacks open at once in one process
share one set of patches (a count of users), so stopping the first leaves the second patched.

Two groups, each gated on the versions it was read from:

- the clock (`clock.py`): moto's SQS model reads virtual time. Read from moto 5.0.0 to 5.2.5 (the
  same two names imported by `moto.sqs.models` throughout); it goes in only when the installed moto
  is in `clock.MOTO_CLOCK_VERSIONS` *and* still has the shape it relies on. Otherwise the clock
  moves moto's SQS message times instead (`clock.advance_ms`), which patches no code.
- the speed fixes (`moto_speed*.py`, the unsigned in-process requests of `unsigned.py`): only on the
  exact moto and werkzeug they were read from, and only unless `ORBIT_LOCAL_SPEED_PATCHES=0`.

`state()` says which groups are in; `original(owner, name)` gives what a patched attribute held
(tests and benchmarks compare both). The record itself (`put`, `on_undo`, the undo) is
`patch_registry.py`, which the patching modules import.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from . import clock, moto_speed, patch_registry, unsigned

log = logging.getLogger("orbit.local")

SPEED_SWITCH = "ORBIT_LOCAL_SPEED_PATCHES"  # "0" (or "false", "off", "no"): run without the speed fixes

_lock = threading.RLock()
_users = 0
_state: dict[str, bool] = {"clock": False, "speed": False}
put, on_undo, original = patch_registry.put, patch_registry.on_undo, patch_registry.original  # the record


def speed_enabled() -> bool:
    """False when the environment switches the speed fixes off."""
    return os.environ.get(SPEED_SWITCH, "1").strip().lower() not in ("0", "false", "off", "no")


def state() -> dict[str, bool]:
    """Which groups are in now: {"clock": ..., "speed": ...}."""
    with _lock:
        return dict(_state)


def users() -> int:
    return _users


def acquire() -> dict[str, bool]:
    """One more user; the first puts the patches in. Returns which groups are in."""
    global _users
    with _lock:
        _users += 1
        if _users == 1:
            try:
                _apply()
            except BaseException:
                _users -= 1
                _restore()
                raise
        return dict(_state)


def release() -> None:
    """One user less; the last takes every patch out."""
    global _users
    with _lock:
        if _users == 0:
            return
        _users -= 1
        if _users == 0:
            _restore()


@contextmanager
def applied() -> Iterator[dict[str, bool]]:
    got = acquire()
    try:
        yield got
    finally:
        release()


def _apply() -> None:
    patch_registry.applying = True
    try:
        _state["clock"] = clock.patch_moto()
        if not speed_enabled():
            log.info("%s=0: the local stack runs without its speed fixes", SPEED_SWITCH)
        elif moto_speed.supported():
            moto_speed.patch()
            unsigned.register()
            _state["speed"] = True
    finally:
        patch_registry.applying = False


def _restore() -> None:
    patch_registry.restore()
    _state["clock"] = _state["speed"] = False
