// One execution: header (status, workflow, build, input/output/error, times, relations), actions,
// waiting lines, the step graph (definitions) or units in call order (code), the Gantt timeline
// and the event history. While it runs, it refreshes every 1.5 s without a reload.
"use strict";
(function () {
  const { el } = Orbit;
  const enc = encodeURIComponent;
  const link = (id) => el("a", { href: "#/execution/" + enc(id), text: id });

  function kv(label, value) {
    return [el("dt", { text: label }), el("dd", {}, value)];
  }

  function header(d, wf, live) {
    const relations = [];
    if (d.parent) relations.push(kv("Parent", el("span", {}, link(d.parent.execution_id), d.parent.step ? " (step " + d.parent.step + ")" : "")));
    const children = [];
    for (const row of (live && live.gantt.rows) || []) for (const s of row.segments) if (s.kind === "child" && s.name) children.push(s.name);
    if (children.length) relations.push(kv("Children", el("span", {}, children.flatMap((c, i) => (i ? [", ", link(c)] : [link(c)])))));
    if (d.continued_as) relations.push(kv("Continued as", link(typeof d.continued_as === "string" ? d.continued_as : d.continued_as.execution_id || JSON.stringify(d.continued_as))));
    for (const k of ["redriven_from", "redriven_as", "continued_from"]) if (d[k]) relations.push(kv(k.replace("_", " "), link(String(d[k]))));
    const src = d.forked_from;
    if (src) {
      const srcId = typeof src === "string" ? src : src.execution_id;
      relations.push(kv("Forked from", el("span", { id: "forked-from" }, link(String(srcId)), typeof src === "object" && src.step ? " (from step " + src.step + ")" : "")));
    }
    const forks = d.forked_to || [];
    if (forks.length) relations.push(kv("Forks", el("span", { id: "forks" }, forks.flatMap((c, i) => (i ? [", ", link(c)] : [link(c)])))));
    const took = d.finished_at_ms ? d.finished_at_ms - d.created_at_ms : null;
    const build = wf ? (wf.kind === "code" ? "code build " : "definition ") + wf.build : "";
    const dl = el("dl", { class: "kv" },
      kv("Status", el("span", { id: "exec-status" }, Orbit.badge(d.status), d.compensation && d.compensation !== "none" ? " compensation " + d.compensation : "")),
      kv("Workflow", el("span", {}, el("a", { href: wf ? "#/workflow/" + [wf.name, wf.version, wf.build].map(enc).join("/") : "#/workflows", text: d.workflow }), " v" + d.version)),
      kv("Build", el("code", { text: build })),
      kv("Started", Orbit.fmtTime(d.created_at_ms)),
      kv("Ended", d.finished_at_ms ? Orbit.fmtTime(d.finished_at_ms) + " (took " + Orbit.fmtDur(took) + ")" : "-"),
      relations.flat(), // each relation is a [dt, dd] pair
      d.parked ? kv("Parked", el("span", { class: "error", text: JSON.stringify(d.parked) })) : null,
    );
    const blocks = el("div", { class: "io" },
      el("div", {}, el("h4", { text: "Input" }), Orbit.jsonBlock(d.input, "input")),
      el("div", {}, el("h4", { text: "Output" }), Orbit.jsonBlock(d.output, "output")),
      d.error ? el("div", {}, el("h4", { text: "Error" }), Orbit.jsonBlock(d.error, "error-json")) : null);
    return el("section", { class: "panel header", id: "header" }, el("h2", { class: "eid", text: d.id }), dl, blocks);
  }

  function waitingList(lines) {
    if (!lines.length) return el("p", { class: "muted", text: "Nothing is waiting." });
    return el("ul", { class: "waiting" }, lines.map((w) => el("li", { dataset: { step: w.unit, kind: w.kind } }, el("strong", { text: w.unit }), " " + w.text)));
  }

  Orbit.views.execution = async function (main, parts) {
    const eid = parts[0];
    const firstPage = Orbit.historyFirst(eid);
    firstPage.catch(() => {});
    const [d, wf] = await Promise.all([
      Orbit.api("/executions/" + enc(eid)),
      Orbit.api("/executions/" + enc(eid) + "/workflow").catch(() => null),
    ]);
    const head = el("div", { id: "header-slot" }, header(d, wf, null));
    const actions = Orbit.actionsPanel(eid, wf, () => tick());
    const explore = Orbit.explorePanel(eid, wf);
    const waiting = el("section", { class: "panel", id: "waiting" }, el("h3", { text: "Waiting" }), el("p", { class: "muted", text: "…" }));
    const graphBox = el("section", { class: "panel", id: "graph" }, el("h3", { text: wf && wf.kind === "code" ? "Units in call order" : "Step graph" }),
      el("p", { class: "muted hint", text: "Click a " + (wf && wf.kind === "code" ? "call" : "node") + " for its attempts, input, output, error and timing." }));
    const graphSlot = el("div");
    const stepBox = el("section", { class: "step-detail", id: "step-detail", hidden: true });
    graphBox.append(graphSlot, stepBox);
    let selected = null; // the unit whose story is open below the graph
    let current = d;
    function select(unit) {
      selected = unit;
      drawGraph(current);
      if (unit) Orbit.stepDetail(stepBox, eid, unit, d.created_at_ms, (current.steps || {})[unit], select)
        .catch((e) => { stepBox.replaceChildren(el("p", { class: "error", text: e.message })); stepBox.hidden = false; });
    }
    const tlBox = el("section", { class: "panel", id: "timeline-panel" }, el("h3", { text: "Timeline" }));
    const history = Orbit.historyPanel(eid, d.created_at_ms);
    main.append(head, actions.node, explore.node, waiting, graphBox, tlBox, history.node);

    function drawGraph(desc) {
      current = desc;
      const opts = { width: graphBox.clientWidth - 32, onSelect: select, selected };
      if (wf && wf.kind === "definition") graphSlot.replaceChildren(Orbit.stepGraph(wf.definition, desc.steps, opts));
      else graphSlot.replaceChildren(Orbit.unitTree(desc.steps, opts));
    }
    drawGraph(d);
    actions.update(d, []);
    explore.update(d);
    await history.load(firstPage);
    // The first screen (header, actions, graph, first history page) is drawn: let it paint before the
    // timeline, which reads the whole history and takes vis-timeline a while to lay out.
    performance.mark("orbit:first-screen");
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    await Orbit.loadScript("vendor/vis-timeline-graph2d.min.js"); // 0.5 MB: not on the first screen's path

    let timeline = null;
    let lastSeq = -1;
    let status = d.status;
    async function tick() {
      const live = await Orbit.api("/_live/" + enc(eid));
      const desc = live.describe;
      waiting.replaceChildren(el("h3", { text: "Waiting" }), waitingList(live.waiting));
      actions.update(desc, live.hooks);
      explore.update(desc);
      const running = Orbit.RUNNING.includes(desc.status);
      // a running execution's open bars grow to now on every refresh, even with no new event
      if (live.last_seq === lastSeq && desc.status === status) { if (running && timeline) timeline.update(live.gantt); return; }
      lastSeq = live.last_seq;
      status = desc.status;
      head.replaceChildren(header(desc, wf, live));
      drawGraph(desc);
      if (selected) select(selected);
      if (!timeline) timeline = Orbit.timeline(tlBox, live.gantt);
      else timeline.update(live.gantt);
      await history.refresh();
    }
    let resized = null; // the graph spans the panel: lay it out again when the window changes width
    const onResize = () => { clearTimeout(resized); resized = setTimeout(() => drawGraph(current), 150); };
    window.addEventListener("resize", onResize);
    Orbit.cleanup = () => { window.removeEventListener("resize", onResize); if (timeline) timeline.destroy(); };
    await tick();
    Orbit.every(1500, () => { if (Orbit.RUNNING.includes(status) && !document.hidden) tick().catch(() => {}); });
  };
})();
