// Recovery actions (docs/recovery.md, docs/evolution.md), registered in Orbit.actions:
// redrive a FAILED or TIMED_OUT execution where it stopped, un-park a parked one at once, pause
// a running one and un-pause it.
// Each sends a POST through the console server (CSRF-checked) after a confirmation; the API's
// refusal (a compensated saga, an execution that is not parked...) is shown word for word.
"use strict";
(function () {
  const enc = encodeURIComponent;

  Orbit.actions.push(
    // shown only where the API accepts it (core/decider/recovery.py redrive_refusal): FAILED or
    // TIMED_OUT, not parked, no compensation ran
    { id: "redrive", label: "Redrive", when: (d) => ["FAILED", "TIMED_OUT"].includes(d.status) && !d.parked &&
        (!d.compensation || d.compensation === "none"),
      confirm: "Redrive this execution? It goes on where it stopped, with the same id and input: " +
        "units that succeeded keep their output, failed and cancelled ones run again.",
      // the request id makes a retried request redrive once
      post: (eid) => ["/executions/" + enc(eid) + "/redrive", { id: "console:" + Orbit.uid() }],
      done: (r) => "redriven (redrive " + r.redrive_count + "); running again: " + ((r.steps || []).join(", ") || "nothing") },
    { id: "unpark", label: "Un-park", when: (d) => Boolean(d.parked),
      confirm: "Try this parked execution again now, instead of at its next retry? " +
        "If its build is still missing or its code still disagrees with its history, it parks again.",
      post: (eid) => ["/executions/" + enc(eid) + "/unpark", {}],
      done: () => "un-park sent: the execution is replayed on its build now" },
    // orbit pause / unpause (docs/operations.md#pausing-an-execution)
    { id: "pause", label: "Pause", when: (d) => ["RUNNING", "COMPENSATING"].includes(d.status) && !d.paused,
      confirm: "Pause this execution? Nothing new is dispatched and no timer fires until it is " +
        "un-paused; answers and signals that arrive are recorded.",
      post: (eid) => ["/executions/" + enc(eid) + "/pause", { reason: "console" }],
      done: () => "pause sent" },
    { id: "unpause", label: "Unpause", when: (d) => Boolean(d.paused),
      confirm: "Un-pause this execution? Everything that came due while it was paused runs now.",
      post: (eid) => ["/executions/" + enc(eid) + "/unpause", { reason: "console" }],
      done: () => "unpause sent: what came due runs now" },
  );
})();
