"""The shared task and queue limits on DynamoDB (moto; adapters/dynamodb/task_limits.py,
docs/decisions/flow3-task-limits.md): two processes (two registries) agree on when a concurrency
limit is in force, whatever their caches hold; a declaration keyed otherwise is refused and stores
nothing; a field is never lost; a crash before or after the new write loses nothing (the
registration, retried, completes)."""

from __future__ import annotations

from typing import Any

import pytest
from aws_resources import Clients, Stack
from orbit.adapters.dynamodb import DynamoRegistry
from orbit.adapters.dynamodb.task_limits import SETTLE_MS, TTL_S
from orbit.adapters.s3 import S3PayloadStore
from orbit.core.definition import parse_definition
from orbit.errors import UnknownWorkflow, ValidationError
from test_aws_flow_limits import Crash, Crashing
from test_aws_registry import Seconds

T0 = 1_767_225_600_000
PARTNER = {"partner.call": {"concurrency": {"limit": 5, "key": "{% input.partner %}"}}}


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def now_ms(self) -> int:
        return self.now


def definition(name: str, tasks: Any = None, queues: Any = None) -> Any:
    raw: dict[str, Any] = {"orbit": 1, "name": name, "version": "1", "steps": {"a": {"task": "partner.call"}}}
    if tasks is not None:
        raw["tasks"] = tasks
    if queues is not None:
        raw["queues"] = queues
    return parse_definition(raw)


def registry(clients: Clients, stack: Stack, clock: Clock, seconds: Seconds,
             client: Any = None) -> DynamoRegistry:
    return DynamoRegistry(client or clients.dynamodb, stack.table, S3PayloadStore(clients.s3, stack.bucket),
                          clock, monotonic=seconds)


def test_two_processes_agree_on_when_a_concurrency_limit_is_in_force(clients: Clients, stack: Stack) -> None:
    clock, seconds = Clock(), Seconds()
    a, b = registry(clients, stack, clock, seconds), registry(clients, stack, clock, seconds)
    assert b.task_limits(clock.now) == {}  # b's cache is read now, before the declaration
    a.register(definition("declares", PARTNER, {"erp": {"concurrency": 2}}))
    for t in (0, SETTLE_MS - 1):  # before it settles, nobody applies it, whatever its cache holds
        clock.now = T0 + t
        assert "concurrency" not in a.task_limits(clock.now).get("task:partner.call", {})
        assert "concurrency" not in b.task_limits(clock.now).get("task:partner.call", {})
    seconds.now += TTL_S  # every cache older than the settle time has expired by then
    clock.now = T0 + SETTLE_MS
    for r in (a, b):
        seen = r.task_limits(clock.now)
        assert seen["task:partner.call"]["concurrency"] == PARTNER["partner.call"]["concurrency"]
        assert seen["queue:erp"]["concurrency"] == 2
    before = b.shared.reads
    assert b.task_limits(clock.now) is b.task_limits(clock.now + 1)  # cached: no request, same object
    assert b.shared.reads == before


def test_another_key_is_refused_naming_the_path_and_nothing_is_stored(clients: Clients, stack: Stack) -> None:
    clock, seconds = Clock(), Seconds()
    a, b = registry(clients, stack, clock, seconds), registry(clients, stack, clock, seconds)
    a.register(definition("declares", PARTNER))
    other = {"partner.call": {"concurrency": {"limit": 5, "key": "{% input.region %}"}}}
    with pytest.raises(ValidationError) as e:
        b.register(definition("other", other))
    assert e.value.problems[0].path == "tasks.partner.call.concurrency.key"
    assert "declared by declares v1" in str(e.value)
    with pytest.raises(UnknownWorkflow):
        registry(clients, stack, clock, seconds).get("other")
    b.register(definition("priority-only", {"partner.call": {"priority": 1}}))  # keeps the limit
    clock.now += SETTLE_MS
    entry = registry(clients, stack, clock, seconds).task_limits(clock.now)["task:partner.call"]
    assert entry["concurrency"]["key"] == "{% input.partner %}" and entry["priority"] == 1


@pytest.mark.parametrize("after", [False, True])
def test_a_crash_around_the_declaration_loses_nothing(clients: Clients, stack: Stack, after: bool) -> None:
    clock, seconds = Clock(), Seconds()
    crashing = Crashing(clients.dynamodb, at=1, after=after)  # the first write: the declaration
    with pytest.raises(Crash):
        registry(clients, stack, clock, seconds, crashing).register(definition("declares", PARTNER))
    fresh = registry(clients, stack, clock, seconds)
    with pytest.raises(UnknownWorkflow):
        fresh.get("declares")  # the definition was not stored: its registration failed
    fresh.register(definition("declares", PARTNER))  # the caller registers again
    clock.now += SETTLE_MS
    seen = registry(clients, stack, clock, seconds)
    assert seen.get("declares").name == "declares"
    entry = seen.task_limits(clock.now)["task:partner.call"]
    assert entry["concurrency"]["limit"] == 5 and entry["ca"] == T0  # in force from its first write


@pytest.mark.parametrize("at", [2, 3])
def test_a_crash_after_the_declaration_before_the_definition_is_stored(clients: Clients, stack: Stack,
                                                                        at: int) -> None:
    clock, seconds = Clock(), Seconds()
    with pytest.raises(Crash):
        registry(clients, stack, clock, seconds, Crashing(clients.dynamodb, at=at)).register(
            definition("declares", PARTNER))
    registry(clients, stack, clock, seconds).register(definition("declares", PARTNER))
    clock.now += SETTLE_MS
    seen = registry(clients, stack, clock, seconds)
    assert seen.get("declares").name == "declares"
    assert seen.task_limits(clock.now)["task:partner.call"]["concurrency"]["limit"] == 5


@pytest.mark.parametrize("role", ["DefinitionsRole", "ApiRole", "DeciderRole"])
def test_the_roles_that_register_or_read_the_registry_may(role: str) -> None:
    """An app's definitions register through DefinitionsFunction (Custom::OrbitDefinition), others
    through the API; deciders read. moto does not enforce IAM: the template's grants are checked
    against the registry's partition key."""
    import fnmatch

    from orbit.adapters.dynamodb.task_limits import PK
    from test_aws_policies import actions, grants, leading_keys, template_roles

    roles = template_roles()
    needed = {"dynamodb:Query"} | ({"dynamodb:UpdateItem"} if role != "DeciderRole" else set())
    for action in needed:
        allowed = [st for st in grants(roles[role]) if action in actions(st)
                   and (leading_keys(st) is None
                        or any(fnmatch.fnmatchcase(PK, k) for k in leading_keys(st) or []))]
        assert allowed, f"{role} may not {action} on {PK}"
