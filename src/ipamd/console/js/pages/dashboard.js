// The dashboard: one GET /dashboard (and its pool use samples), redrawn every few seconds.
import { get } from "../api.js";
import { h } from "../dom.js";
import { badge, bar, errorBox, fmtTime, link, section } from "../ui.js";
import { alertSubject, statusBadge, sum, table } from "../opsparts.js";
import { grantChart, poolUseChart } from "../charts.js";

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

const LEASE_STATES = ["active", "offered", "declined", "expired", "released"];
const muted = (...text) => h("p", { class: "muted" }, ...text);

// The cards at the top: license, leases by state, nodes, grants, pool use over time.
function cards(d, use) {
  const l = d.license;
  const grants = d.grants_per_minute.map((m) => m.grants);
  return [
    section("License use", h("p", { class: "big" }, `${l.managed_ips} of ${l.max_managed_ips}`),
      bar(l.percent_used, "license"), muted(`tier ${l.tier}; ${l.available} available`)),
    section("Leases by state", h("dl", { class: "stats" }, LEASE_STATES.map((s) => [
      h("dt", {}, link(`#/leases?state=${s}`, s)),
      h("dd", { "data-testid": `leases-${s}` }, String(d.leases[s] ?? 0))]))),
    section("Nodes", h("p", { class: "big" }, `${d.nodes.up} up, ${d.nodes.down} down`),
      h("ul", {}, d.nodes.items.map((n) => h("li", {}, link(`#/nodes/${n.id}`, n.name), " ", statusBadge(n.status))))),
    section("Grants (last hour)", h("p", { class: "big", "data-testid": "grants" }, String(sum(grants))),
      grantChart(d.grants_per_minute),
      muted(`last minute ${grants[grants.length - 1] ?? 0}; busiest minute ${Math.max(0, ...grants)}`)),
    section("Pool use (last hour)", use instanceof Error ? errorBox(use) : poolUseChart(use)),
  ];
}

function openAlerts(d) {
  const open = d.alerts.items;
  const nodeIds = new Map(d.nodes.items.map((n) => [n.name, n.id]));
  const severity = (a) => badge(a.severity, a.severity === "critical" ? "failed" : "retrying");
  return section(`Open alerts (${d.alerts.open})`, open.length
    ? table("Open alerts", ["Opened", "Rule", "Severity", "Summary"],
      open.map((a) => [fmtTime(a.opened_at), a.rule, severity(a), alertSubject(a, nodeIds)]))
    : muted("No open alerts. ", link("#/alerts", "History")));
}

// One utilisation everywhere: a subnet's, as its page shows it; pools show pool use
// (docs/console.md: which figure is which).
function usage(d) {
  const subnet = (x) => link(`#/subnets/${x.subnet_id}`, x.cidr);
  const subnets = section("Subnet utilisation (worst first)", d.subnets.length
    ? table("Subnets by utilisation, worst first", ["Subnet", "Name", "Used", "Assignable", "Utilisation"],
      d.subnets.map((s) => [subnet(s), s.name, String(s.used), String(s.size), bar(s.percent_used, s.cidr)]))
    : muted("No subnets yet. ", link("#/prefixes", "Create a prefix, its subnets and pools.")));
  if (!d.pools.length) return [subnets];
  return [subnets, section("Pool use (worst first)",
    table("Pools by use, worst first", ["Pool", "Subnet", "Leased", "Size", "Pool use"],
      d.pools.map((p) => [p.name, subnet(p), String(p.used), String(p.size), bar(p.percent_used, `pool ${p.name}`)])))];
}

function traffic(d) {
  const drops = (n) => Object.entries(n.drops).map(([k, v]) => `${k} ${v}`).join(", ") || "—";
  const state = (r) => (r.state === "staged" ? r.state : link(`#/work?state=${r.state}`, r.state));
  return [
    section("DHCP by node", d.dhcp.length
      ? table("DHCP packets by node", ["Node", "Received", "Sent", "Dropped", "Drops by reason"], d.dhcp.map((n) => [
        n.node, String(sum(n.received)), String(sum(n.sent)), String(sum(n.drops)), drops(n)]))
      : muted("No node runs the DHCP server.")),
    section("Outbox", d.outbox.length
      ? table("Outbox rows by kind and state", ["Kind", "State", "Rows", "Oldest (s)"], d.outbox.map((r) => [
        r.kind, state(r), String(r.rows), String(Math.round(r.oldest_seconds))]))
      : muted("Nothing queued or delivered yet.")),
  ];
}

function drawDashboard(view, d, use) {
  view.append(h("div", { class: "cards" }, cards(d, use)), openAlerts(d), ...usage(d), ...traffic(d));
}
