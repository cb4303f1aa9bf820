// Shared helpers. Every value from the API reaches the page through textContent or an attribute
// set by property: nothing here builds HTML from strings.
"use strict";
const Orbit = (window.Orbit = { views: {}, actions: [], timers: [] });

Orbit.csrf = document.querySelector('meta[name="orbit-csrf"]').content;

Orbit.api = async function (path, body) {
  const opts = { method: body === undefined ? "GET" : "POST", headers: {} };
  if (body !== undefined) {
    opts.headers["content-type"] = "application/json";
    opts.headers["x-orbit-csrf"] = Orbit.csrf;
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch("/console/api" + path, opts);
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (!resp.ok) {
    const err = new Error(Orbit.errorText(data, resp.status));
    err.status = resp.status;
    err.body = data;
    throw err;
  }
  return data;
};

// The API's error, word for word: "CODE: message" (and each problem with its path).
Orbit.errorText = function (data, status) {
  const e = data && data.error;
  if (!e) return "HTTP " + status;
  let text = (e.code ? e.code + ": " : "") + (e.message || "");
  for (const p of e.problems || []) text += "\n" + (p.path ? p.path + ": " : "") + (p.message || "");
  return text;
};

Orbit.el = function (tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k in node && k !== "list") node[k] = v;
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
};

Orbit.svg = function (tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
};

Orbit.fmtTime = function (ms) {
  if (ms === null || ms === undefined) return "-";
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
};

Orbit.fmtDur = function (ms) {
  if (ms === null || ms === undefined) return "-";
  if (ms < 1000) return ms + "ms";
  const s = ms / 1000;
  if (s < 60) return s.toFixed(1) + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + Math.round(s % 60) + "s";
  if (s < 86400) return Math.floor(s / 3600) + "h" + Math.round((s % 3600) / 60) + "m";
  return Math.floor(s / 86400) + "d" + Math.round((s % 86400) / 3600) + "h";
};

Orbit.pretty = (v) => JSON.stringify(v, null, 2);

Orbit.RUNNING = ["RUNNING", "COMPENSATING"];

// A status as a colored badge; the class names are the statuses themselves.
Orbit.badge = (status) => Orbit.el("span", { class: "badge st-" + String(status || "PENDING"), text: status || "PENDING" });

Orbit.every = function (ms, fn) {
  const id = setInterval(fn, ms);
  Orbit.timers.push(id);
  return id;
};

// A confirmation dialog in the page. `run` performs the action and throws on refusal; the error
// is shown word for word and the dialog stays open. The confirm button is red only when `danger`
// (the action destroys or undoes work: cancel, force-cancel), blue otherwise.
Orbit.confirm = function (title, body, okText, run, danger) {
  const modal = document.getElementById("modal");
  const errBox = document.getElementById("modal-error");
  document.getElementById("modal-title").textContent = title;
  const holder = document.getElementById("modal-body");
  holder.replaceChildren(body);
  errBox.hidden = true;
  const ok = document.getElementById("modal-ok");
  const cancel = document.getElementById("modal-cancel");
  ok.textContent = okText;
  ok.className = danger ? "danger" : "primary";
  ok.disabled = false;
  modal.hidden = false;
  return new Promise((resolve) => {
    const close = (result) => {
      modal.hidden = true;
      ok.onclick = cancel.onclick = null;
      resolve(result);
    };
    cancel.onclick = () => close(null);
    ok.onclick = async () => {
      ok.disabled = true;
      try {
        close(await run());
      } catch (e) {
        errBox.textContent = e.message;
        errBox.hidden = false;
        ok.disabled = false;
      }
    };
  });
};

// "key=value&..." of the hash route
Orbit.params = function (query) {
  const out = {};
  new URLSearchParams(query || "").forEach((v, k) => (out[k] = v));
  return out;
};

Orbit.qs = function (params) {
  const clean = {};
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") clean[k] = v;
  const s = new URLSearchParams(clean).toString();
  return s ? "?" + s : "";
};

Orbit.jsonBlock = function (value, cls) {
  return Orbit.el("pre", { class: "json " + (cls || ""), text: value === undefined ? "" : Orbit.pretty(value) });
};

Orbit.uid = function () {
  if (window.crypto && crypto.randomUUID) return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
};

// A vendored script loaded when first needed (same origin, so the CSP allows it).
Orbit.loadScript = function (src) {
  Orbit.loaded = Orbit.loaded || {};
  if (!Orbit.loaded[src]) {
    Orbit.loaded[src] = new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = src;
      s.onload = resolve;
      s.onerror = () => reject(new Error("cannot load " + src));
      document.head.append(s);
    });
  }
  return Orbit.loaded[src];
};
