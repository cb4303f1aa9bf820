"""Apps on the local stack (`orbit dev --app DIR`, `LocalStack(app=DIR)`): an app's own template
deployed after Orbit's, as CloudFormation would deploy it.

Its `!ImportValue`s resolve to Orbit's exports, an `AWS::SSM::Parameter::Value` parameter to the
parameter Orbit's template wrote, its queues and worker functions join the pump, and each custom
resource (`Custom::OrbitDefinition`, `Custom::OrbitTaskQueue`) is sent as a CloudFormation Create
request to the function its ServiceToken names (Orbit's DefinitionsFunction), whose answer comes
back by a real HTTP PUT to a ResponseURL served here. A FAILED answer stops the start-up with its
reason, as the app's stack would roll back.
"""

from __future__ import annotations

import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .cfn import TemplateError, load_template
from .lambdas import Handler, invoke
from .resources import Deployment, FunctionInfo, deploy

ORBIT_STACK_PARAMETER = "OrbitStack"  # an app's template names Orbit's stack in this parameter


def app_template(app: str | Path) -> Path:
    """An app directory (holding template.yaml) or its template file."""
    p = Path(app)
    path = p / "template.yaml" if p.is_dir() else p
    if not path.is_file():
        raise TemplateError(f"--app {app}: no template.yaml there "
                            "(an app is a SAM application directory, like examples/app)")
    return path


class ResponseReceiver:
    """CloudFormation's side of a custom resource: a ResponseURL that takes the answer's PUT."""

    def __init__(self) -> None:
        answers: dict[str, dict[str, Any]] = {}
        self.answers = answers

        class Receive(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                answers[self.path.lstrip("/")] = json.loads(self.rfile.read(size) or b"{}")
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Receive)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, key: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{key}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def deploy_app(app: str | Path, orbit: Deployment, parameters: dict[str, str] | None = None) -> Deployment:
    """Create the app's resources (Orbit's exports imported); custom resources are left to `create_custom`."""
    path = app_template(app)
    tpl = load_template(path)
    params = dict(parameters or {})
    if ORBIT_STACK_PARAMETER in (tpl.get("Parameters") or {}):
        params.setdefault(ORBIT_STACK_PARAMETER, orbit.stack_name)
    return deploy(path, stack_name(path), params, imports=orbit.exports)


def stack_name(template: Path) -> str:
    """The app's stack name from its samconfig.toml (`sam deploy` names it so), else its directory's."""
    import tomllib

    config = template.parent / "samconfig.toml"
    try:
        name = tomllib.loads(config.read_text())["default"]["global"]["parameters"]["stack_name"]
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError):
        return template.parent.name
    return str(name)


def import_workflows(template: Path) -> list[str]:
    """The app's code workflows, as Orbit's decider gets them on AWS (WorkflowModules from the
    AppLayerArns layer): the template's `Metadata.Orbit.WorkflowModules`, imported from the
    ContentUri of its `WorkflowsLayer`. Returns the modules imported."""
    import sys

    from orbit.aws.wiring import import_workflow_modules

    tpl = load_template(template)
    meta = (tpl.get("Metadata") or {}).get("Orbit") or {}
    modules = str(meta.get("WorkflowModules") or "")
    if not modules.strip():
        return []
    layer = tpl["Resources"].get(str(meta.get("WorkflowsLayer") or ""))
    if layer is None:
        raise TemplateError(f"{template}: Metadata.Orbit.WorkflowsLayer must name the layer of "
                            f"{modules} (an AWS::Serverless::LayerVersion of the template)")
    root = str((template.parent / str(layer["Properties"]["ContentUri"])).resolve())
    if root not in sys.path:
        sys.path.insert(0, root)  # the layer's python/ directory, as Lambda mounts it
    return import_workflow_modules(modules)


def custom_request(kind: str, dep: Deployment, lid: str, rtype: str, props: dict[str, Any],
                   response_url: str, physical: str | None = None,
                   old: dict[str, Any] | None = None) -> dict[str, Any]:
    """A CloudFormation custom resource request, as CloudFormation sends it."""
    event: dict[str, Any] = {
        "RequestType": kind, "RequestId": str(uuid.uuid4()), "ResponseURL": response_url,
        "ResourceType": rtype, "LogicalResourceId": lid, "ServiceToken": props.get("ServiceToken"),
        "StackId": f"arn:aws:cloudformation:local:000000000000:stack/{dep.stack_name}/local",
        "ResourceProperties": props}
    if physical is not None:
        event["PhysicalResourceId"] = physical
    if old is not None:
        event["OldResourceProperties"] = old
    return event


def create_custom(dep: Deployment, functions: dict[str, FunctionInfo], handlers: dict[str, Handler],
                  receiver: ResponseReceiver) -> dict[str, dict[str, Any]]:
    """Send each custom resource's Create to its ServiceToken's function; returns the answers by
    logical id. Raises TemplateError with the reason of the first FAILED answer."""
    out = {}
    for lid, rtype, props in dep.custom:
        token = str(props.get("ServiceToken") or "")
        target = token.rsplit(":", 1)[-1]  # the local stack's ARNs end with the logical id
        if target not in handlers:
            raise TemplateError(f"Resources.{lid}: ServiceToken {token!r} names no function "
                                "of the local stack")
        key = f"{lid}-{uuid.uuid4().hex[:8]}"
        event = custom_request("Create", dep, lid, rtype, props, receiver.url(key))
        invoke(functions[target], handlers[target], event)
        answer = receiver.answers.pop(key, None)
        if answer is None:
            raise TemplateError(f"Resources.{lid}: {target} sent no answer to the ResponseURL")
        if answer.get("Status") != "SUCCESS":
            raise TemplateError(f"Resources.{lid}: CREATE_FAILED: {answer.get('Reason')} "
                                f"(the app's stack {dep.stack_name} would roll back)")
        out[lid] = answer
    return out
