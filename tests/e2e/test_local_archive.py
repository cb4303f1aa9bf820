"""The archive and the finding filters on the local stack (the template's ArchiveDays parameter)."""

from __future__ import annotations

from typing import Any

import pytest
from orbit.local import LocalStack

TAGGED = {"orbit": 1, "name": "local-tagged", "version": "1", "retention": "1h",
          "attributes": {"tier": "{% input.tier %}"},
          "steps": {"double": {"compute": "{% input.n * 2 %}"}}, "output": "{% steps.double.output %}"}


@pytest.fixture(scope="module")
def stack() -> Any:
    with LocalStack(mode="inprocess", parameters={"ArchiveDays": "30"}) as st:
        st.register(TAGGED)
        yield st


def test_a_local_stack_with_archive_days_reads_expired_executions_from_the_archive(stack: Any) -> None:
    import boto3

    eid = stack.start("local-tagged", {"tier": "gold", "n": 21}, id="lt-1")
    assert stack.run_until_done(eid)["output"] == 42
    before = stack.history(eid)
    rules = boto3.client("s3").get_bucket_lifecycle_configuration(
        Bucket=stack.services.settings.bucket)["Rules"]
    assert {"ID": "archive", "Status": "Enabled", "Filter": {"Prefix": "archive/"},
            "Expiration": {"Days": 30}} in rules
    stack.advance(2 * 3600 + 60)  # past its expiry (it ended young: its first hour + 1h): expired
    assert stack.history(eid) == before
    assert stack.describe(eid)["output"] == 42


def test_a_local_stack_lists_by_start_time_and_search_attribute(stack: Any) -> None:
    first = stack.start("local-tagged", {"tier": "silver", "n": 1}, id="lt-2")
    stack.run_until_done(first)
    stack.advance(60)
    second = stack.start("local-tagged", {"tier": "silver", "n": 2}, id="lt-3")
    stack.run_until_done(second)
    assert [e["execution_id"] for e in stack.list(where={"tier": "silver"})] == ["lt-3", "lt-2"]
    from orbit.core.schedule.times import format_time

    after = format_time(stack.now_ms() - 30_000)
    assert [e["execution_id"] for e in stack.list(where={"tier": "silver"}, started_after=after)] == ["lt-3"]
    assert [e["execution_id"] for e in stack.list(started_before=after, limit=1)] == ["lt-2"]
