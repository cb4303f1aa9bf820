"""Code workflows: `heartbeat_timeout=` on ctx.step, ctx.map and orbit.Step (ctx.parallel)."""

from __future__ import annotations

from code_harness import Harness
from orbit.core.runtime.code.specs import Step
from orbit.testing.simulator import hang, heartbeats, succeed
from orbit.workflow import CodeRegistry, workflow

REG = CodeRegistry()


def test_step_heartbeat_timeout_fails_a_silent_attempt_and_the_retry_runs() -> None:
    @workflow("hb-step", registry=REG)
    def wf(ctx, input):
        return ctx.step("media.transcode", input, heartbeat_timeout="30s", timeout="1h",
                        retry={"max_attempts": 2, "backoff": "1s"})

    h = Harness(wf)
    script = h.worker("media.transcode", hang(), heartbeats(20_000, 4, {"codec": "av1"}))
    h.start("hb-step", {"file": "a.mov"})
    h.run()
    assert h.describe()["status"] == "COMPLETED" and h.describe()["output"] == {"codec": "av1"}
    failed = [e for e in h.history() if e["type"] == "StepAttemptFailed"]
    assert [(e["error"]["code"], e["error"]["retryable"]) for e in failed] == [("HEARTBEAT_TIMEOUT", True)]
    assert failed[0]["timestamp_ms"] - h.history()[0]["timestamp_ms"] == 30_000
    # The second attempt ran 100s, heartbeating every 20s: alive past three heartbeat timeouts.
    assert [b["heartbeat_timeout_ms"] for b in script.seen] == [30_000, 30_000]


def test_map_and_parallel_pass_heartbeat_timeout_to_every_dispatch() -> None:
    @workflow("hb-map", registry=REG)
    def wf(ctx, input):
        shipped = ctx.map("shipping.ship", input, heartbeat_timeout="45s")
        both = ctx.parallel(Step("audit.log", shipped, heartbeat_timeout="2m"), ("audit.log", "plain"))
        return [shipped, both]

    h = Harness(wf)
    ship = h.worker("shipping.ship", succeed("ok"))
    audit = h.worker("audit.log", succeed("logged"))
    h.start("hb-map", [1, 2, 3])
    h.run()
    assert h.describe()["status"] == "COMPLETED"
    assert [b["heartbeat_timeout_ms"] for b in ship.seen] == [45_000] * 3
    # Only the Step that asked for one carries it; the tuple step's dispatch has no such key.
    assert sorted(str(b.get("heartbeat_timeout_ms")) for b in audit.seen) == ["120000", "None"]
    plain = next(b for b in audit.seen if b["input"] == "plain")
    assert "heartbeat_timeout_ms" not in plain


def test_a_bad_heartbeat_timeout_fails_the_call_naming_it() -> None:
    @workflow("hb-bad", registry=REG)
    def wf(ctx, input):
        return ctx.step("media.transcode", input, heartbeat_timeout="soon")

    h = Harness(wf)
    h.worker("media.transcode", succeed())
    h.start("hb-bad", {})
    d = h.describe()
    assert d["status"] == "FAILED"
    assert "heartbeat_timeout" in d["error"]["message"], d["error"]
