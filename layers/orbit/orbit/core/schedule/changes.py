"""A schedule update that names only what changes: the full config to send, from the current one.

`describe` gives the config in its stored shape (`spec` with `every_ms`/`offset_ms`,
`catchup_window_ms`); an update takes the create shape. Fields not named keep their values;
naming `cron` or `every` replaces the other way of timing (and the interval's offset).
Used by `LocalStack.update_schedule` and `orbit schedule update`.
"""

from __future__ import annotations

from typing import Any

SPEC_KEYS = ("cron", "every", "offset", "timezone", "start", "end", "jitter", "exclude")
KEPT = ("workflow", "version", "input", "overlap", "catchup_window_ms", "pause_on_failure")


def merged_config(current: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    keep = {k: current[k] for k in KEPT if k in current}
    spec = dict(current.get("spec") or {})
    if "cron" in changes or "every" in changes:
        for k in ("cron", "every_ms", "offset_ms"):
            spec.pop(k, None)
    spec.update({k: v for k, v in changes.items() if k in SPEC_KEYS})
    if "catchup_window" in changes:
        keep.pop("catchup_window_ms", None)
    return {**keep, **{k: v for k, v in changes.items() if k not in SPEC_KEYS}, "spec": spec}
