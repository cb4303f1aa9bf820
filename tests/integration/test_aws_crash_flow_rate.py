"""The crash matrix around a rate limit's token (moto; docs/decisions/flow3-task-limits.md, "The
race after a crash"): three dispatches of a task limited to 1 per minute (burst 1), a crash before
or after each token write and each send, then the redelivered commit re-sends the dispatch
(`resent`). Nothing is lost, and in no minute do more leave than the rate allows: before the fix a
crash between the commit and the token's write let the re-sent copy leave without a token."""

from __future__ import annotations

from typing import Any

import pytest
from aws_resources import Clients, Stack
from orbit.adapters.dynamodb.limits import DynamoLimits
from orbit.core.flow.gates import Bucket, Gate
from orbit.service.limits import FlowGate
from test_aws_flow_limits import Clock, Crash, Crashing, Sent, _copy_table

MINUTE = 60_000
BUCKET = Bucket("task:t|", "task:t", "", 1, MINUTE, 1, "wait")


class Timed(Sent):
    """Sends with the second each leaves at (the clock does not move: now + its delay)."""

    def __init__(self, counter: Crashing) -> None:
        super().__init__(counter)
        self.leaves: list[tuple[str, int]] = []

    def send_task(self, queue: str, body: dict[str, Any], delay_s: int = 0) -> None:
        super().send_task(queue, body, delay_s)
        self.leaves.append((str(body["holder"]), delay_s))


def _run(clients: Clients, table: str, at: int, after: bool) -> tuple[Timed, int]:
    client = Crashing(clients.dynamodb, at, after)
    queues = Timed(client)
    flow = FlowGate(DynamoLimits(client, table), queues, Clock())  # type: ignore[arg-type]
    for h in ("a", "b", "c"):
        body = {"holder": h, "execution_id": h, "unit": "s", "token": h}
        try:
            flow.dispatch(Gate(f"a:{h}|s|1", (), BUCKET, 3), "q", body)
        except Crash:  # the decision's message comes back: its commit's effects are re-sent
            flow.dispatch(Gate(f"a:{h}|s|1", (), BUCKET, 3), "q", {**body, "resent": True})
    return queues, client.writes


def test_crash_matrix_around_the_token_of_a_rate_limit(clients: Clients, stack: Stack) -> None:
    clean, points = _run(clients, stack.table, 0, False)
    assert clean.leaves == [("a", 0), ("b", 60), ("c", 120)]
    assert points == 6  # 3 token writes, 3 sends
    for at in range(1, points + 1):
        for after in (False, True):
            table = f"{stack.table}-r{at}-{int(after)}"
            _copy_table(clients, stack.table, table)
            queues, _ = _run(clients, table, at, after)
            holders = {h for h, _ in queues.leaves}
            assert holders == {"a", "b", "c"}, (at, after, queues.leaves)  # nothing lost
            times = sorted(d * 1000 for _, d in queues.leaves)
            for w in times:  # in any minute: at most the burst + the rate
                assert sum(1 for t in times if w <= t < w + MINUTE) <= 1, (at, after, queues.leaves)


@pytest.mark.parametrize("after", [False, True])
def test_a_resent_dispatch_under_fail_is_never_failed(clients: Clients, stack: Stack, after: bool) -> None:
    strict = Bucket("task:u|", "task:u", "", 1, MINUTE, 1, "fail")
    client = Crashing(clients.dynamodb, 1, after)  # the first token's write
    queues = Sent(client)
    flow = FlowGate(DynamoLimits(client, stack.table), queues, Clock())  # type: ignore[arg-type]
    body = {"holder": "a", "execution_id": "a", "unit": "s", "token": "a"}
    with pytest.raises(Crash):
        flow.dispatch(Gate("a:a|s|1", (), strict, 3), "q", body)
    flow.dispatch(Gate("a:a|s|1", (), strict, 3), "q", {**body, "resent": True})
    assert [b["holder"] for b in queues.tasks] == ["a"] and queues.decisions == []
