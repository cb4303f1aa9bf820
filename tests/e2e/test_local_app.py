"""An app on its own stack, locally (issue 26): Orbit's template and examples/app/template.yaml
deployed together, the app's Custom::OrbitTaskQueue and Custom::OrbitDefinition resources created
through Orbit's DefinitionsFunction (answers PUT to a ResponseURL over HTTP), the app's definition
and code workflow run end to end by its own worker on its own queue; `orbit dev --app` does the same;
an invalid definition in the app's template stops the start-up with the validation error."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from orbit.local import LocalStack
from orbit.local.cfn import TemplateError
from orbit.worker import tasks as sdk

from tests.e2e.conftest import ROOT, orbit_cli, orbit_dev

APP = ROOT / "examples" / "app"
ORDER = {"order_id": "o-1", "items": [{"sku": "apple", "qty": 4}, {"sku": "plum", "qty": 2}]}


@pytest.fixture
def forget_app() -> Iterator[None]:
    yield
    with sdk._TASKS_LOCK:  # the process-wide registries are shared with other tests
        for name in ("shop.quote", "shop.reserve"):
            sdk._TASKS.pop(name, None)
    for mod in [m for m in sys.modules if m == "shop" or m.startswith(("shop.", "shop_flows"))]:
        del sys.modules[mod]


def test_the_app_runs_its_definition_and_code_workflow_with_its_own_worker_and_queue(
        forget_app: None) -> None:
    with LocalStack(mode="inprocess", app=str(APP)) as stack:
        answers = stack.cloud.app_resources
        assert answers["ShopOrderDefinition"]["Status"] == "SUCCESS"
        assert answers["ShopOrderDefinition"]["PhysicalResourceId"] == "shop-order@1"
        assert answers["ShopRoute"]["Data"]["QueueUrl"].endswith("/orbit-app-shop-shop")
        names = {w["name"] for w in stack.workflows()}
        assert {"shop-order", "shop-order-code"} <= names
        for workflow in ("shop-order", "shop-order-code"):
            eid = stack.start(workflow, ORDER)
            done = stack.run_until_done(eid)
            assert done["status"] == "COMPLETED", done
            assert done["output"]["total"] == 4.5 and done["output"]["reservation"].startswith("res-")
        by_function = {p.mapping.function.logical_id: p for p in stack.cloud.pollers}
        app_worker, example = by_function["ShopWorkerFunction"], by_function["ExampleWorkerFunction"]
        assert app_worker.mapping.queue.name == "orbit-app-shop-shop" and app_worker.mapping.report_failures
        assert app_worker.invocations >= 4  # two steps of each workflow, served on the app's queue
        assert example.invocations == 0  # nothing went to Orbit's default queue


def test_an_invalid_definition_in_the_app_template_fails_the_deploy_with_its_error(
        tmp_path: Path, forget_app: None) -> None:
    app = tmp_path / "badapp"
    shutil.copytree(APP, app)
    template = app / "template.yaml"
    text = template.read_text()
    assert "        steps:\n          quote:\n" in text
    template.write_text(text.replace("        steps:\n          quote:\n",
                                     "        steps:\n          quote:\n            next: nowhere\n", 1))
    with pytest.raises(TemplateError) as err:
        with LocalStack(mode="inprocess", app=str(app)):
            pass
    message = str(err.value)
    assert ("Resources.ShopOrderDefinition: CREATE_FAILED: Custom::OrbitDefinition ShopOrderDefinition: "
            in message)
    assert "steps.quote.next" in message and "would roll back" in message


def test_orbit_dev_app_serves_the_app(forget_app: None) -> None:
    with orbit_dev("--app", "examples/app") as (url, lines):
        said = "".join(lines)
        assert "app stack shop: shop=" in said and "shop-order@1; workers: ShopWorkerFunction" in said
        assert "no worker serves" not in said
        done = orbit_cli("start", "shop-order", "--input", json.dumps(ORDER), "--wait",
                         env={"ORBIT_URL": url})
        assert done.returncode == 0, done.stdout + done.stderr
        assert "\"reservation\": \"res-" in done.stdout and "\"total\": 4.5" in done.stdout


class Calls:
    """The AWS requests of one function's invocations: (service:Action, DynamoDB key prefix or
    queue name or '')."""

    def __init__(self, stack: LocalStack) -> None:
        self.current: str | None = None
        self.seen: dict[str, set[tuple[str, str]]] = {}
        svc = stack.services
        for client in (svc.dynamodb, svc.sqs, svc.s3):
            client.meta.events.register("before-parameter-build.*.*", self._record)

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if self.current is None:
            return
        service = model.service_model.endpoint_prefix
        detail = ""
        key = params.get("Key") or params.get("Item")
        if key and "pk" in key:
            detail = key["pk"]["S"].split("#")[0] + ("#" if "#" in key["pk"]["S"] else "")
        elif model.name == "Query":
            detail = params["ExpressionAttributeValues"][":pk"]["S"].split("#")[0] + "#"
        elif "QueueUrl" in params:
            detail = params["QueueUrl"].rsplit("/", 1)[-1]
        action = {"SendMessageBatch": "SendMessage", "DeleteMessageBatch": "DeleteMessage"}.get(
            model.name, model.name)
        self.seen.setdefault(self.current, set()).add((f"{service}:{action}", detail))

    def wrap(self, name: str, handler: Any) -> Any:
        def run(event: Any, context: Any) -> Any:
            self.current = name
            try:
                return handler(event, context)
            finally:
                self.current = None
        return run


def _allowed(statements: list[dict[str, Any]], action: str, detail: str) -> bool:
    import fnmatch

    for st in statements:
        acts = [st["Action"]] if isinstance(st["Action"], str) else st["Action"]
        if action not in acts:
            continue
        keys = ((st.get("Condition") or {}).get("ForAllValues:StringLike") or {}).get("dynamodb:LeadingKeys")
        if not action.startswith("dynamodb:") or keys is None or any(
                fnmatch.fnmatchcase(detail, k) or fnmatch.fnmatchcase(detail.rstrip("#"), k) for k in keys):
            return True
    return False


def test_update_and_delete_on_the_local_stack_and_every_request_fits_both_stacks_policies(
        forget_app: None) -> None:
    """The app's worker and Orbit's DefinitionsFunction, recorded on a real run: every request fits
    ShopWorkerRole + Orbit's AppWorkerPolicy (the worker sends to its own queue and Orbit's decision
    queue only), or DefinitionsRole. An update while an execution runs leaves it on its version."""
    from orbit.errors import WorkflowRetired
    from orbit.local.apps import ResponseReceiver, custom_request
    from orbit.local.cfn import load_template

    orbit_res = load_template(ROOT / "template.yaml")["Resources"]
    app_res = load_template(APP / "template.yaml")["Resources"]

    def policy(*docs: dict[str, Any]) -> list[dict[str, Any]]:
        return [st for d in docs for st in d["Statement"] if st.get("Effect") == "Allow"]

    worker_role = app_res["ShopWorkerRole"]["Properties"]
    worker_grants = policy(*[p["PolicyDocument"] for p in worker_role["Policies"]],
                           orbit_res["AppWorkerPolicy"]["Properties"]["PolicyDocument"])
    definitions_grants = policy(*[p["PolicyDocument"]
                                  for p in orbit_res["DefinitionsRole"]["Properties"]["Policies"]])
    with LocalStack(mode="inprocess", app=str(APP)) as stack:
        calls = Calls(stack)
        [poller] = [p for p in stack.cloud.pollers if p.mapping.function.logical_id == "ShopWorkerFunction"]
        poller.handler = calls.wrap("worker", poller.handler)
        long_running = stack.start("shop-order", ORDER, id="before-update")
        dep = stack.cloud.app_deployments[0]
        [(lid, rtype, props)] = [c for c in dep.custom if c[0] == "ShopOrderDefinition"]
        receiver = ResponseReceiver()
        fn = stack.cloud.deployment.functions["DefinitionsFunction"]
        handler = calls.wrap("definitions", stack.cloud.handlers["DefinitionsFunction"])
        try:
            v2 = {**props, "Definition": props["Definition"].replace('version: "1"', 'version: "2"')}
            update = custom_request("Update", dep, lid, rtype, v2, receiver.url("u"), "shop-order@1", props)
            from orbit.local.lambdas import invoke
            invoke(fn, handler, update)
            assert receiver.answers["u"]["PhysicalResourceId"] == "shop-order@2"
            invoke(fn, handler, update)  # Lambda's retry of the same request: the same answer
            assert receiver.answers["u"]["PhysicalResourceId"] == "shop-order@2"
            new = stack.start("shop-order", ORDER, id="after-update")
            cleanup = custom_request("Delete", dep, lid, rtype, props, receiver.url("d"), "shop-order@1")
            invoke(fn, handler, cleanup)  # CloudFormation's clean-up of the old id retires v1
            assert receiver.answers["d"]["Status"] == "SUCCESS"
        finally:
            receiver.close()
        with pytest.raises(WorkflowRetired):
            stack.engine.start("shop-order", "1", ORDER, "v1-refused")
        for eid, version in ((long_running, "1"), (new, "2")):
            done = stack.run_until_done(eid)
            assert (done["status"], done["version"]) == ("COMPLETED", version)
    worker_calls, definition_calls = calls.seen["worker"], calls.seen["definitions"]
    assert ("sqs:SendMessage", "orbit-DecisionQueue") in worker_calls
    sends = {d for a, d in worker_calls if a == "sqs:SendMessage"}
    assert sends <= {"orbit-DecisionQueue", "orbit-app-shop-shop"}, sends
    # Local only: this process's engine reads Orbit's ORBIT_TASK_QUEUES, so the worker asks for its
    # queue's URL; on Lambda its own environment maps `shop` (the app's template) and it never asks.
    worker_calls.discard(("sqs:GetQueueUrl", ""))
    refused = [c for c in worker_calls if not c[0].startswith("sqs:") and not _allowed(worker_grants, *c)]
    refused += [c for c in worker_calls if c[0].startswith("sqs:") and not _allowed(worker_grants, c[0], "")]
    refused += [c for c in definition_calls if not _allowed(definitions_grants, *c)]
    assert not refused, refused
    assert {d for a, d in definition_calls if a.startswith("dynamodb:")} >= {"DEF#", "CFNREQ#"}
