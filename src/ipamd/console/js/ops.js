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

export async function dashboard(view) {
  view.append(h("h1", {}, "Dashboard"));
  let d;
  try { d = await get("/dashboard"); } catch (e) { view.append(errorBox(e)); return; }
  const grid = h("div", { class: "cards" });
  view.append(grid);
  const l = d.license;
  grid.append(section("License use", h("p", { class: "big" }, `${l.managed_ips} of ${l.max_managed_ips}`),
    bar(l.percent_used, "license"), h("p", { class: "muted" }, `tier ${l.tier}; ${l.available} available`)));
  const states = ["active", "offered", "declined", "expired", "released"];
  grid.append(section("Leases by state", h("dl", { class: "stats" }, states.map((s) => [
    h("dt", {}, link(`#/leases?state=${s}`, s)), h("dd", {}, String(d.leases[s] ?? 0))]))));
  grid.append(section("Nodes", h("p", { class: "big" }, `${d.nodes.up} up, ${d.nodes.down} down`),
    h("ul", {}, d.nodes.items.map((n) => h("li", {}, link(`#/nodes/${n.id}`, n.name), " ", statusBadge(n.status))))));
  const grants = d.grants_per_minute.map((m) => m.grants);
  grid.append(section("Grants (last hour)", h("p", { class: "big" }, String(sum(grants))),
    h("p", { class: "muted" }, `last minute ${grants[grants.length - 1] ?? 0}; busiest minute ${Math.max(0, ...grants)}`)));

  const open = d.alerts.items;
  view.append(section(`Open alerts (${d.alerts.open})`, open.length
    ? table("Open alerts", ["Opened", "Rule", "Severity", "Summary"], open.map((a) => [
      fmtTime(a.opened_at), a.rule, badge(a.severity, a.severity === "critical" ? "failed" : "retrying"), a.summary]))
    : h("p", { class: "muted" }, "No open alerts. ", link("#/alerts", "History"))));

  view.append(section("Subnet utilisation (worst first)", d.subnets.length
    ? table("Subnets, worst-utilised first", ["Subnet", "Name", "Used", "Size", "Utilisation"], d.subnets.map((s) => [
      link(`#/subnets/${s.subnet_id}`, s.cidr), s.name, String(s.used), String(s.size), bar(s.percent_used, s.cidr)]))
    : h("p", { class: "muted" }, "No pools yet. ", link("#/prefixes", "Create a prefix, its subnets and pools."))));
  if (d.pools.length) {
    view.append(section("Pools (worst first)", table("Pools, worst-utilised first", ["Pool", "Subnet", "Used", "Size", "Utilisation"],
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
      { label: "Summary", value: (a) => a.summary },
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
