// Digging into one execution and starting new ones: run a query (docs/queries.md), send an update
// (docs/updates.md), fork from a step (docs/recovery.md), and, on a workflow's page, start a new
// execution with its input checked against the workflow's input schema first. Every request goes
// through the console server's POST routes (same origin, CSRF token, JSON only); every answer is
// shown as text.
"use strict";
(function () {
  const { el } = Orbit;
  const enc = encodeURIComponent;

  function parse(text, what) {
    try {
      return text.trim() === "" ? null : JSON.parse(text);
    } catch (e) {
      throw new Error(what + " is not JSON: " + e.message);
    }
  }

  // A name picker: the declared names in a list, and a free field (a code workflow declares its
  // handlers only as it runs).
  function namePicker(id, names) {
    const select = el("select", { id: id + "-name" }, names.map((n) => el("option", { value: n, text: n })));
    const other = el("input", { id: id + "-other", placeholder: names.length ? "or another name" : "name" });
    return { node: el("span", {}, names.length ? select : "", other), value: () => other.value.trim() || select.value };
  }

  Orbit.explorePanel = function (eid, wf) {
    const def = (wf && wf.kind === "definition" && wf.definition) || {};
    const result = el("pre", { class: "json explore-result", id: "explore-result", hidden: true });
    const show = (value, bad) => {
      result.textContent = bad ? value : Orbit.pretty(value); // an answer as JSON, a refusal word for word
      result.className = "json explore-result " + (bad ? "error" : "ok");
      result.hidden = false;
    };
    const run = async (fn) => { try { show(await fn()); } catch (e) { show(e.message, true); } };

    const q = namePicker("query", Object.keys(def.queries || {}));
    const qInput = el("textarea", { id: "query-input", rows: 2, spellcheck: false, placeholder: "input (JSON, optional)" });
    const queryBox = el("div", { class: "action query" }, el("h4", { text: "Query" }),
      el("div", { class: "row" }, q.node), qInput,
      el("div", { class: "row" }, el("button", { type: "button", id: "query-run", class: "primary", text: "Run query", onclick: () => run(async () => {
        const r = await Orbit.api("/executions/" + enc(eid) + "/queries/" + enc(q.value()), { input: parse(qInput.value, "query input") });
        return r.result;
      }) })));

    const u = namePicker("update", Object.keys(def.updates || {}));
    const uInput = el("textarea", { id: "update-input", rows: 2, spellcheck: false, placeholder: "input (JSON)" });
    const updateBox = el("div", { class: "action update" }, el("h4", { text: "Send an update" }),
      el("div", { class: "row" }, u.node), uInput,
      el("div", { class: "row" }, el("button", { type: "button", id: "update-send", class: "primary", text: "Send update…", onclick: async () => {
        let input;
        try { input = parse(uInput.value, "update input"); } catch (e) { show(e.message, true); return; }
        const body = el("div", {}, el("p", { text: "Send update " + u.value() + " to " + eid + " with:" }), Orbit.jsonBlock(input));
        const done = await Orbit.confirm("Send update", body, "Send", () =>
          Orbit.api("/executions/" + enc(eid) + "/updates/" + enc(u.value()), { input, update_id: "console:" + Orbit.uid(), timeout: 10 }));
        if (done) show(done);
      } })));

    const forkStep = el("select", { id: "fork-step" });
    const forkId = el("input", { id: "fork-id", placeholder: "new id (optional)" });
    const forkBox = el("div", { class: "action fork" }, el("h4", { text: "Fork from a step" }),
      el("div", { class: "row" }, el("label", {}, "Step ", forkStep), forkId),
      el("div", { class: "row" }, el("button", { type: "button", id: "fork-run", class: "primary", text: "Fork…", onclick: async () => {
        const step = forkStep.value;
        // a fork that would reuse compensated outputs is refused (CONFLICT, docs/recovery.md) unless ticked
        const despite = el("input", { type: "checkbox", id: "fork-despite" });
        const body = el("div", {}, el("p", { text: "Start a new execution from " + eid + " that keeps the outputs of the steps before " + step +
          " and runs " + step + " and what follows again?" }),
          el("label", {}, despite, " even if some of those steps were compensated (their effects undone)"));
        const done = await Orbit.confirm("Fork", body, "Fork", () =>
          Orbit.api("/executions/" + enc(eid) + "/fork", Object.assign({ from_step: step },
            forkId.value.trim() ? { id: forkId.value.trim() } : {}, despite.checked ? { despite_compensation: true } : {})));
        if (done) {
          result.replaceChildren("forked as ", el("a", { id: "fork-link", href: "#/execution/" + enc(done.id), text: done.id }));
          result.className = "json explore-result ok";
          result.hidden = false;
        }
      } })));

    const node = el("section", { class: "panel", id: "explore" }, el("h3", { text: "Query, update, fork" }),
      el("div", { class: "action-grid" }, queryBox, updateBox, forkBox), result);
    let steps = "";
    return {
      node,
      update(describe) {
        updateBox.hidden = !Orbit.RUNNING.includes(describe.status);
        // a definition forks from its steps; a code workflow from its calls
        const names = wf && wf.kind === "definition" ? Object.keys(def.steps || {}) : Object.keys(describe.steps || {}).filter((n) => !/\[[0-9]+\]$/.test(n));
        if (names.join("\n") !== steps) {
          steps = names.join("\n");
          forkStep.replaceChildren(...names.map((n) => el("option", { value: n, text: n })));
        }
      },
    };
  };

  // On a workflow build's page: start a new execution of it.
  Orbit.startForm = function (name, version, build, example) {
    const input = el("textarea", { id: "start-input", rows: 6, spellcheck: false, value: example === undefined ? "{}" : Orbit.pretty(example) });
    const id = el("input", { id: "start-id", placeholder: "execution id (optional)" });
    const check = el("pre", { id: "start-check", class: "muted start-check" });
    const verdict = (text, bad) => { check.textContent = text; check.className = "start-check " + (bad ? "error" : "ok"); };
    async function checked() {
      const value = parse(input.value, "input");
      await Orbit.api("/_check_start/" + enc(name), { version, build, input: value });
      return value;
    }
    return el("section", { class: "panel", id: "start" }, el("h3", { text: "Start an execution" }), input,
      el("div", { class: "row" }, id,
        el("button", { type: "button", id: "start-validate", text: "Check against the input schema", onclick: async () => {
          try { await checked(); verdict("✓ matches the workflow's input schema"); } catch (e) { verdict(e.message, true); }
        } }),
        el("button", { type: "button", id: "start-run", class: "primary", text: "Start…", onclick: async () => {
          let value;
          try { value = await checked(); } catch (e) { verdict(e.message, true); return; }
          verdict("");
          const body = el("div", {}, el("p", { text: "Start " + name + " v" + version + " with:" }), Orbit.jsonBlock(value));
          const done = await Orbit.confirm("Start", body, "Start", () =>
            Orbit.api("/executions", Object.assign({ workflow: name, version, input: value }, id.value.trim() ? { id: id.value.trim() } : {})));
          if (done) location.hash = "#/execution/" + enc(done.id);
        } })),
      check);
  };
})();
