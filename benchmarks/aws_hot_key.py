"""bench_flow.py's parts on DynamoDB (moto): 1,000 waiting items on one key, and the crash matrix
of tests/integration/test_aws_flow_limits.py counted as slots lost."""

from __future__ import annotations

import copy
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "integration"))
for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
             "AWS_DEFAULT_REGION": "us-east-1"}.items():
    os.environ.setdefault(k, v)


@contextmanager
def item_rollback() -> Iterator[None]:
    """moto's TransactWriteItems backs up every table it touches (a deep copy, the whole table) to
    roll back a cancelled transaction: quadratic in the table's size, minutes for 1,000 waiting items.
    For this bench only, it backs up the items the transaction names instead and puts them back on
    a cancel: the same all-or-nothing outcome, in time proportional to the transaction."""
    from moto.dynamodb import models

    real_copy, real_transact = models.copy, models.DynamoDBBackend.transact_write_items
    Table = models.Table

    class NoTableCopy:
        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    def transact(self: Any, transact_items: list[dict[str, Any]]) -> None:
        backups = []
        for item in transact_items:
            _, op = next(iter(item.items()))
            table = self.get_table(op["TableName"])
            if "Key" in op:
                key = op["Key"]
            else:
                key = {table.hash_key_attr: op["Item"][table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = op["Item"][table.range_key_attr]
            old = self.get_item(op["TableName"], key)
            backups.append((op["TableName"], key, None if old is None else old.to_json()["Attributes"]))
        try:
            real_transact(self, transact_items)
        except Exception:
            for name, key, attrs in reversed(backups):
                if attrs is None:
                    if self.get_item(name, key) is not None:
                        self.delete_item(name, key)
                else:
                    self.put_item(name, copy.deepcopy(attrs))
            raise

    models.copy = NoTableCopy  # type: ignore[assignment]
    models.DynamoDBBackend.transact_write_items = transact  # type: ignore[method-assign]
    try:
        yield
    finally:
        models.copy = real_copy
        models.DynamoDBBackend.transact_write_items = real_transact  # type: ignore[method-assign]


def hot_key(n: int) -> tuple[int, int, float, int]:
    """n items of tenant `big` and 10 of `small` wait on one key (limit 1) on DynamoDB; all are let in.
    Returns (line rows written, the most rows under one partition key, seconds, the small tenant's
    last start)."""
    import bench_flow
    from aws_resources import Clients, create_stack
    from moto import mock_aws
    from orbit.adapters.dynamodb.limits import DynamoLimits

    clients = Clients()
    with mock_aws():
        stack = create_stack(clients.dynamodb, clients.sqs, clients.s3)
        store = DynamoLimits(clients.dynamodb, stack.table)
        seen: dict[str, int] = {}
        real = clients.dynamodb.transact_write_items

        def counting(**kw: Any) -> Any:
            for item in kw["TransactItems"]:
                put = item.get("Put")
                if put and str(put["Item"]["pk"]["S"]).startswith("FLOW#Q#"):
                    pk = str(put["Item"]["pk"]["S"])
                    seen[pk] = seen.get(pk, 0) + 1
            return real(**kw)

        clients.dynamodb.transact_write_items = counting  # type: ignore[method-assign]
        t0 = time.perf_counter()
        try:
            with item_rollback():
                last, order = bench_flow.fairness(store, n, 10, {})
        finally:
            del clients.dynamodb.transact_write_items
        assert len(order) == n + 10
        return sum(seen.values()) - 0, max(seen.values()), time.perf_counter() - t0, last


def crash_matrix() -> tuple[int, int]:
    """(crash cases, cases that lost a slot or left an item waiting)."""
    import test_aws_flow_limits as T
    from aws_resources import Clients, create_stack
    from moto import mock_aws

    clients = Clients()
    cases = lost = 0
    with mock_aws():
        stack = create_stack(clients.dynamodb, clients.sqs, clients.s3)
        _, _, _, points = T._run(clients, stack.table, 0, False)
        for at in range(1, points + 1):
            for after in (False, True):
                table = f"{stack.table}-{at}-{int(after)}"
                T._copy_table(clients, stack.table, table)
                queues, limits, peak, _ = T._run(clients, table, at, after)
                c = limits.read("task:t|")
                cases += 1
                if peak > 1 or c is None or c.holders or c.waiting or c.granted \
                        or {b["holder"] for b in queues.tasks} != {"a", "b", "c"}:
                    lost += 1
    return cases, lost
