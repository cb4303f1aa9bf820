// Actions on one execution: send a signal (payload edited as JSON, checked against the signal's
// contract first), resume a hook, cancel, force-cancel (here), redrive and un-park (recovery.js).
// Each asks for confirmation; a refusal is shown word for word. An action registers in Orbit.actions:
//   Orbit.actions.push({id, label, danger: bool (red: it destroys or undoes work),
//                       when: (describe) => bool, confirm: "text", reason: bool,
//                       post: (eid, reason) => [path, body], done: (answer) => "what happened"})
"use strict";
(function () {
  const { el } = Orbit;
  const enc = encodeURIComponent;

  Orbit.actions.push(
    { id: "cancel", label: "Cancel", danger: true, when: (d) => Orbit.RUNNING.includes(d.status),
      confirm: "Cancel this execution? Steps that succeeded are compensated.", reason: true,
      post: (eid, reason) => ["/executions/" + enc(eid) + "/cancel", { reason, force: false }] },
    { id: "force-cancel", label: "Force cancel", danger: true, when: (d) => Orbit.RUNNING.includes(d.status),
      confirm: "Force-cancel this execution? It ends at once and nothing is compensated.", reason: true,
      post: (eid, reason) => ["/executions/" + enc(eid) + "/cancel", { reason, force: true }] },
  );

  function parsePayload(text) {
    try {
      return { value: text.trim() === "" ? null : JSON.parse(text) };
    } catch (e) {
      return { error: "payload is not JSON: " + e.message };
    }
  }

  Orbit.actionsPanel = function (eid, workflow, onDone) {
    const node = el("section", { class: "panel", id: "actions" }, el("h3", { text: "Actions" }));
    const msg = el("pre", { class: "action-result", id: "action-result", hidden: true });
    const show = (text, bad) => { msg.textContent = text; msg.className = "action-result " + (bad ? "error" : "ok"); msg.hidden = false; };

    const signals = Object.keys((workflow && workflow.signals) || {});
    const sigName = el("select", { id: "signal-name" }, signals.map((s) => el("option", { value: s, text: s })));
    const sigOther = el("input", { id: "signal-other", placeholder: "or another name" });
    const sigPayload = el("textarea", { id: "signal-payload", rows: 4, spellcheck: false, value: "{}" });
    const sigCheck = el("span", { id: "signal-check", class: "muted" });
    const name = () => sigOther.value.trim() || sigName.value;
    async function check() {
      const p = parsePayload(sigPayload.value);
      if (p.error) throw new Error(p.error);
      await Orbit.api("/_check_signal/" + enc(eid) + "/" + enc(name()), { payload: p.value });
      return p.value;
    }
    const signalBox = el("div", { class: "action signal" },
      el("h4", { text: "Send a signal" }),
      el("div", { class: "row" }, el("label", {}, "Signal ", sigName), sigOther),
      sigPayload,
      el("div", { class: "row" },
        el("button", { type: "button", id: "signal-validate", text: "Check against contract", onclick: async () => {
          try { await check(); sigCheck.textContent = "✓ matches the signal's contract"; sigCheck.className = "ok"; }
          catch (e) { sigCheck.textContent = e.message; sigCheck.className = "error"; }
        } }),
        el("button", { type: "button", id: "signal-send", class: "primary", text: "Send signal…", onclick: async () => {
          let payload;
          try { payload = await check(); } catch (e) { sigCheck.textContent = e.message; sigCheck.className = "error"; return; }
          sigCheck.textContent = "";
          const body = el("div", {}, el("p", { text: "Send signal " + name() + " to " + eid + " with:" }), Orbit.jsonBlock(payload));
          const done = await Orbit.confirm("Send signal", body, "Send", () =>
            Orbit.api("/executions/" + enc(eid) + "/signals/" + enc(name()), { payload, id: "console:" + Orbit.uid() }));
          if (done) { show("signal " + name() + " sent (id " + done.id + ")"); onDone(); }
        } }),
        sigCheck));

    const hooksBox = el("div", { class: "action hooks", id: "hooks" });
    const buttons = el("div", { class: "row", id: "action-buttons" });
    node.append(el("div", { class: "action-grid" }, signalBox, hooksBox, el("div", { class: "action" }, el("h4", { text: "Execution" }), buttons)), msg);

    return {
      node,
      update(describe, hooks) {
        const running = Orbit.RUNNING.includes(describe.status);
        signalBox.hidden = !running;
        hooksBox.replaceChildren();
        const open = (hooks || []).filter((h) => !h.resumed);
        hooksBox.hidden = !(running && open.length);
        if (running && open.length) {
          hooksBox.append(el("h4", { text: "Resume a hook" }));
          for (const h of open) {
            const payload = el("textarea", { rows: 3, spellcheck: false, value: "{}", dataset: { hook: h.name } });
            hooksBox.append(el("div", { class: "hook" }, el("strong", { text: h.name }), payload,
              el("button", { type: "button", class: "primary", text: "Resume " + h.name + "…", dataset: { hook: h.name }, onclick: async () => {
                const p = parsePayload(payload.value);
                if (p.error) { show(p.error, true); return; }
                const done = await Orbit.confirm("Resume hook", el("p", { text: "Resume hook " + h.name + " of " + eid + "?" }), "Resume",
                  // the console never sees a hook token (a credential): the signal of the same name
                  // resumes the same wait, through the operator's own API access
                  () => Orbit.api("/executions/" + enc(eid) + "/signals/" + enc(h.name), { payload: p.value }));
                if (done) { show("hook " + h.name + " resumed"); onDone(); }
              } })));
          }
        }
        buttons.replaceChildren();
        for (const a of Orbit.actions.filter((x) => x.when(describe))) {
          buttons.append(el("button", { type: "button", class: a.danger ? "danger" : "", id: "action-" + a.id, text: a.label + "…", onclick: async () => {
            const reason = a.reason ? el("input", { id: "action-reason", placeholder: "reason (optional)" }) : null;
            const done = await Orbit.confirm(a.label, el("div", {}, el("p", { text: a.confirm }), reason), a.label, () => {
              const [path, body] = a.post(eid, reason ? reason.value.trim() : "");
              return Orbit.api(path, body);
            }, a.danger);
            if (done) { show(a.done ? a.done(done) : a.label + ": accepted"); onDone(); }
          } }));
        }
        if (!buttons.children.length) buttons.append(el("span", { class: "muted", text: "no action for a " + describe.status.toLowerCase() + " execution" }));
      },
    };
  };
})();
