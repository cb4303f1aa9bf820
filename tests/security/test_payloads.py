"""Hostile payloads (docs/security.md, "What a request may carry"): JSON nested past any parser,
bodies past 6 MiB, lone surrogates, NaN, all on every route that takes a body. Each is a 4xx with
one clear line (never a 500, a crashed interpreter or a hang), through the API function's entry
point (`lambda_response`, an API Gateway event) and through a real `orbit dev`."""

from __future__ import annotations

import pytest

from tests.security.harness import DevProcess, in_child, one_line_error

DEEP = "[" * 200_000 + "]" * 200_000
HOSTILE = {  # name -> (raw body of POST /executions, status)
    "nested-200k": ('{"workflow": "plain", "input": ' + DEEP + "}", 400),
    "nested-65": ('{"workflow": "plain", "input": ' + "[" * 65 + "]" * 65 + "}", 400),
    "lone-surrogate": ('{"workflow": "plain", "input": {"k": "\\ud800"}}', 400),
    "nan": ('{"workflow": "plain", "input": NaN}', 400),
    "not-json": ('{"workflow": "plain", "input": ', 400),
    "not-an-object": ('[1, 2, 3]', 400),
    "over-6-mib": ('{"workflow": "plain", "input": "' + "x" * (6 * 1024 * 1024) + '"}', 413),
}


def test_the_api_function_answers_hostile_bodies_on_every_route_with_a_clear_4xx() -> None:
    got = in_child(f"""
        import base64
        from orbit.service.http import lambda_response
        sim = world()
        sim.register(definition("plain", {{"w": {{"wait_for": "go"}}}}))
        call(sim, "POST", "/executions", {{"workflow": "plain", "id": "e1"}})
        sim.run()
        hostile = {HOSTILE!r}
        routes = ["/executions", "/definitions", "/executions/e1/signals/go", "/executions/e1/fork",
                  "/executions/e1/cancel", "/batches/cancel", "/batches/preview"]
        out = {{}}
        for name, (raw, _) in hostile.items():
            for route in routes:
                event = {{"requestContext": {{"http": {{"method": "POST"}}}}, "rawPath": route,
                         "body": base64.b64encode(raw.encode("utf-8", "surrogatepass")).decode(),
                         "isBase64Encoded": True}}
                answer = lambda_response(sim.engine, event)
                out[name + " " + route] = [answer["statusCode"], json.loads(answer["body"])]
        out["still running"] = sim.describe("e1")["status"]
        emit(out)
    """, "a hostile body parsed, checked or stored without a limit")
    assert got.pop("still running") == "RUNNING"
    for case, (status, body) in got.items():
        expected = HOSTILE[case.split(" ")[0]][1]
        assert status == expected or (expected == 400 and status == 404 and "/fork" in case), (case, body)
        one_line_error(body)


@pytest.mark.parametrize("name", ["nested-200k", "nested-65", "lone-surrogate", "nan", "over-6-mib"])
def test_orbit_dev_answers_hostile_bodies_with_a_clear_4xx_and_keeps_serving(dev: DevProcess,
                                                                             name: str) -> None:
    raw, expected = HOSTILE[name]
    raw = raw.replace('"plain"', '"sec-plain"')
    status, body = dev.request("POST", "/executions", raw=raw.encode("utf-8", "surrogatepass"),
                               headers={"Content-Type": "application/json"})
    assert status == expected, body
    one_line_error(body)
    dev.still_serves(f"after-{name}")


def test_a_deep_signal_payload_is_refused_and_nothing_is_recorded() -> None:
    raw = '{"payload": ' + DEEP + "}"
    status, body, history = in_child(f"""
        sim = world()
        sim.register(definition("plain", {{"w": {{"wait_for": "go"}}}}))
        call(sim, "POST", "/executions", {{"workflow": "plain", "id": "e1"}})
        sim.run()
        before = len(sim.history("e1"))
        status, body = call(sim, "POST", "/executions/e1/signals/go", {raw!r})
        sim.run()
        emit([status, body, len(sim.history("e1")) - before])
    """, "a deep signal payload parsed without a limit")
    assert status == 400, body
    one_line_error(body)
    assert history == 0
