// Pieces the operations pages share: a plain table, a sum, a status badge, an alert's subject.
import { h } from "./dom.js";
import { badge, link } from "./ui.js";

export function table(caption, heads, rows) {
  return h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": caption },
    h("table", { class: "table" }, h("caption", {}, caption),
      h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((c) => h("td", {}, c)))))));
}
export const sum = (o) => Object.values(o || {}).reduce((a, b) => a + b, 0);
// Colours of the existing badge classes: green, red, amber.
export const statusBadge = (s) => badge(s, s === "up" || s === "cleared" ? "delivered" : "failed");

// What an alert is about, as a link: its subject is a pool or subnet id, a node name, a kind.
export function alertSubject(a, nodeIds = new Map()) {
  const node = () => (nodeIds.has(a.subject) ? `#/nodes/${nodeIds.get(a.subject)}` : "#/nodes");
  const to = {
    pool_utilisation: () => `#/pools/${a.subject}`,
    subnet_utilisation: () => `#/subnets/${a.subject}`, no_address: () => `#/subnets/${a.subject}`,
    node_down: node,
    dhcp_drops: node,
    license: () => "#/license",
    outbox_failed: () => `#/work?kind=${encodeURIComponent(a.subject)}&state=failed`,
    dns_delivery_failed: () => "#/work?kind=dns&state=failed",
    outbox_backlog: () => `#/work?kind=${encodeURIComponent(a.subject)}&state=pending`,
  }[a.rule];
  return to ? link(to(), a.summary) : a.summary;
}
