// History: who held an address, or what a client held (docs/history.md).
import { call, get, query } from "../api.js";
import { h } from "../dom.js";
import { badge, errorBox, fmtTime, form, link, pagedTable, section } from "../ui.js";
import { dash, pageOf } from "../lists.js";

const KINDS = [["ip", "IP address"], ["mac", "MAC"], ["hostname", "Hostname"], ["client_id", "Client id"],
  ["duid", "DUID"], ["circuit", "Circuit id (option 82)"], ["remote", "Remote id (option 82)"]];
const IDENTITY_COLUMNS = ["ip", "mac", "hostname", "client_id", "circuit_id", "remote_id", "giaddr"];

function queryForm(params, tz) {
  const kind = KINDS.find(([k]) => params.get(k)) || KINDS[0];
  const f = form({
    fields: [
      { name: "kind", label: "Identity", type: "select", options: KINDS, value: kind[0] },
      { name: "value", label: "Value", value: params.get(kind[0]) || "", required: true },
      { name: "at", label: "At a moment (local time)", type: "datetime", value: params.get("at") || "" },
      { name: "from", label: "Or from", type: "datetime", value: params.get("from") || "" },
      { name: "to", label: "to", type: "datetime", value: params.get("to") || "" },
      { name: "tz", label: "Time zone", value: tz },
    ],
    submitLabel: "Search history",
    onSubmit: async (v) => {
      const q = { [v.kind]: v.value, at: v.at, from: v.from, to: v.to, tz: v.tz };
      location.hash = `#/history${query(q)}`;
    },
  });
  f.classList.add("filters");
  return f;
}

// The whole answer as one CSV (no limit: the API streams it).
function downloadButton(q, result) {
  const download = async () => {
    try {
      const response = await call("GET", `/history${query({ ...q, format: "csv" })}`, undefined, { raw: true });
      const url = URL.createObjectURL(await response.blob());
      const a = h("a", { href: url, download: "history.csv", hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) { result.prepend(errorBox(e)); }
  };
  return h("button", { type: "button", class: "button", onclick: download }, "Download CSV");
}

// Subnets by CIDR (the first 1000; any other keeps the word "subnet" as its link).
async function subnetCidrs() {
  const cidrOf = new Map();
  try {
    for (const x of (await get("/subnets", { limit: 1000 })).items) cidrOf.set(x.id, x.cidr);
  } catch { /* links stay */ }
  return cidrOf;
}

export async function history(view, { params }) {
  const tz = params.get("tz") || Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  view.append(h("h1", {}, "History"),
    h("p", { class: "muted" }, "Who held an address, or what a client held, at a moment or over a range."));
  view.append(section("Query", queryForm(params, tz)));
  const q = {};
  for (const k of [...KINDS.map(([x]) => x), "at", "from", "to"]) if (params.get(k)) q[k] = params.get(k);
  if (!KINDS.some(([k]) => q[k])) return;
  q.tz = tz;
  const cidrOf = await subnetCidrs();
  const result = h("div");
  const table = pagedTable({
    columns: [...IDENTITY_COLUMNS.map((c) => ({ label: c, value: (r) => dash(r[c]) })),
      { label: "from", value: (r) => fmtTime(r.from) },
      { label: "to", value: (r) => (r.to ? fmtTime(r.to) : "holding") },
      { label: "state", value: (r) => badge(r.state) },
      { label: "subnet", value: (r) => link(`#/subnets/${r.subnet_id}`, cidrOf.get(r.subnet_id) || "subnet") }],
    load: pageOf("/history", q), empty: "No occupancy matches.",
  });
  result.append(h("div", { class: "row" }, downloadButton(q, result)), table);
  view.append(section("Results", result));
  await table.ready;
}
