// The dashboard's charts as SVG: grants per minute, pool use over time.
import { h } from "./dom.js";
import { fmtTime } from "./ui.js";

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  el.append(...children);
  return el;
}

// An SVG chart's own attributes: drawn to its box, an image named by `label`.
const chartAttrs = (width, height, label) => ({
  class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label, preserveAspectRatio: "none",
});

// Grants in each of the last 60 minutes as bars (oldest left); the numbers are in its label.
export function grantChart(perMinute) {
  const values = perMinute.map((m) => m.grants);
  const top = Math.max(1, ...values);
  const width = 300;
  const height = 60;
  const w = width / Math.max(1, values.length);
  const total = values.reduce((a, b) => a + b, 0);
  const label = `Grants per minute over the last hour: ${total} in all, `
    + `busiest minute ${Math.max(0, ...values)}, last minute ${values[values.length - 1] ?? 0}`;
  return svg("svg", chartAttrs(width, height, label),
    svg("line", { x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5, class: "chart-axis" }),
    ...values.map((v, i) => svg("rect", {
      x: (i * w + 0.5).toFixed(2), width: Math.max(0.5, w - 1).toFixed(2),
      y: (height - (height * v) / top).toFixed(2), height: ((height * v) / top).toFixed(2), class: "chart-bar",
    }, svg("title", {}, `${fmtTime(perMinute[i].minute)}: ${v}`))));
}

// Pool use over time (GET /dashboard/pool-use, one sample a pool every ops.pool_sample_seconds):
// a line per pool, the POOL_LINES fullest now, 0-100 % on the y axis, the last hour on x.
const POOL_LINES = 5;
const last = (rows) => rows[rows.length - 1];
export function poolUseChart(use) {
  const byPool = new Map();
  for (const x of use.items) {
    if (!byPool.has(x.pool_id)) byPool.set(x.pool_id, []);
    byPool.get(x.pool_id).push(x);
  }
  if (!byPool.size) {
    return h("p", { class: "muted", "data-testid": "pool-use-empty" },
      `No samples yet: one is taken every ${use.interval_seconds} s.`);
  }
  const shown = [...byPool.values()].sort((a, b) => last(b).percent_used - last(a).percent_used).slice(0, POOL_LINES);
  const width = 300;
  const height = 60;
  const start = Date.parse(use.since);
  const span = Math.max(1, Date.now() - start);
  const x = (at) => Math.max(0, Math.min(width, (width * (Date.parse(at) - start)) / span)).toFixed(2);
  const y = (p) => (height - (height * Math.min(100, p)) / 100).toFixed(2);
  const label = "Pool use over the last hour: " + shown.map((rows) =>
    `${rows[0].name} (${rows[0].cidr}) ${last(rows).percent_used}% now, `
    + `peak ${Math.max(...rows.map((r) => r.percent_used))}%`).join("; ");
  return h("div", {},
    svg("svg", { ...chartAttrs(width, height, label), "data-testid": "pool-use-chart" },
      svg("line", { x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5, class: "chart-axis" }),
      ...shown.map((rows, i) => svg("polyline", {
        class: `chart-line chart-line-${i}`, fill: "none",
        // One sample so far: a level line from it to now, so it is seen.
        points: [...rows.map((r) => `${x(r.at)},${y(r.percent_used)}`),
          ...(rows.length === 1 ? [`${width},${y(rows[0].percent_used)}`] : [])].join(" "),
      }, svg("title", {}, `${rows[0].name}: ${last(rows).percent_used}%`)))),
    h("ul", { class: "chart-legend" }, shown.map((rows, i) => h("li", {},
      h("span", { class: `chart-key chart-line-${i}`, "aria-hidden": "true" }),
      `${rows[0].name} ${last(rows).percent_used}%`))));
}
