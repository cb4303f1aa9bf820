"""The table both moto speed-fix test files compare answers on: an in-process emulator with a table
`t` (pk/sk and a GSI `gsi` on g/sk), stopped and the clock reset afterwards. The tests never skip:
without the fixes (another moto, or the switch off) "fixed" and "original" are both moto's code."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from orbit.local import clock, patches
from orbit.local.emulator import Emulator


def speed_applied() -> bool:
    """Are the speed fixes in now? (Not on another moto or werkzeug, nor with ORBIT_LOCAL_SPEED_PATCHES=0:
    then the tests below run the same requests through moto's own code and check its answers.)"""
    return patches.state()["speed"]


def orig(fn: Any) -> Any:
    """moto's function behind a fix (the function itself when no fix is in)."""
    return getattr(fn, "original", fn)


@contextmanager
def inprocess_table() -> Iterator[Any]:
    clock.reset()
    emulator = Emulator("inprocess")
    emulator.start()
    try:
        db = boto3.client("dynamodb", region_name="us-east-1")
        db.create_table(
            TableName="t", BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in ("pk", "sk", "g")],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                       {"AttributeName": "sk", "KeyType": "RANGE"}],
            GlobalSecondaryIndexes=[{"IndexName": "gsi", "Projection": {"ProjectionType": "ALL"},
                                     "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"},
                                                   {"AttributeName": "sk", "KeyType": "RANGE"}]}],
        )
        yield db
    finally:
        emulator.stop()
        clock.reset()
