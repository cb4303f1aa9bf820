// The event history: pages of 100 by seq, filtered by type, each event's payload expanding as JSON.
// Pages come without the values kept in S3 (null, their paths in `stored_values`): expanding such
// an event asks for that one event with its values, once.
"use strict";
(function () {
  const { el } = Orbit;
  const TYPES = ("WorkflowCreated WorkflowStarted StepFanOut StepScheduled StepSkipped StepDispatched StepHeartbeat " +
    "StepSucceeded StepAttemptFailed StepAttemptUncertain RetryScheduled StepFailed StepCancelled TimerStarted " +
    "TimerFired StaleResultIgnored CancelRequested FailRequested WorkflowTimeoutReached CompensationStarted " +
    "CompensationCompleted CompensationFailed WorkflowCompleted WorkflowFailed WorkflowCancelled WorkflowTimedOut " +
    "SignalReceived SignalConsumed HookCreated HookResumed WaitStarted ChildStarted ProgressRecorded " +
    "WorkflowContinuedAsNew ExecutionParked").split(" ");
  // what went wrong: highlighted in the list, and what "only failures" shows
  const FAILURES = ["StepAttemptFailed", "StepAttemptUncertain", "StepFailed", "CompensationFailed", "WorkflowTimeoutReached",
    "WorkflowFailed", "WorkflowTimedOut", "ExecutionParked"];
  const ONLY_FAILURES = "only failures and time-outs";
  const PAGE = 100;
  const FIRST = 25; // the first screen asks for these first; the rest of page 1 follows at once
  const HEAD = new Set(["seq", "timestamp_ms", "type", "stored_values"]);
  const dotted = (path) => path.map((k) => (typeof k === "number" ? "[" + k + "]" : "." + k)).join("").replace(/^\./, "");

  function summary(ev) {
    const bits = [];
    for (const k of ["step", "name", "attempt", "next_attempt", "task", "signal", "child_id", "reason"]) {
      if (ev[k] !== undefined && ev[k] !== "" && ev[k] !== null) bits.push(k + "=" + (typeof ev[k] === "string" ? ev[k] : JSON.stringify(ev[k])));
    }
    if (ev.error) bits.push(ev.error.code + ": " + ev.error.message);
    return bits.join("  ");
  }

  Orbit.historyPanel = function (eid, startMs) {
    const filter = el("select", { id: "type-filter" }, el("option", { value: "", text: "all event types" }),
      el("option", { value: FAILURES.join(","), text: ONLY_FAILURES }),
      TYPES.map((t) => el("option", { value: t, text: t })));
    const failuresOnly = el("input", { type: "checkbox", id: "failures-only" });
    failuresOnly.addEventListener("change", () => { filter.value = failuresOnly.checked ? FAILURES.join(",") : ""; afters = [0]; load(); });
    const body = el("tbody");
    const pager = el("div", { class: "pager" });
    const node = el("section", { class: "panel", id: "history" },
      el("h3", { text: "Event history" }), el("div", { class: "filters" }, el("label", {}, "Type ", filter), el("label", {}, failuresOnly, " only failures")),
      el("table", { class: "grid history" }, el("thead", {}, el("tr", {}, ["Seq", "At", "Type", "Details", ""].map((h) => el("th", { text: h })))), body),
      pager);
    let afters = [0]; // the after_seq of each page shown so far
    let last = null; // the newest page's events, to append live ones when it is not full

    const payloadOf = (ev) => {
      const payload = {};
      for (const [k, v] of Object.entries(ev)) if (!HEAD.has(k)) payload[k] = v;
      return payload;
    };

    function row(ev) {
      const stored = ev.stored_values || [];
      const bad = FAILURES.includes(ev.type) || (ev.type === "StepCancelled" && /time/i.test(ev.reason || ""));
      const tr = el("tr", { class: "event" + (bad ? " bad" : ""), dataset: Object.assign({ seq: ev.seq, type: ev.type }, stored.length ? { stored: stored.length } : {}) },
        el("td", { text: String(ev.seq) }), el("td", { text: "+" + Orbit.fmtDur(ev.timestamp_ms - startMs), title: Orbit.fmtTime(ev.timestamp_ms) }),
        el("td", { class: "etype", text: ev.type }), el("td", { class: "summary", text: summary(ev) }),
        el("td", {}, el("button", { type: "button", class: "expand", text: "▸ payload" })));
      const cell = el("td", { colSpan: 5 }, Orbit.jsonBlock(payloadOf(ev)));
      const detail = el("tr", { class: "payload", hidden: true }, cell);
      let fetched = !stored.length;
      tr.querySelector("button").addEventListener("click", async () => {
        detail.hidden = !detail.hidden;
        tr.querySelector("button").textContent = detail.hidden ? "▸ payload" : "▾ payload";
        if (detail.hidden || fetched) return;
        fetched = true;
        const note = el("p", { class: "muted stored-note", text: "fetching " + stored.map(dotted).join(", ") + " from the payload store (S3)…" });
        cell.replaceChildren(note, Orbit.jsonBlock(payloadOf(ev)));
        try {
          const full = await Orbit.api("/executions/" + encodeURIComponent(eid) + "/history/" + ev.seq);
          cell.replaceChildren(el("p", { class: "muted stored-note", text: "kept in S3, fetched on demand: " + stored.map(dotted).join(", ") }),
            Orbit.jsonBlock(payloadOf(full)));
        } catch (e) {
          fetched = false; // expanding again tries again
          note.className = "error stored-note";
          note.textContent = e.message;
        }
      });
      return [tr, detail];
    }

    const url = (after, limit) => "/_history/" + encodeURIComponent(eid) + Orbit.qs({ after_seq: after, limit: limit || PAGE, types: filter.value });
    let loading = 0; // a newer load makes an older one's late answers moot

    function pagerFor(events) {
      const full = events.length === PAGE;
      pager.replaceChildren(
        afters.length > 1 ? el("button", { type: "button", id: "history-prev", text: "← Earlier", onclick: () => { afters.pop(); load(); } }) : "",
        el("span", { class: "muted", text: " page " + afters.length + " " }),
        full ? el("button", { type: "button", id: "history-next", text: "Later →", onclick: () => { afters.push(events[events.length - 1].seq); load(); } }) : "",
      );
    }

    // `first`: the first FIRST events of page 1, asked for while the rest of the page was loading.
    // They are drawn at once; the rest of the page is read after, and appended (the first screen
    // does not wait for rows below it).
    async function load(first) {
      const mine = ++loading;
      const after = afters[afters.length - 1];
      let events = await (first || Orbit.api(url(after)));
      if (mine !== loading) return;
      body.replaceChildren(...events.flatMap(row));
      if (!events.length) body.append(el("tr", {}, el("td", { colSpan: 5, class: "muted", text: "no events" })));
      last = events;
      if (first && events.length === FIRST) {
        const rest = () => Orbit.api(url(events[events.length - 1].seq, PAGE - FIRST)).then((more) => {
          if (mine !== loading) return;
          body.append(...more.flatMap(row));
          last = events = events.concat(more);
          pagerFor(events);
        });
        rest().catch((e) => pager.replaceChildren(el("span", { class: "error", text: e.message })));
        return;
      }
      pagerFor(events);
    }
    filter.addEventListener("change", () => { failuresOnly.checked = filter.value === FAILURES.join(","); afters = [0]; load(); });

    return {
      node,
      load,
      // live: only the newest page changes, and only until it is full
      async refresh() { if (last && last.length < PAGE) await load(); },
    };
  };

  // The first screen's request, sent before the panel exists (it needs the execution's start time).
  Orbit.historyFirst = (eid) => Orbit.api("/_history/" + encodeURIComponent(eid) + "?after_seq=0&limit=" + FIRST);
})();
