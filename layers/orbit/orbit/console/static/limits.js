// Flow control (docs/flow-control.md): every concurrency limit with its use now (held of max,
// waiting, the holders), every rate's token bucket and the deployment's shared task and queue
// limits (who declared them), from GET /limits; refreshed every 5 s.
"use strict";
(function () {
  const { el } = Orbit;

  function table(rows) {
    const head = el("tr", {}, ["Limit", "Key", "Held", "Waiting", "Holders"].map((h) => el("th", { text: h })));
    return el("table", { class: "grid", id: "limits" }, el("thead", {}, head), el("tbody", {}, rows.map((r) =>
      el("tr", { dataset: { limit: r.limit, key: r.key } },
        el("td", { text: r.limit }), el("td", { text: r.key || "-" }),
        el("td", { text: r.held + " / " + r.max }), el("td", { text: String(r.waiting) }),
        el("td", { class: "muted", text: r.holders.join(", ") || "-" })))));
  }

  function rates(rows) {
    const head = el("tr", {}, ["Rate", "Key", "Allows", "Tokens now"].map((h) => el("th", { text: h })));
    return el("table", { class: "grid", id: "rates" }, el("thead", {}, head), el("tbody", {}, rows.map((b) =>
      el("tr", {},
        el("td", { text: b.name || b.scope }), el("td", { text: b.key || "-" }),
        el("td", { text: b.rate ? b.rate + " per " + Orbit.fmtDur(b.period_ms) + ", burst " + b.burst : "-" }),
        el("td", { text: b.period_ms ? (b.level_ms / b.period_ms).toFixed(1) : "-" })))));
  }

  function shared(rows) {
    const head = el("tr", {}, ["Shared limit", "Declared", "By"].map((h) => el("th", { text: h })));
    const said = (s) => ["concurrency", "rate", "priority"].filter((k) => k in s)
      .map((k) => k + " " + JSON.stringify(s[k])).join("; ");
    return el("table", { class: "grid", id: "shared" }, el("thead", {}, head), el("tbody", {}, rows.map((s) =>
      el("tr", { dataset: { limit: s.limit } },
        el("td", { text: s.limit }), el("td", { text: said(s) }),
        el("td", { class: "muted", text: s.from || "-" })))));
  }

  Orbit.views.limits = async function (main) {
    main.append(el("h2", { text: "Limits" }));
    const box = el("div", {});
    main.append(box);
    async function load() {
      const r = await Orbit.api("/limits");
      box.replaceChildren();
      const declared = r.shared || [];
      if (!r.limits.length && !r.rates.length) {
        box.append(el("p", { class: "muted", text: "No limit has been used yet (docs/flow-control.md)." }));
      }
      if (r.limits.length) box.append(table(r.limits));
      if (r.rates.length) box.append(el("h3", { text: "Rates" }), rates(r.rates));
      if (declared.length) box.append(el("h3", { text: "Shared by every workflow" }), shared(declared));
    }
    await load();
    Orbit.timers.push(setInterval(() => load().catch(() => {}), 5000));
  };
})();
