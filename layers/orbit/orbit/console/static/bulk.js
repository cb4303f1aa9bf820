// Bulk actions from the executions list (docs/operations.md, "Bulk actions"): the list's filters
// become one filter text; "Act on all matching…" previews how many executions match
// (POST /batches/preview), asks, then starts a batch (POST /batches/{action}) and follows its progress
// (GET /batches/{id}) until it ends; "Stop" stops it.
"use strict";
(function () {
  const { el } = Orbit;
  const enc = encodeURIComponent;
  const ACTIONS = [
    ["cancel", "Cancel", true], ["pause", "Pause", false], ["unpause", "Unpause", false],
    ["redrive", "Redrive", false], ["signal", "Send a signal", false],
  ];
  const quote = (s) => JSON.stringify(String(s));
  const iso = (ms) => new Date(Number(ms)).toISOString();

  // The list's separate filters and its filter text as one filter (core/search.py's language).
  Orbit.filterText = function (params) {
    const parts = [];
    if (params.workflow) parts.push("workflow = " + quote(params.workflow));
    if (params.status) parts.push("status = " + params.status);
    if (params.started_after) parts.push("started >= " + iso(params.started_after));
    if (params.started_before) parts.push("started < " + iso(params.started_before));
    if (params.id_prefix) parts.push("id STARTS_WITH " + quote(params.id_prefix));
    if (params.where) parts.push(params.where);
    return parts.join(" AND ");
  };

  function progress(b) {
    return el("div", { id: "bulk-progress", dataset: { status: b.status } },
      el("p", {}, el("strong", { text: "Batch " + b.id + ": " }), Orbit.badge(b.status)),
      el("p", { text: `${b.action} where ${b.where}` }),
      el("p", { id: "bulk-counts", text: `seen ${b.seen} · acted ${b.acted} · skipped ${b.skipped} · failed ${b.failed}` }),
      ...(b.errors || []).map((e) => el("p", { class: "error", text: e.execution_id + ": " + e.error })));
  }

  async function follow(box, id) {
    for (;;) {
      const b = await Orbit.api("/batches/" + enc(id));
      const stop = el("button", { type: "button", id: "bulk-stop", class: "danger", text: "Stop",
        hidden: b.status !== "RUNNING",
        onclick: async () => { await Orbit.api("/batches/" + enc(id) + "/stop", {}); } });
      box.replaceChildren(progress(b), stop);
      if (b.status !== "RUNNING" || !box.isConnected) return;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  Orbit.bulkPanel = function (params) {
    const box = el("section", { class: "panel", id: "bulk" });
    const action = el("select", { id: "bulk-action" }, ACTIONS.map(([v, t]) => el("option", { value: v, text: t })));
    const signal = el("input", { id: "bulk-signal", placeholder: "signal name", hidden: true });
    const payload = el("input", { id: "bulk-payload", placeholder: "payload (JSON)", value: "{}", hidden: true });
    const reason = el("input", { id: "bulk-reason", placeholder: "reason (recorded)" });
    const result = el("div", { id: "bulk-result" });
    action.addEventListener("change", () => { signal.hidden = payload.hidden = action.value !== "signal"; });
    const go = el("button", { type: "button", id: "bulk-go", text: "Act on all matching…", onclick: async () => {
      const where = Orbit.filterText(params);
      result.replaceChildren();
      if (!where) {
        result.append(el("p", { class: "error", text: "Set a filter first: a bulk action never acts on every execution." }));
        return;
      }
      let seen;
      try {
        seen = await Orbit.api("/batches/preview", { where });
      } catch (e) {
        result.append(el("p", { class: "error", id: "bulk-refused", text: e.message }));
        return;
      }
      const [, label, destructive] = ACTIONS.find(([v]) => v === action.value);
      const count = (seen.capped ? "at least " : "") + seen.count;
      const body = el("div", {},
        el("p", { id: "bulk-count", text: `${label}: ${count} execution(s) match ${where}` }),
        seen.first.length ? el("p", { class: "muted", text: "first: " + seen.first.join(", ") }) : "");
      const args = { where, id: "console-" + Orbit.uid().slice(0, 12), reason: reason.value };
      if (action.value === "signal") {
        args.signal = signal.value.trim();
        try { args.payload = JSON.parse(payload.value || "null"); } catch (e) {
          result.append(el("p", { class: "error", text: "payload is not JSON: " + e.message }));
          return;
        }
      }
      // red only for what destroys or undoes work (a cancel), as for one execution (common.js)
      const started = await Orbit.confirm("Bulk action", body, seen.count ? label + " " + count : "Nothing to do",
        () => (seen.count ? Orbit.api("/batches/" + enc(action.value), args) : null), destructive);
      if (started) follow(result, started.id).catch((e) => result.append(el("p", { class: "error", text: e.message })));
    } });
    box.append(el("h3", { text: "Bulk action" }),
      el("div", { class: "row" }, action, signal, payload, reason, go), result);
    return box;
  };
})();
