"""The local stack's patches of moto, botocore and werkzeug exist only while a stack runs.

Each case runs in a fresh interpreter (tests/e2e/patches_probe.py), so what earlier tests of this
session did cannot hide a change: every attribute of every loaded moto, botocore and werkzeug module
and class is compared by identity, and botocore's BUILTIN_HANDLERS list by content.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import moto
import pytest
from orbit.local import clock, moto_speed, patch_registry, patches

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("patches_probe.py")
# moto's and werkzeug's own bookkeeping, rebound by any use of them (with or without Orbit): the
# per-class instance lists `model_instances.reset_model_data` replaces on each mock's start (named
# `instances` in older moto), the authorization counter it saves and restores, the keyword list
# read on first use, and werkzeug's logger made when its server logs first.
THEIR_OWN = ("instances_tracked", "instances", "request_count", "KEYWORDS", "_logger")


def probe(mode: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    import os

    run = subprocess.run([sys.executable, str(PROBE), mode], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={**os.environ, **(env or {})})
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def theirs(changed: list[str]) -> list[str]:
    return [c for c in changed if c.rsplit(".", 1)[-1] not in THEIR_OWN]


def test_importing_orbit_patches_nothing() -> None:
    got = probe("import")
    assert got["orbit_modules"] > 100  # every orbit module, orbit.local's included, was imported
    assert got["changed"] == [] and got["handlers_same"]


@pytest.mark.parametrize("switch", ["1", "0"])
def test_after_local_stacks_stop_mock_aws_behaves_as_a_fresh_one(switch: str) -> None:
    got = probe("stack", {patches.SPEED_SWITCH: switch})
    speed = switch == "1" and moto.__version__ == moto_speed.MOTO_VERSION
    for mode in ("inprocess", "server"):
        during = got["stacks"][mode]
        assert during["status"] == "COMPLETED" and during["users"] == 1
        # not vacuous: while the stack ran, the patches were in, on modules the snapshots cover
        assert during["state"] == {"clock": clock.moto_clock_supported(), "speed": speed}
        assert during["owners"] and set(during["owners"]) <= set(got["snapshot_modules"])
        if speed:
            assert "moto.dynamodb.models.table" in during["owners"]
    assert got["stacks"]["users_after"] == 0
    assert theirs(got["changed"]) == []  # every patched attribute holds its original object again
    assert got["handlers_same"]  # botocore's BUILTIN_HANDLERS as before
    assert got["after"] == got["first"]  # the same answers, and every request signed as before
    assert all(got["after"][-1]) and len(got["after"][-1]) > 5


def test_overlapping_users_share_one_set_of_patches_until_the_last_leaves() -> None:
    import moto.sqs.models as sqs_models
    from moto.core import utils

    assert patches.users() == 0
    first = patches.acquire()
    try:
        with patches.applied() as second:
            assert second == first and patches.users() == 2
        assert patches.users() == 1 and patches.state() == first  # the first user's patches stay
        if first["clock"]:
            assert sqs_models.unix_time_millis is not utils.unix_time_millis
    finally:
        patches.release()
    assert patches.users() == 0 and patches.state() == {"clock": False, "speed": False}
    assert sqs_models.unix_time_millis is utils.unix_time_millis
    assert sqs_models.unix_time is utils.unix_time


def test_a_patch_outside_applied_is_refused() -> None:
    import moto.sqs.models as sqs_models

    with pytest.raises(RuntimeError, match="outside orbit.local.patches.applied"):
        patches.put(sqs_models, "unix_time", lambda dt=None: 0.0)
    assert "unix_time" not in [n for _, n, _ in patch_registry.replaced]


def test_two_emulators_open_at_once_keep_the_patches_until_both_stop() -> None:
    import moto.sqs.models as sqs_models
    from moto.core import utils
    from orbit.local.emulator import Emulator

    first, second = Emulator("inprocess"), Emulator("inprocess")
    first.start()
    try:
        second.start()
        try:
            assert patches.users() == 2
        finally:
            second.stop()
        second.stop()  # a second stop gives nothing back twice
        assert patches.users() == 1
        if patches.state()["clock"]:
            assert sqs_models.unix_time_millis is not utils.unix_time_millis  # the first still runs patched
    finally:
        first.stop()
    assert patches.users() == 0 and sqs_models.unix_time_millis is utils.unix_time_millis
