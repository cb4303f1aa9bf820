"""The deployed API has every route the router has, and only those (issue 25, item 7): each one an
HTTP API route to ApiFunction, IAM-authorised on its own (AWS_IAM, SigV4), with the Lambda
permission that lets API Gateway invoke the function for that route alone. The routes docs/security.md's
example policies name exist."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from orbit.service.http import _ROUTES, _WEBHOOK

ROOT = Path(__file__).resolve().parents[2]


def router_routes() -> set[tuple[str, str]]:
    """(method, path with `{}` for each parameter) of orbit/service/http.py's router."""
    out = set()
    for method, pattern, _ in [*_ROUTES, ("POST", _WEBHOOK, None)]:  # webhooks: routed before the rest
        path = re.sub(r"\((?:\[\^/\]|\[a-z\])\+\)", "{}", pattern.pattern)
        assert "(" not in path and "[" not in path, f"a route pattern the test cannot read: {pattern.pattern}"
        out.add((method, path))
    return out


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def template_events(source: dict[str, Any]) -> dict[str, dict[str, Any]]:
    fn = source["Resources"]["ApiFunction"]["Properties"]
    return {name: ev["Properties"] for name, ev in fn["Events"].items() if ev["Type"] == "HttpApi"}


def template_routes(source: dict[str, Any]) -> set[tuple[str, str]]:
    return {(p["Method"], _shape(p["Path"])) for p in template_events(source).values()}


def test_the_template_serves_exactly_the_routers_routes(source_template: dict[str, Any]) -> None:
    router, template = router_routes(), template_routes(source_template)
    assert router - template == set(), f"routes only the API Lambda has: {router - template}"
    assert template - router == set(), f"routes only API Gateway has: {template - router}"
    assert ("POST", "/executions/{}/redrive") in template and ("GET", "/executions/{}/history/{}") in template


# A webhook's sender (a payment provider) has no AWS credentials: the route is authorised by the
# request's HMAC-SHA256 signature, checked by orbit/service/webhooks.py before anything runs.
UNSIGNED = {"Webhook": ("POST", "/webhooks/{workflow}/{trigger}")}


def test_every_route_is_iam_authorised_on_its_own(source_template: dict[str, Any]) -> None:
    for name, props in template_events(source_template).items():
        if name in UNSIGNED:
            assert props.get("Auth") == {"Authorizer": "NONE"} and props["Method"] == UNSIGNED[name][0]
            assert props["Path"] == UNSIGNED[name][1], name
            continue
        assert props.get("Auth") == {"Authorizer": "AWS_IAM"}, name
        assert props["ApiId"] == {"Ref": "OrbitHttpApi"}, name


def test_each_route_reaches_the_api_function_signed_and_may_invoke_it(cfn_template: dict[str, Any]) -> None:
    resources = cfn_template["Resources"]
    paths = resources["OrbitHttpApi"]["Properties"]["Body"]["paths"]
    schemes = resources["OrbitHttpApi"]["Properties"]["Body"]["components"]["securitySchemes"]
    assert schemes["AWS_IAM"]["x-amazon-apigateway-authtype"] == "awsSigv4"
    deployed = set()
    for path, methods in paths.items():
        for method, op in methods.items():
            deployed.add((method.upper(), _shape(path)))
            unsigned = (method.upper(), path) in UNSIGNED.values()
            assert op["security"] == ([{"NONE": []}] if unsigned else [{"AWS_IAM": []}]), (method, path)
            uri = op["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
            assert "${ApiFunction.Arn}" in uri, (method, path)
    assert deployed == router_routes()
    # one invoke permission per route, scoped to that method and path
    sources = set()
    for res in resources.values():
        props = res.get("Properties", {})
        if res["Type"] == "AWS::Lambda::Permission" and props.get("FunctionName") == {"Ref": "ApiFunction"}:
            assert props["Principal"] == "apigateway.amazonaws.com"
            arn = props["SourceArn"]["Fn::Sub"][0]
            method, _, rest = arn.split("/${__Stage__}/", 1)[1].partition("/")
            sources.add((method, "/" + rest))
    assert {(m, re.sub(r"\{\}", "*", p)) for m, p in router_routes()} == sources


def test_the_example_policies_in_docs_security_name_routes_that_exist() -> None:
    text = (ROOT / "docs/security.md").read_text()
    named = re.findall(r"execute-api:[^\"]*?/\*/(GET|POST|PUT|DELETE)(/[^\"]*)\"", text)
    assert len(named) >= 5, "docs/security.md should hold the starter and registrar policies"
    for method, path in named:
        assert (method, path.replace("*", "{}")) in router_routes(), f"{method} {path} is not a route"
    assert ("POST", "/definitions") in named
