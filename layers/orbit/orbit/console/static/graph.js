// The step graph of a definition, laid out left to right by dagre across the panel's width: edges from `after` and from `steps.X`
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

  // Words of `text` in lines of at most `max` characters (a longer word is cut across lines).
  function wrap(text, max) {
    const lines = [];
    let line = "";
    for (let word of String(text).split(/[ \t\n]+/).filter(Boolean)) {
      while (word.length > max) { if (line) { lines.push(line); line = ""; } lines.push(word.slice(0, max)); word = word.slice(max); }
      if (!word) continue;
      if (line && line.length + 1 + word.length > max) { lines.push(line); line = word; }
      else line = line ? line + " " + word : word;
    }
    if (line || !lines.length) lines.push(line);
    return lines;
  }

  // `opts.width`: the width to fill (the panel's; the main column's when not given); `opts.onSelect(unit)`
  // makes nodes clickable; `opts.selected` is outlined.
  Orbit.stepGraph = function (definition, units, opts) {
    units = units || {};
    opts = opts || {};
    const steps = definition.steps || {};
    const names = new Set(Object.keys(steps));
    const main = document.getElementById("main");
    const avail = Math.max(600, (opts.width || (main ? main.clientWidth : 1000)) - 40);
    const GAP = 48;

    function layout(nodeWidth) {
      const g = new dagre.graphlib.Graph();
      g.setGraph({ rankdir: "LR", nodesep: 18, ranksep: GAP, marginx: 8, marginy: 8 });
      g.setDefaultEdgeLabel(() => ({}));
      const chars = Math.floor((nodeWidth - 20) / 8.2); // 13px bold at most; 11px below
      const small = Math.floor((nodeWidth - 20) / 6.8);
      const node = (n) => {
        n.lines = [];
        for (const l of wrap(n.title, chars)) n.lines.push([l, "title"]);
        for (const l of wrap(n.sub, small)) n.lines.push([l, "sub"]);
        if (n.detail) for (const l of wrap(n.detail, small)) n.lines.push([l, "detail"]);
        n.width = nodeWidth;
        n.height = 14 + n.lines.length * 16;
        g.setNode(n.name, n);
        return n;
      };
      for (const [name, step] of Object.entries(steps)) {
        const st = stepState(name, units);
        const kind = ["task", "workflow", "sleep", "wait_for", "http", "compute"].find((k) => k in step) || "step";
        const sub = step.for !== undefined ? "for each · " + (step[kind] || kind) : kind + (typeof step[kind] === "string" ? " " + step[kind] : "");
        node({ name, title: name, sub, detail: st.detail, status: st.status, fanout: st.fanout });
        if (step.compensate) {
          const id = "compensate:" + name;
          const cs = stepState(id, units); // a `for` step's compensations are its elements'
          node({ name: id, title: "↩\u00a0" + name, sub: "compensate" + (step.compensate.task ? " " + step.compensate.task : ""),
            detail: cs.fanout ? cs.detail : "", status: cs.status, compensation: true });
        }
      }
      for (const [name, step] of Object.entries(steps)) {
        for (const d of dependencies(name, step, names)) g.setEdge(d, name);
        if (step.compensate) g.setEdge(name, "compensate:" + name, { dashed: true });
      }
      dagre.layout(g);
      return g;
    }

    // lay out once at the narrowest width, then widen the nodes so that the ranks fill the panel
    let g = layout(170);
    const ranks = new Set(g.nodes().map((id) => Math.round(g.node(id).x))).size || 1;
    const fit = Math.floor((avail - 16 - (ranks - 1) * GAP) / ranks);
    if (fit > 170) g = layout(Math.min(fit, 360));
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
      const grp = svg("g", { class: "node st-" + (n.status || "PENDING") + (n.compensation ? " compensation" : "") + (n.fanout ? " fanout" : "") +
          (opts.onSelect ? " clickable" : "") + (opts.selected === id ? " selected" : ""),
        transform: `translate(${n.x - n.width / 2},${n.y - n.height / 2})`, "data-step": id, "data-status": n.status || "PENDING" });
      grp.append(svg("rect", { width: n.width, height: n.height, rx: 7 }));
      if (n.fanout) grp.append(svg("rect", { class: "stack", x: 4, y: -4, width: n.width, height: n.height, rx: 7 }));
      n.lines.forEach(([text, cls], i) => {
        const t = svg("text", { x: 10, y: 20 + i * 16, class: cls });
        t.textContent = text;
        grp.append(t);
      });
      const tip = svg("title");
      tip.textContent = id + ": " + (n.status || "not started") + (n.detail ? " (" + n.detail + ")" : "") + " · " + n.sub;
      grp.append(tip);
      if (opts.onSelect) {
        grp.setAttribute("tabindex", "0");
        grp.setAttribute("role", "button");
        grp.addEventListener("click", () => opts.onSelect(id));
        grp.addEventListener("keydown", (ev) => { if (ev.key === "Enter") opts.onSelect(id); });
      }
      root.append(grp);
    }
    // stacked fan-out rects go behind their node
    for (const s of root.querySelectorAll("rect.stack")) s.parentNode.insertBefore(s, s.parentNode.firstChild);
    return el("div", { class: "graph-wrap" }, root);
  };

  // Code workflows: their calls as a tree, in call order (the describe keeps the order they were
  // first called; a unit's name carries its call number, "3.charge"). A group's branches nest under
  // it ("4.parallel()/0/1.charge" is call 1 of branch 0 of group 4: parallel, map, race and scope
  // alike), and a map's elements ("5.ship[2]") under their map; each branch shows the status of its
  // calls (failed > running > cancelled > succeeded).
  const BRANCH_RANK = ["FAILED", "TIMED_OUT", "RUNNING", "DISPATCHED", "SCHEDULED", "WAITING", "RETRY_WAIT", "CANCELLED", "SKIPPED", "SUCCEEDED"];
  function branchStatus(statuses) {
    for (const s of BRANCH_RANK) if (statuses.includes(s)) return s;
    return statuses[0] || "PENDING";
  }

  Orbit.unitTree = function (units, opts) {
    opts = opts || {};
    const nodes = new Map(); // key -> {key, label, unit?, status, children: []}
    const roots = [];
    const ensure = (key, label, parentKey) => {
      if (nodes.has(key)) return nodes.get(key);
      const n = { key, label, children: [], statuses: [] };
      nodes.set(key, n);
      if (parentKey === null) roots.push(n);
      else parentOf(parentKey).children.push(n);
      return n;
    };
    // "4.parallel()/0" -> the branch node under the group node "4.parallel()"
    function parentOf(key) {
      if (nodes.has(key)) return nodes.get(key);
      const parts = key.split("/");
      if (parts.length % 2 === 0) { // a branch: group/branch
        const group = parts.slice(0, -1).join("/");
        return ensure(key, /\.scope\(\)$/.test(group) ? "scope body" : "branch " + parts[parts.length - 1], group);
      }
      return ensure(key, parts[parts.length - 1], parts.length > 1 ? parts.slice(0, -2).join("/") + "/" + parts[parts.length - 2] : null);
    }
    for (const [name, u] of Object.entries(units || {})) {
      const parts = name.split("/");
      const local = parts[parts.length - 1];
      const elem = /^(.*)\[[0-9]+\]$/.exec(name);
      let parentKey = parts.length > 1 ? parts.slice(0, -1).join("/") : null;
      if (elem && (units || {})[elem[1]] !== undefined) parentKey = elem[1];
      const n = ensure(name, local, parentKey);
      n.unit = name;
      n.status = u.status;
      n.attempt = u.attempt;
    }
    // a branch's status, from its calls (and theirs)
    function settle(n) {
      const mine = n.children.map(settle);
      if (!n.unit) n.status = branchStatus(mine);
      return n.status;
    }
    roots.forEach(settle);
    const item = (n) => el("li", { class: "unit st-" + n.status + (n.unit ? "" : " branch") + (opts.selected === n.unit && n.unit ? " selected" : ""),
      dataset: Object.assign({ status: n.status || "PENDING" }, n.unit ? { step: n.unit } : { branch: n.key }) },
      el("div", { class: "urow" },
        n.unit && opts.onSelect
          ? el("a", { href: "#", class: "uname", text: n.label, title: n.unit, onclick: (ev) => { ev.preventDefault(); opts.onSelect(n.unit); } })
          : el("span", { class: "uname", text: n.label, title: n.key }),
        Orbit.badge(n.status), n.attempt > 1 ? el("span", { class: "muted", text: " attempt " + n.attempt }) : ""),
      n.children.length ? el("ol", { class: "units nested" }, n.children.map(item)) : "");
    return el("ol", { class: "units tree" }, roots.length ? roots.map(item) : el("li", { class: "muted", text: "no calls yet" }));
  };
  Orbit.unitList = Orbit.unitTree;
})();
