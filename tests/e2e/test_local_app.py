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

import pytest
from orbit.local import LocalStack
from orbit.local.cfn import TemplateError
from orbit.worker import sdk

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
