// Schedules (docs/schedules.md): the list, and one schedule with its spec, policies, next
// occurrences, recent actions (linking the executions they started) and a pause/resume button.
"use strict";
(function () {
  const { el } = Orbit;
  const enc = encodeURIComponent;
  const PAGE = 50;

  // "cron 0 9 * * MON (Europe/Paris)", "every 1h0m +5m0s": the spec in a line, all of it as JSON below
  function specText(spec) {
    if (!spec) return "";
    const bits = [];
    if (spec.cron) bits.push("cron " + spec.cron + (spec.timezone && spec.timezone !== "UTC" ? " (" + spec.timezone + ")" : ""));
    if (spec.every_ms) bits.push("every " + Orbit.fmtDur(spec.every_ms) + (spec.offset_ms ? " +" + Orbit.fmtDur(spec.offset_ms) : ""));
    if (spec.start) bits.push("from " + spec.start);
    if (spec.end) bits.push("until " + spec.end);
    if (spec.jitter_ms) bits.push("jitter " + Orbit.fmtDur(spec.jitter_ms));
    if (spec.exclude && spec.exclude.length) bits.push(spec.exclude.length + " exclusions");
    return bits.join(", ");
  }
  const stateBadge = (paused) => el("span", { class: "badge " + (paused ? "st-PAUSED" : "st-ACTIVE"), text: paused ? "PAUSED" : "ACTIVE" });
  const link = (id) => el("a", { href: "#/execution/" + enc(id), text: id });

  Orbit.views.schedules = async function (main, _parts, params) {
    const cursors = params.cursors ? params.cursors.split(",") : [];
    const r = await Orbit.api("/schedules" + Orbit.qs({ limit: PAGE, cursor: cursors[cursors.length - 1] }));
    main.append(el("h2", { text: "Schedules" }));
    if (!r.schedules.length && !cursors.length) {
      main.append(el("p", { class: "muted", text: "No schedule exists. Create one with `orbit schedule create` (docs/schedules.md)." }));
      return;
    }
    const head = el("tr", {}, ["Id", "Workflow", "Spec", "State", "Next occurrence (UTC)", "Running"].map((h) => el("th", { text: h })));
    const rows = r.schedules.map((s) => el("tr", { dataset: { id: s.id, paused: String(s.paused) } },
      el("td", {}, el("a", { href: "#/schedule/" + enc(s.id), text: s.id })),
      el("td", { text: s.workflow }), el("td", { text: specText(s.spec) }), el("td", {}, stateBadge(s.paused)),
      el("td", { text: s.next_occurrence || "-" }), el("td", { text: String(s.running) })));
    main.append(el("table", { class: "grid", id: "schedules" }, el("thead", {}, head), el("tbody", {}, rows)));
    main.append(el("div", { class: "pager" },
      cursors.length ? el("a", { class: "button-link", id: "newer", text: "← Previous", href: "#/schedules" + Orbit.qs({ cursors: cursors.slice(0, -1).join(",") }) }) : "",
      el("span", { class: "muted", text: " page " + (cursors.length + 1) + " " }),
      r.next_cursor ? el("a", { class: "button-link", id: "older", text: "Next →", href: "#/schedules" + Orbit.qs({ cursors: [...cursors, r.next_cursor].join(",") }) }) : ""));
  };

  function kv(label, value) {
    return [el("dt", { text: label }), el("dd", {}, value)];
  }

  function actionsTable(actions) {
    if (!actions.length) return el("p", { class: "muted", text: "Nothing has fired yet." });
    const head = el("tr", {}, ["Occurrence (UTC)", "Action", "Source", "Execution", "Outcome"].map((h) => el("th", { text: h })));
    return el("table", { class: "grid", id: "schedule-actions" }, el("thead", {}, head), el("tbody", {}, actions.map((a) =>
      el("tr", { dataset: { action: a.action, execution: a.execution_id || "" } },
        el("td", { text: a.occurrence }), el("td", { text: a.action }), el("td", { text: a.source }),
        el("td", {}, a.execution_id && a.action === "started" ? link(a.execution_id) : el("span", { class: "muted", text: a.execution_id || "-" })),
        el("td", {}, a.outcome ? Orbit.badge(a.outcome) : el("span", { class: "muted", text: "-" }))))));
  }

  function render(box, s, reload) {
    const st = s.state || {};
    const counts = Object.entries(st.counts || {}).map(([k, v]) => k + " " + v).join(", ") || "-";
    const note = el("input", { id: "schedule-note", placeholder: "note (optional)" });
    const verb = st.paused ? "resume" : "pause";
    const button = el("button", { type: "button", id: "schedule-toggle", class: st.paused ? "primary" : "danger",
      text: (st.paused ? "Resume" : "Pause") + "…", onclick: async () => {
        const text = st.paused ? "Resume schedule " + s.id + "? Occurrences that fell while it was paused are not caught up."
          : "Pause schedule " + s.id + "? It fires nothing until it is resumed.";
        const done = await Orbit.confirm(st.paused ? "Resume" : "Pause", el("div", {}, el("p", { text }), note),
          st.paused ? "Resume" : "Pause", () => Orbit.api("/schedules/" + enc(s.id) + "/" + verb, { note: note.value.trim() }));
        if (done) render(box, done, reload);
      } });
    box.replaceChildren(
      el("section", { class: "panel header", id: "schedule-header" },
        el("h2", { class: "eid", text: s.id }),
        el("dl", { class: "kv" },
          kv("State", el("span", { id: "schedule-state" }, stateBadge(st.paused), st.note ? " " + st.note : "")),
          kv("Workflow", el("span", {}, el("a", { href: "#/executions" + Orbit.qs({ workflow: s.workflow }), text: s.workflow }), s.version ? " v" + s.version : " (latest version)")),
          kv("Spec", el("code", { id: "schedule-spec-text", text: specText(s.spec) })),
          kv("Overlap", s.overlap), kv("Catch-up window", Orbit.fmtDur(s.catchup_window_ms)),
          kv("Pause on failure", s.pause_on_failure ? "yes" : "no"),
          kv("Running", el("span", {}, (st.running || []).flatMap((id, i) => (i ? [", ", link(id)] : [link(id)])), (st.running || []).length ? "" : "-")),
          kv("Buffered", (st.buffered || []).join(", ") || "-"), kv("Counts", counts),
          kv("Last occurrence", st.last_occurrence || "-"), kv("Created", s.created_at), kv("Updated", s.updated_at)),
        el("div", { class: "io" },
          el("div", {}, el("h4", { text: "Spec" }), Orbit.jsonBlock(s.spec, "spec")),
          el("div", {}, el("h4", { text: "Input" }), Orbit.jsonBlock(s.input, "input")))),
      el("section", { class: "panel", id: "schedule-actions-panel" }, el("h3", { text: "Actions" }),
        el("div", { class: "row" }, button)),
      el("section", { class: "panel", id: "next-occurrences" }, el("h3", { text: "Next occurrences (UTC)" }),
        st.paused ? el("p", { class: "muted", id: "paused-note", text: "Paused: these occurrences are skipped unless it is resumed before them." }) : null,
        s.next_occurrences.length ? el("ol", {}, s.next_occurrences.map((o) => el("li", { text: o })))
          : el("p", { class: "muted", text: "none: the spec has no occurrence left" })),
      el("section", { class: "panel", id: "recent-actions" }, el("h3", { text: "Recent actions (newest first)" }), actionsTable(s.actions || [])));
  }

  Orbit.views.schedule = async function (main, parts) {
    const sid = parts[0];
    const box = el("div", { id: "schedule" });
    main.append(box);
    const load = async () => render(box, await Orbit.api("/schedules/" + enc(sid)), load);
    await load();
    // runs end, occurrences fire: refresh while nobody has the dialog open
    Orbit.every(5000, () => { if (!document.hidden && document.getElementById("modal").hidden) load().catch(() => {}); });
  };
})();
