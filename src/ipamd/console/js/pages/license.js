// License use.
import { get } from "../api.js";
import { h } from "../dom.js";
import { bar, section } from "../ui.js";

export async function licensePage(view) {
  view.append(h("h1", {}, "License"));
  const l = await get("/license");
  const figures = [["Managed IPs", l.managed_ips], ["Limit", l.max_managed_ips], ["Reservations", l.reservations],
    ["Assignments", l.assignments], ["Available", l.available]];
  const percent = l.max_managed_ips ? (100 * l.managed_ips) / l.max_managed_ips : 0;
  view.append(section(`Tier: ${l.tier}`, bar(percent, "license"),
    h("dl", { class: "kv" }, figures.map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))]))));
}
