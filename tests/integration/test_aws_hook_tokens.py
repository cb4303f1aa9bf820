"""Hook tokens on the deployed shape (moto): derived from the stack's Secrets Manager secret, read
once per container, never stored in the table, the bucket or a queue; resumed by the token the
definition delivered. docs/security.md, "Hook tokens are credentials"."""

from __future__ import annotations

import json
from typing import Any

import pytest
from orbit.aws import wiring as aws
from orbit.core.history.hook_tokens import derive, sha256_hex
from orbit.local.cfn import load_template
from test_aws_policies import ROOT, actions, grants

DEF = {"orbit": 1, "name": "hooked", "version": "1", "signals": {"approval": {}},
       "steps": {"notify": {"task": "example.checksum", "input": {"texts": ["{% hooks.approval.token %}"]}},
                 "wait": {"wait_for": "approval", "after": ["notify"]}}}


@pytest.mark.parametrize("eid", ["h-1", "order:42"])
def test_the_store_never_holds_the_token_and_the_delivered_token_resumes(cloud: Any, clients: Any,
                                                                        stack: Any, eid: str) -> None:
    reads: list[str] = []
    clients.secretsmanager.meta.events.register(
        "before-call.secrets-manager.GetSecretValue", lambda **kw: reads.append("read"))
    svc = aws.services()
    svc.__dict__["secretsmanager"] = clients.secretsmanager
    svc.engine.snapshot_every = 1  # every commit snapshots the state: check those too
    assert cloud.api("POST", "/definitions", DEF)[0] == 201
    assert cloud.api("POST", "/executions", {"workflow": "hooked", "id": eid, "input": {}})[0] == 201
    cloud.run_until_idle()
    assert reads == ["read"]  # once per container (cold start), when the first hook was created
    secret = clients.secretsmanager.get_secret_value(SecretId=stack.hook_secret_arn)["SecretString"]
    token = derive(secret.encode(), eid, "approval")
    assert svc.engine.hook_token(eid, "approval") == token
    recorded = svc.engine.recorded_history(eid)
    # only the step input the definition put it in holds it (that is where it is delivered from)
    assert [e["type"] for e in recorded if token in json.dumps(e)] == ["StepScheduled"]
    created = next(e for e in recorded if e["type"] == "HookCreated")
    assert created["token_sha256"] == sha256_hex(token) and "token" not in created
    snapshot = svc.engine.load_state(eid).to_dict()  # what snapshots hold: the step input, as above
    assert snapshot["hooks"] == {"approval": {"token_sha256": sha256_hex(token), "resumed": False}}
    assert token not in json.dumps({k: v for k, v in snapshot.items() if k != "units"})
    items = clients.dynamodb.scan(TableName=stack.table)["Items"]
    hook_items = [i for i in items if i["pk"]["S"].startswith("HOOK#")]
    assert [i["pk"]["S"] for i in hook_items] == [f"HOOK#{sha256_hex(token)}"]
    history = cloud.api("GET", f"/executions/{eid}/history", None)[1]
    assert [e["type"] for e in history if token in json.dumps(e)] == ["StepScheduled"]
    assert token not in json.dumps(cloud.api("GET", f"/executions/{eid}", None)[1])
    assert cloud.api("POST", f"/hooks/{token}x", {"payload": {}})[0] == 404
    assert cloud.api("POST", f"/hooks/{token}", {"payload": {"ok": True}})[0] == 202
    cloud.run_until_idle()
    assert svc.engine.describe(eid)["steps"]["wait"]["output"] == {"ok": True}
    resumed = next(e for e in svc.engine.recorded_history(eid) if e["type"] == "HookResumed")
    assert "token" not in resumed and resumed["token_sha256"] == sha256_hex(token)
    assert len(reads) == 2  # the container's one read, and this test's own


def test_only_the_functions_that_decide_may_read_the_secret() -> None:
    res = load_template(ROOT / "template.yaml")["Resources"]
    reads = [(name, st["Resource"]) for name, r in res.items() if r["Type"] == "AWS::IAM::Role"
             for st in grants(r) if "secretsmanager:GetSecretValue" in actions(st)]
    # The functions that decide (a start and a trigger's start decide inline, as the decider does)
    assert sorted(name for name, what in reads if what == {"Ref": "HookSecret"}) == [
        "ApiRole", "DeciderRole", "TriggersRole"]
    # Any other secret read is a webhook trigger's signing secret, under the stack's own prefix
    webhooks = {"Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"
                           "${AWS::StackName}/webhooks/*"}
    assert [(n, w) for n, w in reads if w != {"Ref": "HookSecret"}] == [("ApiRole", webhooks)]
    assert res["HookSecret"]["Properties"]["GenerateSecretString"]["PasswordLength"] >= 32


def test_the_key_is_read_once_and_a_short_secret_is_refused(stack: Any, clients: Any) -> None:
    from orbit.adapters.secrets import SecretsManagerHookKey
    from orbit.errors import OrbitError

    sm = clients.secretsmanager
    calls: list[str] = []
    sm.meta.events.register("before-call.secrets-manager.GetSecretValue", lambda **kw: calls.append("x"))
    key = SecretsManagerHookKey(lambda: sm, stack.hook_secret_arn)
    assert key() == key() and len(key()) >= 32 and calls == ["x"]
    short = sm.create_secret(Name="orbit-short", SecretString="too short")["ARN"]
    with pytest.raises(OrbitError, match="needs at least 32 characters, has 9"):
        SecretsManagerHookKey(lambda: sm, short)()
