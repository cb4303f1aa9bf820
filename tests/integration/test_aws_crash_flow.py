"""The crash matrix around flow control (docs/flow-control.md): a workflow with a concurrency limit
per key and a task limit of 1 over a fan-out of three (two attempts wait in line), through the real
handlers on moto. The process dies before and after each write of flow control's items (`FLOW#`,
and the transactions: joining a line, letting in) and each send right after one; the invariants of
crash_matrix.py hold, including its check that no slot is lost (`_check_slots`)."""

from __future__ import annotations

from typing import Any

import pytest
from crash_matrix import Reference, reference_run, run_point
from crash_points import CrashPoint
from crash_world import Scenario

LIMITED = Scenario(({"orbit": 1, "name": "crashmx-limited", "version": "1",
                     "concurrency": {"limit": 1, "key": "{% $string(input.v) %}"},
                     "tasks": {"crashmx.double": {"concurrency": {"limit": 1}}},
                     "steps": {"each": {"for": "{% [1, 2, 3] %}", "task": "crashmx.double",
                                        "input": {"v": "{% item %}"}}},
                     "output": "{% steps.each.output %}"},), {"v": 1})
SHARDS = 3


@pytest.fixture(scope="module")
def reference(clients: Any) -> Reference:
    return reference_run(clients, LIMITED)


def flow_points(ref: Reference) -> list[CrashPoint]:
    """Before and after every write of flow control, and around the send that follows one."""
    out = []
    for i, call in enumerate(ref.calls):
        flow = call.detail.startswith("FLOW/") or call.op == "TransactWriteItems"
        after_flow = i > 0 and (ref.calls[i - 1].detail.startswith("FLOW/")
                                or ref.calls[i - 1].op == "TransactWriteItems") and call.service == "sqs"
        if call.writes and (flow or after_flow):
            out += [CrashPoint(i, "before"), CrashPoint(i, "after")]
    return out


def test_the_reference_takes_waits_and_gives_back_slots(reference: Reference) -> None:
    ops = [(c.op, c.detail) for c in reference.calls]
    assert ("UpdateItem", "FLOW/C") in ops  # acquire / release
    # the registration's write of the shared task limit (core/flow/shared.py): a crash point too
    assert ("UpdateItem", "FLOW/task:crashmx.double") in ops
    assert ops.count(("TransactWriteItems", "")) >= 4  # two join the line, two are let in
    assert len(flow_points(reference)) >= 20


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_crash_around_acquire_and_release_loses_no_slot(clients: Any, reference: Reference,
                                                              shard: int) -> None:
    points = flow_points(reference)[shard::SHARDS]
    failed = [o for o in (run_point(clients, reference, p) for p in points) if not o.ok]
    assert not failed, f"{len(failed)} of {len(points)} crash points broke an invariant:\n" + \
        "\n".join(str(o) for o in failed)


def test_every_flow_request_is_allowed_by_its_functions_role(reference: Reference) -> None:
    """moto does not enforce IAM: the limited run's requests are checked against template.yaml as
    test_aws_policies.py checks the reference run's. A transaction is authorised by the actions of
    its parts (PutItem, UpdateItem, DeleteItem: the DynamoDB developer guide, "Using IAM with
    DynamoDB transactions"); no ConditionCheck part is used."""
    from pathlib import Path

    from orbit.local.cfn import load_template
    from test_aws_policies import ACTION, ROLES, actions, grants, leading_keys

    res = load_template(Path(__file__).resolve().parents[2] / "template.yaml")["Resources"]
    roles = {name: r for name, r in res.items() if r["Type"] == "AWS::IAM::Role"}
    refused = []
    for call in reference.calls:
        if call.handler not in ROLES:
            continue
        needed = (["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"]
                  if call.op == "TransactWriteItems" else
                  [ACTION.get((call.service, call.op), f"{call.service}:{call.op}")])
        for action in needed:
            allowed = [st for st in grants(roles[ROLES[call.handler]]) if action in actions(st)
                       and (leading_keys(st) is None or not call.detail
                            or any(k.startswith(call.detail.split("/")[0]) for k in leading_keys(st) or []))]
            if not allowed:
                refused.append(f"{call} needs {action} in {ROLES[call.handler]}")
    assert not refused, "\n".join(sorted(set(refused)))
    assert any(c.op == "TransactWriteItems" and c.handler == "decider" for c in reference.calls)
