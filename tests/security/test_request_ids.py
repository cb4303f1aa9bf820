"""Issue 25, Low: the same signal or update id with another payload or name is a 409 naming the
difference, also while the first request is still queued (not yet received or recorded): the id is
claimed when the API accepts a request (orbit/service/request_claims.py). A retry of the same
request is still accepted, and the execution receives it once. (Branch sec6; each case answered 202
on main, the second request then silently got the first one's outcome.)"""

from __future__ import annotations

from tests.security.harness import in_child, one_line_error

UPDATES = """
defn = definition("upd", {"open": {"wait_for": "item"}, "done": {"wait_for": "stop", "after": ["open"]}},
                  updates={"add": {"signal": "item", "result": "{% steps.open.output %}"}})
"""


def test_a_queued_signal_id_sent_again_with_another_payload_or_name_is_a_409() -> None:
    first, again, payload, name, received = in_child("""
        sim = world()
        sim.register(definition("plain", {"w": {"wait_for": "go"},
                                          "x": {"wait_for": "stop", "after": ["w"]}}))
        call(sim, "POST", "/executions", {"workflow": "plain", "id": "e1"})
        sim.run()
        first = call(sim, "POST", "/executions/e1/signals/go", {"id": "s1", "payload": {"amount": 1}})
        # not run: the first signal is still queued
        again = call(sim, "POST", "/executions/e1/signals/go", {"id": "s1", "payload": {"amount": 1}})
        payload = call(sim, "POST", "/executions/e1/signals/go", {"id": "s1", "payload": {"amount": 1000}})
        name = call(sim, "POST", "/executions/e1/signals/stop", {"id": "s1", "payload": {"amount": 1}})
        sim.run()
        received = [e.get("payload") for e in sim.engine.history("e1") if e["type"] == "SignalReceived"]
        emit([first, again, payload, name, received])
    """, "a queued signal id reused with another payload")
    assert first[0] == 202 and again[0] == 202, (first, again)
    assert payload[0] == 409 and name[0] == 409, (payload, name)
    assert "signal 'go' was sent with another payload" in one_line_error(payload[1])
    assert "it was signal 'go', this is signal 'stop'" in one_line_error(name[1])
    assert received == [{"amount": 1}]


def test_a_queued_update_id_sent_again_with_another_input_is_a_409() -> None:
    first, again, other, result = in_child("""
        sim = world()
        sim.register(defn)
        call(sim, "POST", "/executions", {"workflow": "upd", "id": "e1"})
        sim.run()
        body = {"input": {"sku": "A"}, "update_id": "u1", "timeout": 0}
        first = call(sim, "POST", "/executions/e1/updates/add", body)
        again = call(sim, "POST", "/executions/e1/updates/add", body)
        other = call(sim, "POST", "/executions/e1/updates/add", {**body, "input": {"sku": "B"}})
        sim.run()
        result = call(sim, "POST", "/executions/e1/updates/add", body)
        emit([first, again, other, result])
    """, "a queued update id reused with another input", setup=UPDATES)
    assert first[0] == 202 and again[0] == 202, (first, again)
    assert other[0] == 409, other
    assert "update 'add' was sent with another input" in one_line_error(other[1])
    assert result[0] == 200 and result[1]["result"] == {"sku": "A"}, result
