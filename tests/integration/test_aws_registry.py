"""DynamoRegistry on moto: what it caches, what it must still see, and that its errors did not change."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from aws_resources import Clients, Stack
from orbit.adapters.dynamodb import DynamoRegistry
from orbit.adapters.s3 import S3PayloadStore
from orbit.core.definition import parse_definition
from orbit.errors import BuildMismatch, UnknownWorkflow
from orbit.workflow import CodeRegistry


def definition(version: str, task: str = "t.one") -> Any:
    return parse_definition({"orbit": 1, "name": "reg", "version": version, "steps": {"a": {"task": task}}})


class Seconds:
    """A monotonic clock the test moves (the registry's TTL clock)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FixedClock:
    def now_ms(self) -> int:
        return 1_767_225_600_000


@pytest.fixture
def gets(clients: Clients) -> Iterator[list[str]]:
    """The sort keys of every GetItem the session's DynamoDB client makes during the test."""
    seen: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        seen.append(params["Key"]["sk"]["S"])

    clients.dynamodb.meta.events.register("provide-client-params.dynamodb.GetItem", record)
    try:
        yield seen
    finally:
        clients.dynamodb.meta.events.unregister("provide-client-params.dynamodb.GetItem", record)


def registry(clients: Clients, stack: Stack, seconds: Seconds) -> DynamoRegistry:
    """One process's registry (its own caches), on the shared table."""
    return DynamoRegistry(clients.dynamodb, stack.table, S3PayloadStore(clients.s3, stack.bucket),
                          FixedClock(), code=CodeRegistry(), pointer_ttl_s=2.0, monotonic=seconds)


def test_a_pinned_build_is_read_once_and_the_latest_pointer_once_per_ttl(
        clients: Clients, stack: Stack, gets: list[str]) -> None:
    seconds = Seconds()
    registry(clients, stack, seconds).register(definition("1"))
    other = registry(clients, stack, seconds)  # another process: nothing cached
    gets.clear()
    first = other.get("reg")
    assert (first.version, gets) == ("1", ["LATEST", "B#1#" + first.hash])
    gets.clear()
    assert other.get("reg") is first and other.get("reg", "1") is not None
    assert other.get_build("reg", "1", first.hash) is first
    assert gets == ["V#1"]  # the explicit version's pointer was never read here; LATEST was cached
    seconds.now += 2.5  # past the TTL: the pointer is read again, the immutable build is not
    gets.clear()
    assert other.get("reg") is first
    assert gets == ["LATEST"]


def test_a_new_version_is_visible_here_at_once_and_elsewhere_within_the_ttl(
        clients: Clients, stack: Stack, gets: list[str]) -> None:
    seconds = Seconds()
    here = registry(clients, stack, seconds)
    elsewhere = registry(clients, stack, seconds)
    here.register(definition("1"))
    assert elsewhere.get("reg").version == "1"
    here.register(definition("2"))
    assert here.get("reg").version == "2"  # the registering process: at once, no read
    assert elsewhere.get("reg", "2").version == "2"  # an explicit new version: read, at once
    assert elsewhere.get("reg").version == "1"  # the default: the cached pointer, inside the TTL
    seconds.now += 2.0
    assert elsewhere.get("reg").version == "2"
    # Same version, different definition: a new build that V#2 now points at.
    changed = definition("2", task="t.two")
    here.register(changed)
    assert here.get("reg", "2").hash == changed.hash
    seconds.now += 2.0
    assert elsewhere.get("reg", "2").hash == changed.hash
    assert elsewhere.get_build("reg", "2", definition("2").hash).hash == definition("2").hash


def test_errors_are_unchanged_and_misses_are_not_cached(
        clients: Clients, stack: Stack, gets: list[str]) -> None:
    seconds = Seconds()
    here = registry(clients, stack, seconds)
    elsewhere = registry(clients, stack, seconds)
    with pytest.raises(UnknownWorkflow, match=r"^no workflow named 'reg' is registered$"):
        elsewhere.get("reg")
    here.register(definition("1"))
    assert elsewhere.get("reg").version == "1"  # the miss above was not remembered
    with pytest.raises(UnknownWorkflow, match=r"^no workflow named 'reg' with version '9' is registered$"):
        elsewhere.get("reg", "9")
    with pytest.raises(UnknownWorkflow, match=r"^no workflow named 'reg' with version '9' is registered$"):
        elsewhere.get_build("reg", "9", "abc")
    with pytest.raises(BuildMismatch, match=r"^workflow 'reg' version '1' has no build 'abc'$"):
        elsewhere.get_build("reg", "1", "abc")
    gets.clear()
    with pytest.raises(BuildMismatch):
        elsewhere.get_build("reg", "1", "abc")
    assert gets == ["B#1#abc", "V#1"]  # read again: a failed lookup is never served from memory


def test_builds_lists_every_stored_definition_build(clients: Clients, stack: Stack) -> None:
    """The catalog rows the console's Workflows view reads: one per (name, version, hash)."""
    reg = registry(clients, stack, Seconds())
    one, two, two_again = definition("1"), definition("2"), definition("2", task="t.two")
    for d in (one, two, two_again):
        reg.register(d)
    assert sorted(reg.builds()) == sorted(
        [("reg", "1", one.hash), ("reg", "2", two.hash), ("reg", "2", two_again.hash)]
    )
    assert len(reg.builds(limit=2)) == 2


def test_retire_is_seen_by_other_processes_within_the_ttl_and_a_new_registration_lifts_it(
        clients: Clients, stack: Stack, gets: list[str]) -> None:
    from orbit.errors import WorkflowRetired

    seconds = Seconds()
    here, other = registry(clients, stack, seconds), registry(clients, stack, seconds)
    here.register(definition("1"))
    here.register(definition("2", task="t.two"))
    assert other.get("reg").version == "2"  # cached in the other process
    assert here.retire("reg", "2") == ["2"]
    with pytest.raises(WorkflowRetired, match="its latest version, 2, is retired"):
        here.get("reg")  # this process: at once
    assert other.get("reg").version == "2"  # the other: its pointer is cached for the TTL...
    seconds.now += 2.5
    gets.clear()
    with pytest.raises(WorkflowRetired, match="version 2 is retired"):
        other.get("reg", "2")
    with pytest.raises(WorkflowRetired):
        other.get("reg")  # ...then it sees the flag, with one read of the pointer
    assert gets == ["V#2", "LATEST"]
    assert other.get("reg", "1").version == "1"
    assert other.retired("reg", "2") and not other.retired("reg", "1")
    pinned = other.get_build("reg", "2", definition("2", task="t.two").hash)  # running executions go on
    assert pinned.version == "2"
    assert here.retire("reg") == ["1", "2"]
    here.register(definition("2", task="t.two"))  # registered again: starts are back
    assert here.get("reg").version == "2" and not here.retired("reg", "2") and here.retired("reg", "1")
    with pytest.raises(UnknownWorkflow, match="cannot retire 'nope'"):
        here.retire("nope")
