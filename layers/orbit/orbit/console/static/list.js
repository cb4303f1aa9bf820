// Executions: filters (workflow, status, start-time range, id prefix, a filter text: docs/operations.md),
// counts by status, one page at a time with the API's cursor, refreshed every few seconds; a bulk
// action on what the filters match (bulk.js).
"use strict";
(function () {
  const { el } = Orbit;
  const STATUSES = ["RUNNING", "COMPENSATING", "COMPLETED", "FAILED", "CANCELLED", "TIMED_OUT"];
  const PAGE = 50;

  const toMs = (local) => (local ? String(new Date(local + "Z").getTime()) : "");
  const fromMs = (ms) => (ms ? new Date(Number(ms)).toISOString().slice(0, 16) : "");

  Orbit.views.executions = async function (main, _parts, params) {
    const form = el("form", { class: "filters", id: "filters" });
    const wf = el("input", { name: "workflow", placeholder: "any workflow", value: params.workflow || "", list: "wf-names" });
    wf.setAttribute("list", "wf-names");
    const names = el("datalist", { id: "wf-names" });
    const status = el("select", { name: "status" }, el("option", { value: "", text: "any status" }),
      STATUSES.map((s) => el("option", { value: s, text: s, selected: params.status === s })));
    const after = el("input", { type: "datetime-local", name: "after", value: fromMs(params.started_after) });
    const before = el("input", { type: "datetime-local", name: "before", value: fromMs(params.started_before) });
    const prefix = el("input", { name: "id_prefix", placeholder: "id prefix", value: params.id_prefix || "" });
    const where = el("input", { name: "where", class: "where", placeholder: "filter: tier = gold AND amount > 100",
      value: params.where || "" });
    const auto = el("input", { type: "checkbox", id: "auto-refresh", checked: params.paused !== "1" });
    form.append(
      el("label", {}, "Workflow ", wf), names, el("label", {}, "Status ", status),
      el("label", {}, "Started from (UTC) ", after), el("label", {}, "to ", before),
      el("label", {}, "Id ", prefix), el("label", {}, "Where ", where),
      el("button", { type: "submit", text: "Apply" }),
      el("a", { href: "#/executions", class: "button-link", text: "Clear" }),
      el("label", { class: "auto" }, auto, " refresh (list 3 s, counts 15 s)"),
    );
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      location.hash = "#/executions" + Orbit.qs({
        workflow: wf.value.trim(), status: status.value, started_after: toMs(after.value),
        started_before: toMs(before.value), id_prefix: prefix.value.trim(), where: where.value.trim(),
      });
    });
    const counts = el("div", { class: "counts", id: "counts" });
    const table = el("table", { class: "grid", id: "executions" });
    const pager = el("div", { class: "pager" });
    const stamp = el("span", { class: "muted", id: "refreshed" });
    main.append(el("h2", { text: "Executions" }), form, counts, table, pager, stamp, Orbit.bulkPanel(params));

    Orbit.api("/workflows").then((r) => {
      for (const w of r.workflows) names.append(el("option", { value: w.name }));
    }).catch(() => {});

    const cursors = params.cursors ? params.cursors.split(",") : [];
    const cursor = cursors[cursors.length - 1] || "";
    const query = {
      workflow: params.workflow, status: params.status, started_after: params.started_after,
      started_before: params.started_before, id_prefix: params.id_prefix, where: params.where, limit: PAGE, cursor,
    };

    async function loadCounts() {
      const r = await Orbit.api("/counts" + Orbit.qs({ workflow: params.workflow }));
      counts.replaceChildren(...STATUSES.map((s) => {
        const n = r.counts[s] || 0;
        const label = n >= r.cap ? n.toLocaleString() + "+" : n.toLocaleString();
        return el("a", {
          class: "count st-" + s + (params.status === s ? " selected" : ""), dataset: { status: s },
          href: "#/executions" + Orbit.qs({ ...params, cursors: "", status: params.status === s ? "" : s }),
        }, el("span", { class: "n", text: label }), el("span", { text: s }));
      }));
    }

    async function loadPage() {
      const r = await Orbit.api("/executions" + Orbit.qs(query));
      const head = el("tr", {}, ["Id", "Workflow", "Version", "Status", "Started (UTC)", "Updated"].map((h) => el("th", { text: h })));
      const rows = r.executions.map((e) => el("tr", { dataset: { id: e.execution_id, status: e.status } },
        el("td", {}, el("a", { href: "#/execution/" + encodeURIComponent(e.execution_id), text: e.execution_id })),
        el("td", { text: e.workflow }), el("td", { text: e.version }), el("td", {}, Orbit.badge(e.status)),
        el("td", { text: Orbit.fmtTime(e.created_at_ms) }), el("td", { text: Orbit.fmtTime(e.updated_at_ms) })));
      table.replaceChildren(el("thead", {}, head), el("tbody", {}, rows));
      if (!rows.length) {
        const why = r.next_cursor ? "No match among the rows read so far; older ones may match." : "No executions match.";
        table.append(el("tbody", {}, el("tr", {}, el("td", { colSpan: 6, class: "muted", text: why }))));
      }
      pager.replaceChildren(
        cursors.length ? el("a", { class: "button-link", id: "newer", text: "← Newer",
          href: "#/executions" + Orbit.qs({ ...params, cursors: cursors.slice(0, -1).join(",") }) }) : "",
        el("span", { class: "muted", text: " page " + (cursors.length + 1) + " " }),
        r.next_cursor ? el("a", { class: "button-link", id: "older", text: "Older →",
          href: "#/executions" + Orbit.qs({ ...params, cursors: [...cursors, r.next_cursor].join(",") }) }) : "",
      );
      stamp.textContent = "refreshed " + new Date().toLocaleTimeString();
    }

    // counts read every row they count (up to the cap): refreshed every 15 s, the page every 3 s
    const failed = (e) => { stamp.textContent = "refresh failed: " + e.message; };
    loadCounts().catch(failed);
    await loadPage().catch(failed);
    Orbit.every(3000, () => { if (auto.checked && !document.hidden) loadPage().catch(failed); });
    Orbit.every(15000, () => { if (auto.checked && !document.hidden) loadCounts().catch(failed); });
  };
})();
