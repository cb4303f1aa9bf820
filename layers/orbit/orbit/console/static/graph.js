// The step graph of a definition, laid out by dagre: edges from `after` and from `steps.X`
// references, nodes colored by status, a fan-out as one node with its element counts, and each
// step's compensation as a dashed node hanging off it.
"use strict";
(function () {
  const { el, svg } = Orbit;
  const REF = /steps\.([A-Za-z_][A-Za-z0-9_-]*)/g;
  const ENDED_OK = "SUCCEEDED";

  function dependencies(name, step, names) {
    const deps = new Set([].concat(step.after || []));
    const body = Object.assign({}, step);
    delete body.compensate; // an undo step's references do not order the forward graph
    for (const m of JSON.stringify(body).matchAll(REF)) if (m[1] !== name && names.has(m[1])) deps.add(m[1]);
    return [...deps].filter((d) => names.has(d));
  }

  // {status, label} of a step from describe.steps: itself, or its fan-out elements name[i]
  function stepState(name, units) {
    const own = units[name];
    const elems = Object.entries(units).filter(([k]) => k.startsWith(name + "[") && k.endsWith("]"));
    if (!elems.length) return { status: own ? own.status : null, detail: own && own.attempt > 1 ? "attempt " + own.attempt : "" };
    const by = {};
    for (const [, u] of elems) by[u.status] = (by[u.status] || 0) + 1;
    let status = own ? own.status : null;
    if (!status) status = by.FAILED ? "FAILED" : by[ENDED_OK] === elems.length ? ENDED_OK : "RUNNING";
    const detail = elems.length + " elements: " + Object.entries(by).map(([s, n]) => n + " " + s.toLowerCase()).join(", ");
    return { status, detail, fanout: true };
  }

  Orbit.stepGraph = function (definition, units) {
    units = units || {};
    const steps = definition.steps || {};
    const names = new Set(Object.keys(steps));
    const g = new dagre.graphlib.Graph();
    g.setGraph({ rankdir: "TB", nodesep: 28, ranksep: 44, marginx: 8, marginy: 8 });
    g.setDefaultEdgeLabel(() => ({}));
    const nodes = {};
    for (const [name, step] of Object.entries(steps)) {
      const st = stepState(name, units);
      const kind = ["task", "workflow", "sleep", "wait_for", "http", "compute"].find((k) => k in step) || "step";
      const sub = step.for !== undefined ? "for each · " + (step[kind] || kind) : kind + (typeof step[kind] === "string" ? " " + step[kind] : "");
      nodes[name] = { name, title: name, sub, detail: st.detail, status: st.status, fanout: st.fanout, width: 190, height: st.detail ? 62 : 48 };
      g.setNode(name, nodes[name]);
      if (step.compensate) {
        const id = "compensate:" + name;
        const cu = units[id];
        nodes[id] = { name: id, title: "↩ " + name, sub: "compensate" + (step.compensate.task ? " " + step.compensate.task : ""),
          status: cu ? cu.status : null, compensation: true, width: 190, height: 48 };
        g.setNode(id, nodes[id]);
      }
    }
    for (const [name, step] of Object.entries(steps)) {
      for (const d of dependencies(name, step, names)) g.setEdge(d, name);
      if (step.compensate) g.setEdge(name, "compensate:" + name, { dashed: true });
    }
    dagre.layout(g);
    const size = g.graph();
    const root = svg("svg", { class: "step-graph", width: size.width, height: size.height, viewBox: `0 0 ${size.width} ${size.height}` });
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }));
    defs.append(marker);
    root.append(defs);
    for (const e of g.edges()) {
      const pts = g.edge(e).points.map((p) => p.x + "," + p.y).join(" ");
      root.append(svg("polyline", { points: pts, class: "edge" + (g.edge(e).dashed ? " dashed" : ""), "marker-end": "url(#arrow)" }));
    }
    for (const id of g.nodes()) {
      const n = g.node(id);
      const grp = svg("g", { class: "node st-" + (n.status || "PENDING") + (n.compensation ? " compensation" : "") + (n.fanout ? " fanout" : ""),
        transform: `translate(${n.x - n.width / 2},${n.y - n.height / 2})`, "data-step": id, "data-status": n.status || "PENDING" });
      grp.append(svg("rect", { width: n.width, height: n.height, rx: 7 }));
      if (n.fanout) grp.append(svg("rect", { class: "stack", x: 4, y: -4, width: n.width, height: n.height, rx: 7 }));
      const lines = [[n.title, "title", 18], [n.sub, "sub", 34]];
      if (n.detail) lines.push([n.detail, "detail", 52]);
      for (const [text, cls, y] of lines) {
        const t = svg("text", { x: 10, y, class: cls });
        t.textContent = text.length > 30 ? text.slice(0, 29) + "…" : text;
        grp.append(t);
      }
      const tip = svg("title");
      tip.textContent = id + ": " + (n.status || "not started") + (n.detail ? " (" + n.detail + ")" : "");
      grp.append(tip);
      root.append(grp);
    }
    // stacked fan-out rects go behind their node
    for (const s of root.querySelectorAll("rect.stack")) s.parentNode.insertBefore(s, s.parentNode.firstChild);
    return el("div", { class: "graph-wrap" }, root);
  };

  // Code workflows: their units in call order (the describe keeps the order they were first called).
  // (a code workflow's unit names already carry their call number: "3.charge")
  Orbit.unitList = function (units) {
    const items = Object.entries(units || {}).map(([name, u]) =>
      el("li", { class: "unit st-" + u.status, dataset: { step: name, status: u.status } },
        el("span", { class: "uname", text: name }),
        Orbit.badge(u.status), u.attempt > 1 ? el("span", { class: "muted", text: " attempt " + u.attempt }) : ""));
    return el("ol", { class: "units" }, items.length ? items : el("li", { class: "muted", text: "no calls yet" }));
  };
})();
