// The Gantt timeline, drawn by vis-timeline: one row per unit; queue waits, attempts (failed ones
// marked), retry backoffs, timers, signal waits, child runs, heartbeats and the compensation band.
// Labels are DOM text nodes (vis-timeline would read a string as HTML).
"use strict";
(function () {
  const { el } = Orbit;
  const KINDS = {
    queue: "queue wait", attempt: "attempt", failed: "failed attempt", backoff: "retry backoff",
    timer: "timer", signal: "signal wait", child: "child run", fanout: "fan-out", heartbeat: "heartbeat", compensation: "compensation",
  };

  function data(gantt) {
    const groups = [];
    const items = [];
    gantt.rows.forEach((row, i) => {
      const label = el("span", { class: "tl-unit" + (row.unit.startsWith("compensate:") ? " comp" : ""), text: row.unit });
      groups.push({ id: row.unit, content: label, order: i });
      row.segments.forEach((s, j) => {
        const item = { id: row.unit + "#" + j, group: row.unit, start: new Date(s.start_ms), className: "seg-" + s.kind + (s.open ? " open" : "") };
        const text = (s.attempt && s.kind !== "backoff" ? "#" + s.attempt + " " : "") + KINDS[s.kind] + (s.name ? " " + s.name : "");
        item.content = el("span", { text: s.error ? text + ": " + s.error : text });
        if (s.kind === "heartbeat") item.type = "point";
        else { item.type = "range"; item.end = new Date(Math.max(s.end_ms || s.start_ms, s.start_ms + 1)); }
        items.push(item);
      });
    });
    return { groups, items };
  }

  Orbit.timeline = function (holder, gantt) {
    const box = el("div", { class: "timeline", id: "timeline" });
    const zoom = (f) => () => (f > 0 ? tl.zoomIn(f) : tl.zoomOut(-f));
    const bar = el("div", { class: "tl-bar" },
      el("button", { type: "button", text: "Zoom in", onclick: zoom(0.5) }),
      el("button", { type: "button", text: "Zoom out", onclick: zoom(-0.5) }),
      el("button", { type: "button", text: "Fit", onclick: () => tl.fit() }),
      el("span", { class: "legend" }, Object.entries(KINDS).map(([k, v]) => el("span", { class: "key seg-" + k, text: v }))));
    const origin = el("span", { class: "tl-origin", id: "timeline-origin" });
    bar.append(origin);
    const more = el("p", { class: "muted", id: "timeline-hidden" });
    const note = (g) => { more.textContent = g.hidden_rows ? g.hidden_rows + " more rows not drawn (the first " + g.rows.length + " are)" : ""; };
    note(gantt);
    // one time scale: UTC clock times on the axis (no second row of dates), the day said once here
    origin.textContent = "times in UTC · started " + Orbit.fmtTime(gantt.start_ms);
    holder.append(bar, box, more);
    const d = data(gantt);
    const groups = new vis.DataSet(d.groups);
    const items = new vis.DataSet(d.items);
    const span = Math.max(gantt.end_ms - gantt.start_ms, 50);
    const tl = new vis.Timeline(box, items, groups, {
      stack: false, groupOrder: "order", orientation: "top", showCurrentTime: false, zoomMin: 5,
      start: new Date(gantt.start_ms - span * 0.03), end: new Date(gantt.end_ms + span * 0.05),
      margin: { item: 2 }, tooltip: { followMouse: false }, xss: { disabled: false },
      showMajorLabels: false, moment: (date) => vis.moment(date).utc(),
      format: { minorLabels: { millisecond: "HH:mm:ss.SSS", second: "HH:mm:ss", minute: "HH:mm", hour: "HH:mm",
        weekday: "ddd D MMM", day: "D MMM", week: "D MMM", month: "MMM YYYY", year: "YYYY" } },
    });
    box.orbitTimeline = tl; // for tests and the curious: the vis-timeline instance
    box.dataset.endMs = gantt.end_ms;
    let userMoved = false; // follow a running execution until the user zooms or drags
    tl.on("rangechanged", (props) => { if (props.byUser) userMoved = true; });
    return {
      update(next) {
        const n = data(next);
        note(next);
        box.dataset.endMs = next.end_ms;
        groups.update(n.groups);
        items.clear();
        items.add(n.items);
        if (!userMoved) {
          const s = Math.max(next.end_ms - next.start_ms, 50);
          tl.setWindow(new Date(next.start_ms - s * 0.03), new Date(next.end_ms + s * 0.05), { animation: false });
        }
      },
      destroy() { tl.destroy(); },
      widget: tl,
    };
  };
})();
