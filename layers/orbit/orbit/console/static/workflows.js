// Workflows: every registered definition with its versions and builds, code workflows with theirs;
// one build shows its source (and, for a definition, its step graph).
"use strict";
(function () {
  const { el } = Orbit;
  const enc = encodeURIComponent;

  Orbit.views.workflows = async function (main) {
    const r = await Orbit.api("/workflows");
    main.append(el("h2", { text: "Workflows" }));
    if (!r.workflows.length) main.append(el("p", { class: "muted", text: "No workflow is registered." }));
    const table = el("table", { class: "grid", id: "workflows" }, el("thead", {}, el("tr", {}, ["Name", "Kind", "Version", "Builds", ""].map((h) => el("th", { text: h })))));
    const body = el("tbody");
    for (const w of r.workflows) {
      for (const v of w.versions) {
        body.append(el("tr", { dataset: { name: w.name } },
          el("td", { text: w.name }), el("td", { text: w.kind }), el("td", { text: v.version + (v.retired ? " (retired)" : "") }),
          el("td", {}, v.builds.flatMap((b, i) => [i ? " " : "", el("a", { href: "#/workflow/" + [w.name, v.version, b].map(enc).join("/"), text: b.slice(0, 19) + (b.length > 19 ? "…" : "") })])),
          el("td", {}, el("a", { href: "#/executions" + Orbit.qs({ workflow: w.name }), text: "executions" }))));
      }
    }
    table.append(body);
    main.append(table);
  };

  Orbit.views.workflow = async function (main, parts) {
    const [name, version, build] = parts;
    const w = await Orbit.api("/workflows/" + enc(name) + Orbit.qs({ version, build }));
    main.append(el("h2", { text: name + " v" + version }), el("p", {}, el("code", { text: w.kind + " build " + build })),
      el("p", {}, el("a", { href: "#/executions" + Orbit.qs({ workflow: name }), text: "Its executions" })));
    main.append(Orbit.startForm(name, version, build));
    if (w.kind === "definition") {
      main.append(el("section", { class: "panel" }, el("h3", { text: "Step graph" }), Orbit.stepGraph(w.definition, {})));
      main.append(el("section", { class: "panel" }, el("h3", { text: "Definition" }), Orbit.jsonBlock(w.definition, "source")));
    } else {
      main.append(el("section", { class: "panel" }, el("h3", { text: "Source" }),
        el("pre", { class: "source", text: w.source || "(this process does not hold the source of this build)" })));
    }
  };
})();
