"""Least privilege, checked against what the handlers really call.

The crash matrix's reference run (crash_matrix.py: a start, a 40 KB value in
S3, a fan-out, a retry on a timer, a signal, a child workflow, all through the
real handlers on moto) records every AWS request each handler makes. moto does
not enforce IAM, so this module does: every request must be allowed by its
function's role in template.yaml (right action, DynamoDB keys inside the role's
LeadingKeys condition), and every data action a role grants must be used by the
run or be on the short list below of paths the run does not take, each with
the code that needs it. The requests of an inline-step run (the decider runs
the task code; test_aws_inline_crash_matrix.INLINE) are checked as well. A new call without a
grant, or a grant nobody uses, fails here.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

import pytest
from crash_matrix import Reference, reference_run
from orbit.local.cfn import load_template

ROOT = Path(__file__).resolve().parents[2]
# HttpTaskRole is left out: the run has no http step (tests/integration/test_http_task.py covers it).
ROLES = {"api": "ApiRole", "decider": "DeciderRole", "timers": "TimersRole",
         "example_worker": "ExampleWorkerRole"}
# An API operation -> the IAM action that authorises it (the batch forms use the single one).
ACTION = {("s3", "HeadObject"): "s3:GetObject", ("sqs", "SendMessageBatch"): "sqs:SendMessage",
          ("sqs", "DeleteMessageBatch"): "sqs:DeleteMessage",
          ("sqs", "ChangeMessageVisibilityBatch"): "sqs:ChangeMessageVisibility"}
# Granted, needed, but not reached by the reference run: (role, action) -> the code that uses it.
NOT_IN_RUN = {
    ("DeciderRole", "dynamodb:DeleteItem"): "timers.arm: re-arming a table timer deletes the old one; "
                                            "an execution that ends with a table timer armed (retention)",
    ("ApiRole", "dynamodb:BatchGetItem"): "list_executions by workflow reads the rows' status",
    ("DeciderRole", "dynamodb:BatchGetItem"): "a bulk action's page by workflow or attribute reads the "
                                              "rows' status (service/batches.py)",
    ("ApiRole", "dynamodb:DeleteItem"): "a start with a workflow timeout arms a table timer (timers.arm)",
    ("ApiRole", "s3:PutObject"): "a start input or signal payload over 32 KB (payload_values)",
    # the retention sweeper (service/retention.py) acts on executions running past 1 h 20 min;
    # the run's executions end sooner (test_aws_write_time_expiry.py pins through the handler)
    ("TimersRole", "dynamodb:UpdateItem"): "RetentionSweeper: pin the provisional items (sweep.pin)",
    ("TimersRole", "dynamodb:PutItem"): "RetentionSweeper: advance its cursor (sweep.advance_sweep)",
    ("TimersRole", "s3:GetObject"): "RetentionSweeper: load a state whose values are in S3",
    ("ApiRole", "sqs:GetQueueUrl"): "registering a definition with an sqs trigger checks that its queue "
                                    "exists (service/trigger_checks.py, test_aws_sqs_trigger_registration)",
}
# Used by Lambda's event source mapping with the function's role, not by handler code.
MAPPING = {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"}
DATA = ("dynamodb:", "s3:", "sqs:", "secretsmanager:")


def grants(role: dict[str, Any]) -> list[dict[str, Any]]:
    return [st for p in role["Properties"].get("Policies", []) for st in p["PolicyDocument"]["Statement"]
            if st.get("Effect") == "Allow"]


def actions(statement: dict[str, Any]) -> set[str]:
    a = statement["Action"]
    return {a} if isinstance(a, str) else set(a)


def leading_keys(statement: dict[str, Any]) -> list[str] | None:
    cond = (statement.get("Condition") or {}).get("ForAllValues:StringLike") or {}
    return cond.get("dynamodb:LeadingKeys")


@pytest.fixture(scope="module")
def reference(clients: Any) -> Reference:
    return reference_run(clients)


@pytest.fixture(scope="module")
def inline_reference(clients: Any) -> Reference:
    """Inline steps run in the decider (issue 15): its requests must fit DeciderRole too."""
    from test_aws_inline_crash_matrix import INLINE

    return reference_run(clients, INLINE)


def template_roles() -> dict[str, Any]:
    """template.yaml's roles, each with the stack's managed policies it attaches (`ManagedPolicyArns:
    [!Ref X]`) folded into its `Policies`, so `grants` sees everything the role may do."""
    res = load_template(ROOT / "template.yaml")["Resources"]
    roles = {}
    for name, r in res.items():
        if r["Type"] != "AWS::IAM::Role":
            continue
        props = dict(r["Properties"])
        attached = [res[a["Ref"]] for a in props.get("ManagedPolicyArns", [])
                    if isinstance(a, dict) and "Ref" in a]
        props["Policies"] = list(props.get("Policies", [])) + [
            {"PolicyName": "managed", "PolicyDocument": m["Properties"]["PolicyDocument"]} for m in attached]
        roles[name] = {**r, "Properties": props}
    return roles


@pytest.fixture(scope="module")
def roles() -> dict[str, Any]:
    return template_roles()


def test_every_request_of_the_run_is_allowed_by_its_functions_role(reference: Reference,
                                                                    inline_reference: Reference,
                                                                    roles: dict[str, Any]) -> None:
    assert {c.handler for c in reference.calls} == set(ROLES)  # every handler of the run is mapped
    refused = []
    for call in reference.calls + inline_reference.calls:
        action = ACTION.get((call.service, call.op), f"{call.service}:{call.op}")
        allowed = [st for st in grants(roles[ROLES[call.handler]]) if action in actions(st)]
        if call.service == "dynamodb" and call.detail:  # the key must fit the LeadingKeys, if any
            # (a Query's key is in its expression: the recorder leaves its detail empty)
            prefix = call.detail.split("/")[0] + "#"
            allowed = [st for st in allowed if leading_keys(st) is None
                       or any(fnmatch.fnmatchcase(prefix, k) for k in leading_keys(st) or [])]
        if not allowed:
            refused.append(f"{call} needs {action} in {ROLES[call.handler]}")
    assert not refused, "\n".join(sorted(set(refused)))


def test_every_data_action_granted_is_used(reference: Reference, roles: dict[str, Any]) -> None:
    used = {(ROLES[c.handler], ACTION.get((c.service, c.op), f"{c.service}:{c.op}")) for c in reference.calls}
    unused = []
    for handler, role in ROLES.items():
        for st in grants(roles[role]):
            for action in actions(st):
                if not action.startswith(DATA) or action in MAPPING:
                    continue
                if (role, action) not in used and (role, action) not in NOT_IN_RUN:
                    unused.append(f"{role} grants {action}, which {handler} never calls")
    assert not unused, "\n".join(sorted(set(unused)))
    stale = [k for k in NOT_IN_RUN if k in used]  # the run reaches it now: drop it from the list
    assert not stale, stale


def test_the_check_catches_a_missing_grant(reference: Reference, roles: dict[str, Any]) -> None:
    role = roles["ExampleWorkerRole"]
    st = next(s for s in grants(role) if "dynamodb:PutItem" in actions(s))
    # The worker may write its own records and the references that hold its results' S3 objects
    # (retention), nothing else.
    assert leading_keys(st) == ["IDEM#*", "BLOB#*"]
    assert not fnmatch.fnmatchcase("EXEC#", "IDEM#*")
    # It may read a history (a possible duplicate checks its attempt, issue 15), never write one.
    for worker in ("ExampleWorkerRole", "HttpTaskRole"):
        on_exec = [st for st in grants(roles[worker]) if "EXEC#*" in (leading_keys(st) or [])]
        assert [actions(st) for st in on_exec] == [{"dynamodb:Query"}], worker


def _s3_resources(statement: dict[str, Any]) -> list[str]:
    """A statement's S3 object resources as `${PayloadBucket.Arn}/...` patterns."""
    res = statement.get("Resource")
    items = res if isinstance(res, list) else [res]
    return [r["Fn::Sub"] for r in items if isinstance(r, dict) and isinstance(r.get("Fn::Sub"), str)]


def test_the_archive_is_written_by_the_decider_and_out_of_the_collectors_reach(
        reference: Reference, roles: dict[str, Any]) -> None:
    """The crash matrix's stack keeps an archive: its write is in the run, allowed for
    `archive/*`; the retention function, which deletes payload objects, cannot touch it."""
    assert any(c.handler == "decider" and (c.service, c.op, c.detail) == ("s3", "PutObject", "archive")
               for c in reference.calls)
    key = "${PayloadBucket.Arn}/archive/crash-1.jsonl.gz"
    writes = [st for st in grants(roles["DeciderRole"]) if "s3:PutObject" in actions(st)]
    assert any(fnmatch.fnmatchcase(key, r) for st in writes for r in _s3_resources(st))
    reads = [st for st in grants(roles["ApiRole"]) if "s3:GetObject" in actions(st)]
    assert any(fnmatch.fnmatchcase(key, r) for st in reads for r in _s3_resources(st))  # describe/history
    collector = [r for st in grants(roles["RetentionRole"]) if any(a.startswith("s3:") for a in actions(st))
                 for r in _s3_resources(st)]
    assert collector and not any(fnmatch.fnmatchcase(key, r) for r in collector), collector


def test_a_worker_may_send_to_the_decision_queue_and_its_own_queue_only(roles: dict[str, Any]) -> None:
    """A task message no function of the worker serves goes back to the worker's own queue (issue 26):
    each worker role may send there, and to no other task queue."""
    for role, own in (("ExampleWorkerRole", "DefaultTaskQueue"), ("HttpTaskRole", "HttpTaskQueue")):
        sends = [st for st in grants(roles[role]) if "sqs:SendMessage" in actions(st)]
        res = [r for st in sends for r in (st["Resource"] if isinstance(st["Resource"], list) else
                                           [st["Resource"]])]
        assert sorted(r["Fn::GetAtt"][0] for r in res) == sorted(["DecisionQueue", own]), role
