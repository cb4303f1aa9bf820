"""The archive in memory: written when an execution ends, read once the execution has expired."""

from __future__ import annotations

import pytest
from orbit.adapters.memory_archive import MemoryArchive
from orbit.core.definition.retention import YOUNG_MS
from orbit.errors import ExecutionExpired, ValidationError
from orbit.service.archive import decode_archive

from tests.unit.dsl_harness import sim_with

DAY_MS = 24 * 3600 * 1000


def test_an_expired_execution_is_read_from_the_archive_and_refused_for_changes() -> None:
    sim = sim_with({"a": {"compute": "{% input.x + 1 %}"}, "w": {"wait_for": "go", "after": ["a"]}},
                   retention="1d")
    sim.engine.archive = archive = MemoryArchive()
    eid = sim.start("wf", {"x": 1}, id="ar-1")
    sim.run_until_idle()
    assert archive.objects == {}  # running: nothing archived yet
    sim.signal(eid, "go", {"ok": True})
    sim.run()
    before, desc = sim.engine.history(eid), sim.describe(eid)
    assert archive.puts == 1 and [r.to_dict() for r in decode_archive(archive.objects[eid], eid).records] \
        == sim.engine.recorded_history(eid)
    sim.clock.advance(DAY_MS + YOUNG_MS + 1000)  # it ended young: its expiry is its first hour's + 1d
    sim.engine._cache.clear()
    assert sim.engine.history(eid) == before and sim.describe(eid) == desc
    with pytest.raises(ExecutionExpired):
        sim.engine.cancel(eid)
    sim.engine.archive = None  # a stack without an archive: gone
    with pytest.raises(ExecutionExpired):
        sim.engine.history(eid)


def test_a_damaged_archive_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="the archive of execution 'x' cannot be read"):
        decode_archive(b"not gzip", "x")
