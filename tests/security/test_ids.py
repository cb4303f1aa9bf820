"""Hostile ids (issue 25 item 3; docs/security.md, "Ids callers choose"): ids the engine derives
(children `P/x`, continuations `x~1`, schedule ids `schedule:...` and runs `name:<RFC 3339>`) and
ids carrying control characters or markup are refused on start and on fork, as a 400 naming
`body.id`, through the handlers and through a real `orbit dev`; nothing is created under them."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.security.harness import DevProcess, in_child, one_line_error

DERIVED = ["P1/kid", "x~1", "schedule:nightly", "nightly:2026-03-30T07:00:00Z",
           "nightly:2026-03-30T07:00:00.5Z"]
UNPRINTABLE = ["x\ny", "a\rb", "\x1b[31mred", "bell\x07", "nul\x00", "del\x7f", "rtl\u202eexe.txt",
               "<img src=x onerror=alert(1)>", "a b", "", "x" * 201]
ALL = DERIVED + UNPRINTABLE


def test_the_handlers_refuse_derived_and_unprintable_ids_on_start_fork_and_signal() -> None:
    got = in_child(f"""
        sim = world()
        sim.register(definition("plain", {{"a": {{"compute": "{{% input.n + 1 %}}"}},
                                           "w": {{"wait_for": "go", "after": ["a"]}}}}))
        out = {{"parent": call(sim, "POST", "/executions", {{"workflow": "plain", "id": "P1",
                                                             "input": {{"n": 1}}}})}}
        sim.run()
        for bad in {ALL!r}:
            out[repr(bad)] = [
                call(sim, "POST", "/executions", {{"workflow": "plain", "id": bad, "input": {{"n": 1}}}}),
                call(sim, "POST", "/executions/P1/fork", {{"from_step": "a", "id": bad}}),
            ]
            if bad in {UNPRINTABLE!r}:  # a signal id may hold `/`, `~` and `:` (docs/security.md)
                signal = {{"id": bad, "payload": 1}}
                out[repr(bad)].append(call(sim, "POST", "/executions/P1/signals/go", signal))
        listed = call(sim, "GET", "/executions", None, {{"limit": "1000"}})[1]["executions"]
        out["existing"] = sorted(e["execution_id"] for e in listed)
        emit(out)
    """, "the id rule on start, fork and signal")
    assert got.pop("parent")[0] == 201
    assert got.pop("existing") == ["P1"], "an execution was created under a refused id"
    for bad, answers in got.items():
        for status, body in answers:
            assert status == 400, (bad, body)
            one_line_error(body)
            assert body["error"]["problems"][0]["path"] == "body.id", (bad, body)


@pytest.mark.parametrize("bad", ALL[:6] + ["<img src=x onerror=alert(1)>", "\x1b]0;pwned\x07"])
def test_orbit_dev_refuses_the_same_ids(dev: DevProcess, bad: str) -> None:
    parent = {"workflow": "sec-plain", "id": "parent", "input": {"n": 1}}
    status, body = dev.request("POST", "/executions", parent)
    assert status in (201, 409), body
    status, body = dev.request("POST", "/executions", {"workflow": "sec-plain", "id": bad, "input": {"n": 1}})
    assert status == 400 and body["error"]["problems"][0]["path"] == "body.id", body
    one_line_error(body)
    status, body = dev.request("POST", "/executions/parent/fork", {"from_step": "a", "id": bad})
    assert status == 400 and body["error"]["problems"][0]["path"] == "body.id", body
    status, _ = dev.request("GET", "/executions/" + quote(bad, safe=""))
    assert status in (400, 404)  # nothing was created under it


def test_orbit_dev_still_serves_after_the_id_probes(dev: DevProcess) -> None:
    dev.still_serves("after-id-probes")
