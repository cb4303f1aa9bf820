// One step's story, shown when its node (graph) or its call (tree) is clicked: status, timing, each
// attempt (queued, dispatched, ended, outcome, worker, error), its input, output and error, and a
// fan-out's elements (each opens the same panel). Read from /_step/<id>/<unit> (orbit/console/steps.py).
"use strict";
(function () {
  const { el } = Orbit;
  const enc = encodeURIComponent;
  const at = (ms, start) => (ms === null || ms === undefined ? "-" : "+" + Orbit.fmtDur(ms - start));

  function attemptsTable(attempts, start) {
    if (!attempts.length) return el("p", { class: "muted", text: "no attempts (not a task, or not scheduled yet)" });
    return el("table", { class: "grid attempts" },
      el("thead", {}, el("tr", {}, ["#", "Queued", "Dispatched", "Ended", "Took", "Outcome", "Worker", "Error"].map((h) => el("th", { text: h })))),
      el("tbody", {}, attempts.map((a) => el("tr", { class: "attempt o-" + a.outcome, dataset: { attempt: a.attempt, outcome: a.outcome } },
        el("td", { text: String(a.attempt) }), el("td", { text: at(a.scheduled_ms, start), title: Orbit.fmtTime(a.scheduled_ms) }),
        el("td", { text: at(a.dispatched_ms, start) }), el("td", { text: at(a.ended_ms, start) }),
        el("td", { text: a.ended_ms && a.dispatched_ms ? Orbit.fmtDur(a.ended_ms - a.dispatched_ms) : "-" }),
        el("td", { text: a.outcome }), el("td", { text: a.worker || "-" }),
        el("td", { class: "error", text: a.error ? (typeof a.error === "string" ? a.error : a.error.code + ": " + a.error.message) : "" })))));
  }

  // `holder`: the section to fill; `describeUnit`: describe.steps[unit] (a wait's output is there).
  Orbit.stepDetail = async function (holder, eid, unit, startMs, describeUnit, onSelect) {
    const d = await Orbit.api("/_step/" + enc(eid) + "/" + enc(unit));
    const output = d.output !== null && d.output !== undefined ? d.output : describeUnit ? describeUnit.output : null;
    const start = startMs || d.started_ms;
    const head = el("div", { class: "step-head" },
      el("h3", { class: "step-name", text: unit }), Orbit.badge(d.status),
      d.task ? el("code", { class: "muted", text: " " + d.task }) : "",
      el("button", { type: "button", id: "step-close", class: "auto", text: "Close", onclick: () => { holder.hidden = true; onSelect(null); } }));
    const timing = el("p", { class: "timing", id: "step-timing" },
      "started " + Orbit.fmtTime(d.started_ms) + " (" + at(d.started_ms, start) + "), ended " +
      (d.ended_ms ? Orbit.fmtTime(d.ended_ms) + ", took " + Orbit.fmtDur(d.duration_ms) : "- (not ended)"));
    const stored = d.stored_values.length
      ? el("p", { class: "muted", text: "values kept in S3 are not read here (expand the event in the history): " + d.stored_values.map((p) => p.join(".")).join(", ") })
      : "";
    const elements = d.elements.length ? el("div", { class: "elements" }, el("h4", { text: "Elements" }),
      el("ul", { class: "element-list" }, d.elements.map((e) => el("li", {},
        el("a", { href: "#", dataset: { step: e.unit }, text: e.unit, onclick: (ev) => { ev.preventDefault(); onSelect(e.unit); } }), " ", Orbit.badge(e.status)))),
      d.hidden_elements ? el("p", { class: "muted", text: d.hidden_elements + " more elements" }) : "") : "";
    holder.replaceChildren(head, timing, el("h4", { text: "Attempts" }), attemptsTable(d.attempts, start),
      el("div", { class: "io" },
        el("div", {}, el("h4", { text: "Input" }), Orbit.jsonBlock(d.input, "step-input")),
        el("div", {}, el("h4", { text: "Output" }), Orbit.jsonBlock(output, "step-output")),
        d.error ? el("div", {}, el("h4", { text: "Error" }), Orbit.jsonBlock(d.error, "step-error")) : ""),
      d.reason ? el("p", { class: "muted", text: "reason: " + d.reason }) : "", stored, elements);
    holder.hidden = false;
    holder.dataset.step = unit;
  };
})();
