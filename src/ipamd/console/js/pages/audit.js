// Audit: filters, sort, total, CSV export, each change as a before/after table.
import { can, get } from "../api.js";
import { h } from "../dom.js";
import { fmtTime, link, pagedTable, section } from "../ui.js";
import { csvButton, filterForm, pageOf, sortTo } from "../lists.js";

function diff(before, after) {
  const keys = [...new Set([...Object.keys(before || {}), ...Object.keys(after || {})])].sort();
  const show = (v) => (v === undefined ? "" : JSON.stringify(v));
  const rows = keys.filter((k) => show(before?.[k]) !== show(after?.[k]) || !before || !after);
  if (!rows.length) return h("span", { class: "muted" }, "no field changed");
  // A creation has no "before" and a deletion no "after": show only the side that exists.
  const sides = [before && ["before", "del", before], after && ["after", "ins", after]].filter(Boolean);
  const table = h("table", { class: "diff" }, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "field"),
    sides.map(([label]) => h("th", { scope: "col" }, label)))),
  h("tbody", {}, rows.map((k) => h("tr", {}, h("th", { scope: "row" }, k),
    sides.map(([, cls, side]) => h("td", { class: cls }, show(side[k])))))));
  if (before && after) return table;
  // Every field of a created or deleted object would make a tall row: folded, one click away.
  const summary = `${before ? "deleted" : "created"}: ${rows.length} fields`;
  return h("details", { class: "diff-all" }, h("summary", {}, summary), table);
}

// Every object type the appliance audits (the filter is a picker: a typo cannot match nothing).
const AUDIT_TYPES = ["alert", "alert_destination", "alert_rules", "assignment", "client_class",
  "dns_record", "dns_server", "dns_zone", "exclude", "lease", "node", "option", "outbox", "pd_exclude",
  "pd_pool", "pd_reservation", "pool", "prefix", "reservation", "settings", "subnet", "tenant",
  "token", "webhook"];
// Where an audited object can be seen: its page, or the page that lists it.
const inSubnet = (a, o) => o?.subnet_id && `#/subnets/${o.subnet_id}`;
const AUDIT_LINK = {
  subnet: (a) => `#/subnets/${a.object_id}`, prefix: () => "#/prefixes",
  pool: inSubnet, exclude: inSubnet, reservation: inSubnet, assignment: inSubnet, option: inSubnet,
  lease: (a, o) => o?.ip && `#/history?ip=${encodeURIComponent(o.ip)}`,
  dns_zone: (a) => `#/dns/zones/${a.object_id}`, dns_record: (a, o) => o?.zone_id && `#/dns/zones/${o.zone_id}`,
  dns_server: () => "#/dns", outbox: () => "#/work", node: (a) => `#/nodes/${a.object_id}`,
  tenant: () => "#/tenants", client_class: () => "#/client-classes", token: () => "#/tokens",
  webhook: () => "#/webhooks", shared_network: () => "#/shared-networks",
};
// An object's name as its own entry says it: a CIDR, a name, an IP, a record.
function auditName(o) {
  if (!o) return null;
  if (o.cidr) return o.cidr;
  if (o.type && o.name) return `${o.name} ${o.type}`;
  if (o.name) return o.name;
  if (o.start_ip) return `${o.start_ip}–${o.end_ip}`;
  if (o.ip) return o.hostname ? `${o.ip} (${o.hostname})` : o.ip;
  if (o.topic) return o.target ? `${o.topic} → ${o.target}` : o.topic;
  if (o.code !== undefined) return `option ${o.code}`;
  return null;
}

const ACTIONS = ["create", "update", "delete", "release", "replay", "open", "clear"];

// Admins may read tokens: an actor "token:<id>" is shown with the token's name.
async function tokenNames() {
  const names = new Map();
  if (!can("admin")) return names;
  try {
    const page = await get("/tokens", { limit: 1000, include_revoked: true });
    for (const t of page.items) names.set(`token:${t.id}`, t.name);
  } catch { /* ids stay as they are */ }
  return names;
}

function objectCell(a) {
  const o = a.after || a.before;
  const name = auditName(o);
  const to = AUDIT_LINK[a.object_type]?.(a, o);
  const text = name ? `${a.object_type} ${name}` : `${a.object_type} ${a.object_id || ""}`;
  return h("span", { title: a.object_id || "" }, to ? link(to, text) : text);
}

export async function audit(view, { params }) {
  view.append(h("h1", {}, "Audit"));
  const filters = [
    { name: "object_type", label: "Object type", type: "select", options: [["", "any"], ...AUDIT_TYPES] },
    { name: "object_id", label: "Object id" }, { name: "actor", label: "Actor" },
    { name: "action", label: "Action", type: "select", options: [["", "any"], ...ACTIONS] },
  ];
  const f = filterForm(filters, params, "#/audit");
  f.classList.add("filters");
  const p = Object.fromEntries([...params].filter(([k]) => filters.some((x) => x.name === k)));
  const sort = params.get("sort") || "";
  const names = await tokenNames();
  const actorName = (a) => (names.has(a.actor) ? `${names.get(a.actor)} (token)` : a.actor);
  const actor = (a) => (names.has(a.actor) ? h("span", { title: a.actor }, actorName(a)) : a.actor);
  const columns = [
    { label: "At", sort: "at", value: (a) => fmtTime(a.at), csv: (a) => a.at },
    { label: "Actor", sort: "actor", value: actor, csv: actorName },
    { label: "Action", sort: "action", value: (a) => a.action, csv: (a) => a.action },
    { label: "Object", sort: "object_type", value: objectCell,
      csv: (a) => `${a.object_type} ${auditName(a.after || a.before) || a.object_id || ""}` },
  ];
  const message = h("div");
  const table = pagedTable({
    columns: [...columns, { label: "Change", value: (a) => diff(a.before, a.after) }],
    load: pageOf("/audit", { ...p, ...(sort ? { sort } : {}) }), empty: "No audit entry matches.",
    sort, onSort: sortTo("#/audit", params),
    total: async () => (await get("/audit/count", p)).count,
  });
  const csvColumns = [...columns, { label: "Object id", csv: (a) => a.object_id },
    { label: "Before", csv: (a) => (a.before ? JSON.stringify(a.before) : "") },
    { label: "After", csv: (a) => (a.after ? JSON.stringify(a.after) : "") }];
  const tools = h("div", { class: "row table-tools" }, csvButton("audit.csv", csvColumns,
    (cursor, limit) => get("/audit", { ...p, ...(sort ? { sort } : {}), cursor, limit }), message,
    (n) => `${n} audit ${n === 1 ? "entry" : "entries"}`));
  view.append(section("Filters", f), message, tools, table);
  await table.ready;
}
