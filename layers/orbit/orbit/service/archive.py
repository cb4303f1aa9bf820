"""The archive: an ended execution's history, kept in S3 as gzipped JSON lines past its retention.

Format (one object per execution, `archive/<quoted id>.jsonl.gz`): the first line is a header
`{"orbit_archive": 1, "execution_id", "workflow", "version", "status", "created_at_ms",
"ended_at_ms", "expires_at_s"}`; every further line is one recorded event exactly as the
history store returns it (`{"seq", "timestamp_ms", "type", ...fields}`, large values inline), in
seq order. `zcat FILE | tail -n +2` gives the lines `orbit history --json` prints.

When it is written (docs/decisions/0010-retention-archive-expiry.md): by the decision that ends the execution,
in its retire step, *before* the other items get their expiry and after the final commit landed.
A crash anywhere before the object landed redelivers the message; its commit is re-sent and the
retire step (archive included) runs again. The put replaces the object with the same bytes, so a
repeated write costs one PUT and changes nothing; a redriven execution that ends again rewrites
its archive with the longer history.

Reads: `describe` and `history` go to the archive when the table no longer has the execution
(deleted by TTL, or past its expiry and waiting for DynamoDB's sweep); everything that would
change the execution (signal, cancel, redrive, fork) still refuses it as expired.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable
from typing import Any

from orbit.core.history.events import Recorded, recorded_from_dict
from orbit.core.history.model import apply
from orbit.core.history.state import ExecutionState
from orbit.errors import ValidationError

FORMAT = 1


def encode_archive(state: ExecutionState, records: Iterable[Recorded], expires_at_s: int,
                   ended_at_ms: int) -> bytes:
    header = {"orbit_archive": FORMAT, "execution_id": state.id, "workflow": state.workflow,
              "version": state.version, "status": state.status, "created_at_ms": state.created_at_ms,
              "ended_at_ms": ended_at_ms, "expires_at_s": expires_at_s}
    lines = [header, *(r.to_dict() for r in records)]
    text = "\n".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) for line in lines) + "\n"
    return gzip.compress(text.encode(), compresslevel=6, mtime=0)  # same history, same bytes


class Archived:
    """One archived execution, read back: its header and its recorded events."""

    def __init__(self, header: dict[str, Any], records: list[Recorded]) -> None:
        self.header = header
        self.records = records

    def state(self) -> ExecutionState:
        """The state its history folds to (what describe shows)."""
        state = ExecutionState(id=str(self.header.get("execution_id")))
        for r in self.records:
            apply(state, r)
        return state


def decode_archive(data: bytes, execution_id: str) -> Archived:
    try:
        lines = gzip.decompress(data).decode().splitlines()
        header = json.loads(lines[0])
        if header.get("orbit_archive") != FORMAT or header.get("execution_id") != execution_id:
            raise ValueError("not this execution's archive")
        return Archived(header, [recorded_from_dict(json.loads(line)) for line in lines[1:] if line])
    except (OSError, EOFError, ValueError, IndexError, AttributeError) as e:
        raise ValidationError(f"the archive of execution {execution_id!r} cannot be read ({e})",
                              "archive") from None


def read_archived(archive: Any, execution_id: str, gone: Exception) -> Archived:
    """The archived execution, or `gone` (the table's NotFound / ExecutionExpired) raised again
    when the stack keeps no archive or holds none for this execution."""
    data = archive.get(execution_id) if archive is not None else None
    if data is None:
        raise gone
    return decode_archive(data, execution_id)
