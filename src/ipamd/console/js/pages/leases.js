// Leases: filters, sort, total, CSV export, force release of one or many.
import { can, get, post } from "../api.js";
import { clear, h } from "../dom.js";
import { badge, confirmDialog, errorBox, fmtTime, link, notice, pagedTable, section } from "../ui.js";
import { code, csvButton, dash, filterForm, pageOf, sortTo } from "../lists.js";

const STATES = ["offered", "active", "released", "expired", "declined"];
const live = (l) => ["active", "offered"].includes(l.state);
const leasesOf = (n) => `${n} ${n === 1 ? "lease" : "leases"}`;

// The subnet filter lists the first 200 subnets; a deep link to any other still works.
// `cidrOf` names the subnets it read.
async function subnetFilter(params) {
  const cidrOf = new Map();
  try {
    const page = await get("/subnets", { limit: 200 });
    for (const x of page.items) cidrOf.set(x.id, x.cidr);
    const options = [["", "any"], ...page.items.map((x) => [x.id, x.name ? `${x.cidr} ${x.name}` : x.cidr])];
    const wanted = params.get("subnet_id");
    if (!wanted || options.some(([v]) => v === wanted)) {
      return { field: { name: "subnet_id", label: "Subnet", type: "select", options }, cidrOf };
    }
  } catch { /* the text field stays */ }
  return { field: { name: "subnet_id", label: "Subnet id" }, cidrOf };
}

// A released lease's row: its badge says so and it can no longer be chosen or released.
function markReleased(tr) {
  tr.querySelector(".badge").replaceWith(badge("released"));
  const box = tr.querySelector("input.row-select");
  if (box) {
    box.checked = false;
    box.disabled = true;
    box.dispatchEvent(new Event("change"));
  }
  tr.querySelector("button.danger")?.remove();
}

// "Release selected": one POST /leases/release for every chosen live lease.
function releaseSelectedButton(view, message, selected) {
  const release = async () => {
    const rows = selected().filter(live);
    if (!rows.length) return;
    const more = rows.length > 5 ? `, and ${rows.length - 5} more` : "";
    const names = rows.slice(0, 5).map((l) => l.ip).join(", ") + more;
    const question = `Force release of ${leasesOf(rows.length)} (${names})? Their clients lose their addresses.`;
    if (!(await confirmDialog(question, `Release ${rows.length}`))) return;
    try {
      const done = await post("/leases/release", { lease_ids: rows.map((l) => l.lease_id) });
      for (const l of done.released) {
        const tr = view.querySelector(`tr[data-lease="${l.lease_id}"]`);
        if (tr) markReleased(tr);
      }
      const skipped = done.skipped.length
        ? ` ${done.skipped.length} skipped: ${done.skipped.map((x) => x.reason).join("; ")}` : "";
      clear(message).append(notice(`Released ${leasesOf(done.released.length)}.${skipped}`));
    } catch (error) { clear(message).append(errorBox(error)); }
  };
  return h("button", { type: "button", class: "button small danger", disabled: true, onclick: release },
    "Release selected");
}

function releaseCell(l, message) {
  if (!live(l)) return "";
  const release = async (e) => {
    const question = `Force release of ${l.ip}${l.hostname ? ` (${l.hostname})` : ""}? The client loses its address.`;
    if (!(await confirmDialog(question, "Release"))) return;
    try {
      await post(`/leases/${l.lease_id}/release`);
      markReleased(e.target.closest("tr"));
      clear(message).append(notice(`Released ${l.ip}.`));
    } catch (error) { clear(message).append(errorBox(error)); }
  };
  return h("button", {
    type: "button", class: "button small danger", "aria-label": `Release ${l.ip}`, onclick: release,
  }, "Release");
}

function leaseColumns(cidrOf) {
  const subnet = (l) => cidrOf.get(l.subnet_id);
  return [
    { label: "IP", sort: "ip", value: (l) => link(`#/history?ip=${l.ip}`, l.ip), csv: (l) => l.ip },
    // A ping check's conflict (docs/api-ipam.md, "Ping check"): declined, and no client's.
    { label: "State", sort: "state",
      value: (l) => (l.ping_conflict
        ? h("span", {}, badge(l.state), " ", badge("ping conflict", "declined"))
        : badge(l.state)),
      csv: (l) => l.state },
    { label: "MAC", sort: "mac", value: (l) => dash(l.mac), csv: (l) => l.mac },
    // A DHCPv6 binding's identity and IA (docs/dhcpv6.md); a DHCPv4 lease has none of them.
    { label: "DUID", value: (l) => (l.duid ? code(l.duid) : "—"), csv: (l) => l.duid },
    { label: "IAID", value: (l) => dash(l.iaid), csv: (l) => l.iaid },
    { label: "IA type", value: (l) => dash(l.ia_type), csv: (l) => l.ia_type },
    { label: "Prefix length", value: (l) => (l.prefix_length == null ? "—" : `/${l.prefix_length}`),
      csv: (l) => l.prefix_length },
    { label: "Hostname", sort: "hostname", value: (l) => dash(l.hostname), csv: (l) => l.hostname },
    { label: "Subnet", value: (l) => link(`#/subnets/${l.subnet_id}`, subnet(l) || "subnet"),
      csv: (l) => subnet(l) || l.subnet_id },
    { label: "Expires", sort: "expires_at", value: (l) => fmtTime(l.expires_at), csv: (l) => l.expires_at },
  ];
}

export async function leases(view, { params }) {
  view.append(h("h1", {}, "Leases"));
  const { field, cidrOf } = await subnetFilter(params);
  const filters = [
    field,
    { name: "state", label: "State", type: "select", options: [["", "any"], ...STATES] },
    { name: "ip", label: "IP" }, { name: "mac", label: "MAC" }, { name: "hostname", label: "Hostname" },
  ];
  const f = filterForm(filters, params, "#/leases");
  f.classList.add("filters");
  const message = h("div");
  const filter = Object.fromEntries([...params].filter(([k]) => filters.some((x) => x.name === k)));
  const sort = params.get("sort") || "";
  // limit (page size) is honoured from the link too: #/leases?limit=100
  const p = { ...filter, ...(sort ? { sort } : {}), ...(params.get("limit") ? { limit: params.get("limit") } : {}) };
  const operator = can("operator");
  const releaseSelected = releaseSelectedButton(view, message, () => table.selected());
  const columns = leaseColumns(cidrOf);
  const table = pagedTable({
    rowProps: (l) => ({ dataset: { lease: l.lease_id } }),
    columns: [...columns, ...(operator ? [{ label: "Actions", value: (l) => releaseCell(l, message) }] : [])],
    load: pageOf("/leases", p),
    sort, onSort: sortTo("#/leases", params),
    total: async () => (await get("/leases/count", filter)).count,
    select: operator ? {
      enabled: live, label: (l) => l.ip,
      onChange: (rows) => {
        const n = rows.filter(live).length;
        releaseSelected.disabled = n === 0;
        releaseSelected.textContent = n ? `Release selected (${n})` : "Release selected";
      },
    } : undefined,
    empty: "No lease matches.",
  });
  const tools = h("div", { class: "row table-tools" },
    csvButton("leases.csv", [...columns, { label: "Ping conflict", csv: (l) => l.ping_conflict }],
      (cursor, limit) => get("/leases", { ...filter, ...(sort ? { sort } : {}), cursor, limit }), message, leasesOf),
    operator ? releaseSelected : null);
  view.append(section("Filters", f), message, tools, table);
  await table.ready;
}
