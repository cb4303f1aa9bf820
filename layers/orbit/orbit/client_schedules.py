"""`orbit.Client`'s schedule operations (a mixin over its `_call`), the same shapes as LocalStack's."""

from __future__ import annotations

import urllib.parse
from typing import Any


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


class ScheduleClientOps:
    def _call(self, method: str, path: str, body: Any = None) -> Any:
        raise NotImplementedError

    def create_schedule(
        self, schedule_id: str, workflow: str, input: Any = None, **config: Any
    ) -> dict[str, Any]:
        """`config`: cron | every (+ offset), timezone, start, end, jitter, exclude, overlap,
        catchup_window, pause_on_failure, version."""
        body = {"id": schedule_id, "workflow": workflow, "input": input,
                **{k: v for k, v in config.items() if v is not None}}
        return dict(self._call("POST", "/schedules", body))

    def update_schedule(self, schedule_id: str, config: dict[str, Any]) -> dict[str, Any]:
        return dict(self._call("PUT", f"/schedules/{_q(schedule_id)}", config))

    def describe_schedule(self, schedule_id: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/schedules/{_q(schedule_id)}"))

    def list_schedules(self, limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        return dict(self._call("GET", "/schedules?" + urllib.parse.urlencode(params)))

    def pause_schedule(self, schedule_id: str, note: str = "") -> dict[str, Any]:
        return dict(self._call("POST", f"/schedules/{_q(schedule_id)}/pause", {"note": note}))

    def resume_schedule(self, schedule_id: str, note: str = "") -> dict[str, Any]:
        return dict(self._call("POST", f"/schedules/{_q(schedule_id)}/resume", {"note": note}))

    def trigger_schedule(self, schedule_id: str, overlap: str | None = None) -> str | None:
        out = self._call("POST", f"/schedules/{_q(schedule_id)}/trigger", {"overlap": overlap})
        return None if out is None else out.get("execution_id")

    def backfill_schedule(
        self, schedule_id: str, start: str, end: str, overlap: str | None = None
    ) -> list[str]:
        body = {"start": start, "end": end, "overlap": overlap}
        return list(self._call("POST", f"/schedules/{_q(schedule_id)}/backfill", body)["execution_ids"])

    def delete_schedule(self, schedule_id: str) -> None:
        self._call("DELETE", f"/schedules/{_q(schedule_id)}")
