// Appliance nodes and a node's page.
import { can, del, get } from "../api.js";
import { h } from "../dom.js";
import { errorBox, fmtTime, link, section } from "../ui.js";
import { statusBadge, table } from "../opsparts.js";

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
