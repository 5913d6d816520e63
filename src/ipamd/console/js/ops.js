// Operations pages: the dashboard (one GET /dashboard), nodes, alerts, alert destinations.
import { can, del, get, patch, post } from "./api.js";
import { h } from "./dom.js";
import { crudSection } from "./crud.js";
import { badge, bar, errorBox, fmtTime, form, link, pagedTable, section } from "./ui.js";

const table = (caption, heads, rows) => h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": caption },
  h("table", { class: "table" }, h("caption", {}, caption),
    h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((c) => h("td", {}, c)))))));
const sum = (o) => Object.values(o || {}).reduce((a, b) => a + b, 0);
// Colours of the existing badge classes: green, red, amber.
const statusBadge = (s) => badge(s, s === "up" || s === "cleared" ? "delivered" : "failed");

// What an alert is about, as a link: its subject is a pool or subnet id, a node name, a kind.
export function alertSubject(a, nodeIds = new Map()) {
  const to = {
    pool_utilisation: () => `#/pools/${a.subject}`,
    subnet_utilisation: () => `#/subnets/${a.subject}`, no_address: () => `#/subnets/${a.subject}`,
    node_down: () => (nodeIds.has(a.subject) ? `#/nodes/${nodeIds.get(a.subject)}` : "#/nodes"),
    dhcp_drops: () => (nodeIds.has(a.subject) ? `#/nodes/${nodeIds.get(a.subject)}` : "#/nodes"),
    license: () => "#/license",
    outbox_failed: () => `#/work?kind=${encodeURIComponent(a.subject)}&state=failed`,
    dns_delivery_failed: () => "#/work?kind=dns&state=failed",
    outbox_backlog: () => `#/work?kind=${encodeURIComponent(a.subject)}&state=pending`,
  }[a.rule];
  return to ? link(to(), a.summary) : a.summary;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  el.append(...children);
  return el;
}

// Grants in each of the last 60 minutes as bars (oldest left); the numbers are in its label.
function grantChart(perMinute) {
  const values = perMinute.map((m) => m.grants);
  const top = Math.max(1, ...values);
  const width = 300;
  const height = 60;
  const w = width / Math.max(1, values.length);
  const total = values.reduce((a, b) => a + b, 0);
  const label = `Grants per minute over the last hour: ${total} in all, busiest minute ${Math.max(0, ...values)}, last minute ${values[values.length - 1] ?? 0}`;
  return svg("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label, preserveAspectRatio: "none" },
    svg("line", { x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5, class: "chart-axis" }),
    ...values.map((v, i) => svg("rect", {
      x: (i * w + 0.5).toFixed(2), width: Math.max(0.5, w - 1).toFixed(2),
      y: (height - (height * v) / top).toFixed(2), height: ((height * v) / top).toFixed(2), class: "chart-bar",
    }, svg("title", {}, `${fmtTime(perMinute[i].minute)}: ${v}`))));
}

// Pool use over time (GET /dashboard/pool-use, one sample a pool every ops.pool_sample_seconds):
// a line per pool, the POOL_LINES fullest now, 0-100 % on the y axis, the last hour on x.
const POOL_LINES = 5;
function poolUseChart(use) {
  const byPool = new Map();
  for (const x of use.items) {
    if (!byPool.has(x.pool_id)) byPool.set(x.pool_id, []);
    byPool.get(x.pool_id).push(x);
  }
  if (!byPool.size) return h("p", { class: "muted", "data-testid": "pool-use-empty" }, `No samples yet: one is taken every ${use.interval_seconds} s.`);
  const shown = [...byPool.values()].sort((a, b) => b[b.length - 1].percent_used - a[a.length - 1].percent_used).slice(0, POOL_LINES);
  const width = 300;
  const height = 60;
  const start = Date.parse(use.since);
  const span = Math.max(1, Date.now() - start);
  const x = (at) => Math.max(0, Math.min(width, (width * (Date.parse(at) - start)) / span)).toFixed(2);
  const y = (p) => (height - (height * Math.min(100, p)) / 100).toFixed(2);
  const label = "Pool use over the last hour: " + shown.map((rows) =>
    `${rows[0].name} (${rows[0].cidr}) ${rows[rows.length - 1].percent_used}% now, peak ${Math.max(...rows.map((r) => r.percent_used))}%`).join("; ");
  return h("div", {},
    svg("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": label, preserveAspectRatio: "none", "data-testid": "pool-use-chart" },
      svg("line", { x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5, class: "chart-axis" }),
      ...shown.map((rows, i) => svg("polyline", {
        class: `chart-line chart-line-${i}`, fill: "none",
        // One sample so far: a level line from it to now, so it is seen.
        points: [...rows.map((r) => `${x(r.at)},${y(r.percent_used)}`),
          ...(rows.length === 1 ? [`${width},${y(rows[0].percent_used)}`] : [])].join(" "),
      }, svg("title", {}, `${rows[0].name}: ${rows[rows.length - 1].percent_used}%`)))),
    h("ul", { class: "chart-legend" }, shown.map((rows, i) => h("li", {},
      h("span", { class: `chart-key chart-line-${i}`, "aria-hidden": "true" }),
      `${rows[0].name} ${rows[rows.length - 1].percent_used}%`))));
}

const REFRESH_MS = 5000;

// The dashboard redraws itself from GET /dashboard every few seconds while it is shown.
export async function dashboard(view, { isCurrent } = {}) {
  view.append(h("h1", {}, "Dashboard"));
  const status = h("p", { class: "muted refresh-note", "data-testid": "refreshed" });
  const body = h("div", { class: "dashboard-body" });
  view.append(status, body);
  let failures = 0;
  // The pool use chart's samples beside the dashboard; its failure leaves the rest drawn.
  const load = () => Promise.all([get("/dashboard"), get("/dashboard/pool-use").catch((e) => e)]);
  const tick = async () => {
    if (!view.isConnected || (isCurrent && !isCurrent())) return;  // another page: stop
    if (!document.hidden) {
      try {
        const [d, use] = await load();
        if (!view.isConnected) return;
        const next = h("div", { class: "dashboard-body" });
        drawDashboard(next, d, use);
        body.replaceChildren(...next.childNodes);
        status.textContent = `Updated ${new Date().toLocaleTimeString()}; refreshed every ${REFRESH_MS / 1000} s.`;
        failures = 0;
      } catch (e) {
        failures += 1;
        status.replaceChildren(errorBox(e));
      }
    }
    setTimeout(tick, REFRESH_MS * Math.min(6, 1 + failures));
  };
  try { drawDashboard(body, ...await load()); } catch (e) { body.append(errorBox(e)); }
  status.textContent = `Updated ${new Date().toLocaleTimeString()}; refreshed every ${REFRESH_MS / 1000} s.`;
  setTimeout(tick, REFRESH_MS);
}

function drawDashboard(view, d, use) {
  const grid = h("div", { class: "cards" });
  view.append(grid);
  const l = d.license;
  grid.append(section("License use", h("p", { class: "big" }, `${l.managed_ips} of ${l.max_managed_ips}`),
    bar(l.percent_used, "license"), h("p", { class: "muted" }, `tier ${l.tier}; ${l.available} available`)));
  const states = ["active", "offered", "declined", "expired", "released"];
  grid.append(section("Leases by state", h("dl", { class: "stats" }, states.map((s) => [
    h("dt", {}, link(`#/leases?state=${s}`, s)), h("dd", { "data-testid": `leases-${s}` }, String(d.leases[s] ?? 0))]))));
  grid.append(section("Nodes", h("p", { class: "big" }, `${d.nodes.up} up, ${d.nodes.down} down`),
    h("ul", {}, d.nodes.items.map((n) => h("li", {}, link(`#/nodes/${n.id}`, n.name), " ", statusBadge(n.status))))));
  const grants = d.grants_per_minute.map((m) => m.grants);
  grid.append(section("Grants (last hour)", h("p", { class: "big", "data-testid": "grants" }, String(sum(grants))),
    grantChart(d.grants_per_minute),
    h("p", { class: "muted" }, `last minute ${grants[grants.length - 1] ?? 0}; busiest minute ${Math.max(0, ...grants)}`)));
  grid.append(section("Pool use (last hour)", use instanceof Error ? errorBox(use) : poolUseChart(use)));

  const open = d.alerts.items;
  const nodeIds = new Map(d.nodes.items.map((n) => [n.name, n.id]));
  view.append(section(`Open alerts (${d.alerts.open})`, open.length
    ? table("Open alerts", ["Opened", "Rule", "Severity", "Summary"], open.map((a) => [
      fmtTime(a.opened_at), a.rule, badge(a.severity, a.severity === "critical" ? "failed" : "retrying"), alertSubject(a, nodeIds)]))
    : h("p", { class: "muted" }, "No open alerts. ", link("#/alerts", "History"))));

  // One utilisation everywhere: a subnet's, as its page shows it; pools show pool use
  // (docs/console.md: which figure is which).
  view.append(section("Subnet utilisation (worst first)", d.subnets.length
    ? table("Subnets by utilisation, worst first", ["Subnet", "Name", "Used", "Assignable", "Utilisation"], d.subnets.map((s) => [
      link(`#/subnets/${s.subnet_id}`, s.cidr), s.name, String(s.used), String(s.size), bar(s.percent_used, s.cidr)]))
    : h("p", { class: "muted" }, "No subnets yet. ", link("#/prefixes", "Create a prefix, its subnets and pools."))));
  if (d.pools.length) {
    view.append(section("Pool use (worst first)", table("Pools by use, worst first", ["Pool", "Subnet", "Leased", "Size", "Pool use"],
      d.pools.map((p) => [p.name, link(`#/subnets/${p.subnet_id}`, p.cidr), String(p.used), String(p.size), bar(p.percent_used, `pool ${p.name}`)]))));
  }
  view.append(section("DHCP by node", d.dhcp.length
    ? table("DHCP packets by node", ["Node", "Received", "Sent", "Dropped", "Drops by reason"], d.dhcp.map((n) => [
      n.node, String(sum(n.received)), String(sum(n.sent)), String(sum(n.drops)),
      Object.entries(n.drops).map(([k, v]) => `${k} ${v}`).join(", ") || "—"]))
    : h("p", { class: "muted" }, "No node runs the DHCP server.")));
  view.append(section("Outbox", d.outbox.length
    ? table("Outbox rows by kind and state", ["Kind", "State", "Rows", "Oldest (s)"], d.outbox.map((r) => [
      r.kind, r.state === 'staged' ? r.state : link(`#/work?state=${r.state}`, r.state), String(r.rows), String(Math.round(r.oldest_seconds))]))
    : h("p", { class: "muted" }, "Nothing queued or delivered yet.")));
}

export async function nodes(view) {
  view.append(h("h1", {}, "Nodes"));
  const { items } = await get("/nodes");
  view.append(section("Appliance nodes", items.length
    ? table("Appliance nodes", ["Name", "Status", "Version", "Last seen", "Services"], items.map((n) => [
      link(`#/nodes/${n.id}`, n.name), statusBadge(n.status), n.version, fmtTime(n.last_seen_at),
      Object.entries(n.services).map(([k, v]) => `${k} ${v ? "running" : "stopped"}`).join(", ")]))
    : h("p", { class: "muted" }, "No node has registered.")));
}

export async function nodePage(view, { args }) {
  const n = await get(`/nodes/${args[0]}`);
  view.append(h("h1", {}, `Node ${n.name}`));
  const kv = [["Status", statusBadge(n.status)], ["Version", n.version], ["Process", String(n.pid)],
    ["Started", fmtTime(n.started_at)], ["Last seen", fmtTime(n.last_seen_at)],
    ["API", (n.addresses.api || []).join(", ")], ["DHCP", (n.addresses.dhcp || []).join(", ") || "—"]];
  const info = section("Node", h("dl", { class: "kv" }, kv.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
  view.append(info, section("Services", table("Services", ["Service", "State"],
    Object.entries(n.services).map(([k, v]) => [k, v ? "running" : "stopped"]))));
  if (n.dhcp) {
    view.append(section("DHCP counters", table("DHCP counters", ["Counter", "Value"],
      [...Object.entries(n.dhcp.received).map(([k, v]) => [`received ${k}`, String(v)]),
        ...Object.entries(n.dhcp.sent).map(([k, v]) => [`sent ${k}`, String(v)]),
        ...Object.entries(n.dhcp.drops).map(([k, v]) => [`dropped: ${k}`, String(v)])])));
  }
  if (can("admin") && n.status === "down") {
    info.append(h("button", { type: "button", class: "button danger", onclick: async () => {
      try { await del(`/nodes/${n.id}`); location.hash = "#/nodes"; } catch (e) { info.append(errorBox(e)); }
    } }, `Retire node ${n.name}`));
  }
}

export async function alertsPage(view, { params }) {
  view.append(h("h1", {}, "Alerts"));
  const status = params.get("status") || "";
  view.append(h("p", {}, link("#/alerts", "All"), " · ", link("#/alerts?status=open", "Open"), " · ", link("#/alerts?status=cleared", "Cleared")));
  const list = pagedTable({
    caption: status ? `Alerts (${status})` : "Alerts, newest first",
    columns: [
      { label: "Opened", value: (a) => fmtTime(a.opened_at) },
      { label: "Cleared", value: (a) => fmtTime(a.cleared_at) || "—" },
      { label: "State", value: (a) => statusBadge(a.status) },
      { label: "Rule", value: (a) => a.rule },
      { label: "Summary", value: (a) => alertSubject(a) },
    ],
    load: (cursor) => get("/alerts", { ...(status ? { status } : {}), cursor }),
    empty: "No alerts.",
  });
  view.append(section("History", list));
  await list.ready;
  const rules = await get("/settings/alert-rules");
  const sec = section("Thresholds", h("dl", { class: "kv" }, Object.entries(rules).map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))])));
  if (can("admin")) {
    sec.append(form({ title: "Change thresholds", submitLabel: "Save thresholds", initial: rules,
      fields: Object.keys(rules).map((k) => ({ name: k, label: k.replaceAll("_", " "), type: "number" })),
      onSubmit: async (v) => { await patch("/settings/alert-rules", v); window.dispatchEvent(new HashChangeEvent("hashchange")); } }));
  }
  view.append(sec);
}

const destinationFields = [
  { name: "name", label: "Name", required: true },
  { name: "kind", label: "Kind", type: "select", options: ["webhook", "alertmanager", "pager", "smtp"] },
  { name: "settings", label: "Settings (JSON)", type: "json", rows: 5,
    help: 'webhook/alertmanager: {"url": "https://…"}; pager: {"routing_key_ref": "env:NAME"}; smtp: {"host", "port", "starttls", "from", "to": [...], "username", "password_ref"}' },
  { name: "enabled", label: "Enabled", type: "checkbox", default: true },
];

export async function alertDestinations(view) {
  view.append(h("h1", {}, "Alert destinations"));
  const sec = crudSection({
    title: "Alert destinations", noun: "alert destination", role: "admin",
    fields: destinationFields, editFields: destinationFields.filter((f) => f.name !== "kind"),
    columns: [
      { label: "Name", value: (d) => d.name }, { label: "Kind", value: (d) => d.kind },
      { label: "Where", value: (d) => d.settings.url || (d.settings.host ? `${d.settings.host}:${d.settings.port} → ${d.settings.to.join(", ")}` : "") },
      { label: "Enabled", value: (d) => (d.enabled ? "yes" : "no") },
    ],
    list: (cursor) => get("/settings/alert-destinations", { cursor }),
    create: (v) => post("/settings/alert-destinations", v),
    update: (d, v) => patch(`/settings/alert-destinations/${d.id}`, v),
    remove: (d) => del(`/settings/alert-destinations/${d.id}`),
  });
  view.append(h("p", { class: "muted" }, "Every alert opening and clearing is sent to each enabled destination; deliveries show in ", link("#/work", "Work"), "."), sec);
  await sec.ready;
}
