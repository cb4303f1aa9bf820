// Hash router: #/executions?filters, #/execution/<id>, #/workflows, #/workflow/<name>/<version>/<build>.
"use strict";
(function () {
  async function route() {
    for (const id of Orbit.timers.splice(0)) clearInterval(id);
    if (Orbit.cleanup) { Orbit.cleanup(); Orbit.cleanup = null; }
    const hash = location.hash.replace(/^#/, "") || "/executions";
    const [path, query] = hash.split("?");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    const main = document.getElementById("main");
    main.replaceChildren();
    const view = parts[0] || "executions";
    for (const a of document.querySelectorAll("#nav a")) {
      a.classList.toggle("active", view.startsWith(a.dataset.view.replace(/s$/, "")));
    }
    const handler = Orbit.views[view];
    if (!handler) {
      main.append(Orbit.el("p", { class: "error", text: "No such page: " + hash }));
      return;
    }
    try {
      await handler(main, parts.slice(1), Orbit.params(query));
    } catch (e) {
      main.append(Orbit.el("pre", { class: "error", text: e.message }));
    }
  }
  window.addEventListener("hashchange", route);
  Orbit.api("/_console").then((c) => {
    document.getElementById("target").textContent = "API: " + c.target;
  }).catch(() => {});
  route();
})();
