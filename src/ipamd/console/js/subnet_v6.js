// What an IPv6 subnet's page shows instead of, or beside, the IPv4 one (docs/api-ipam.md, "IPv6").
import { del, get, post } from "./api.js";
import { clear, h } from "./dom.js";
import { badge, link, pagedTable } from "./ui.js";
import { crudSection } from "./crud.js";
import { code, dash, lazyDetails, pageOf } from "./lists.js";

const HOSTNAME = { name: "hostname", label: "Hostname", nullable: true };

// An IPv6 subnet's reservations: a DHCPv6 client is known by its DUID (RFC 8415 §11); no MAC
// or client id is offered (docs/api-ipam.md, "IPv6"). Columns, create fields, edit fields.
export const RESERVATION6 = [
  [{ label: "IP", value: (r) => r.ip }, { label: "DUID", value: (r) => code(r.duid) },
    { label: "Hostname", value: (r) => dash(r.hostname) }],
  [{ name: "ip", label: "IP (empty: next free)", nullable: true },
    { name: "duid", label: "DUID", required: true, placeholder: "00:03:00:01:aa:bb:cc:dd:ee:ff" }, HOSTNAME],
  [{ name: "ip", label: "IP" }, { name: "duid", label: "DUID" }, HOSTNAME],
];

// A page of GET /subnets/{id}/history's held addresses as rows of named fields.
const addressRows = (data) => {
  const cols = data.addresses.columns;
  return data.addresses.rows.map((r) => Object.fromEntries(cols.map((c, i) => [c, r[i]])));
};

// An IPv6 subnet is never drawn address by address: its ranges (exact decimal sizes are the
// API's strings, shown as they come) and the held addresses, a page at a time, in address order.
export function addressList6(subnetId) {
  const el = h("div");
  const refresh = () => {
    let at = null; // one moment for every page of this listing (docs/history.md)
    const load = async (cursor) => {
      const data = await get(`/subnets/${subnetId}/history`, { ...(at ? { at } : {}), ...(cursor ? { cursor } : {}) });
      at = data.at;
      return { items: addressRows(data), next_cursor: data.next_cursor };
    };
    const table = pagedTable({
      caption: "Held addresses", load, empty: "No address is leased, reserved or assigned.",
      columns: [{ label: "IP", value: (a) => link(`#/history?ip=${a.ip}`, a.ip) },
        { label: "State", value: (a) => badge(a.state) }, { label: "Hostname", value: (a) => dash(a.hostname) }],
    });
    clear(el).append(h("p", { class: "muted" }, "An IPv6 subnet is listed by its held addresses rather than drawn."),
      table);
    return table.ready;
  };
  el.ready = refresh();
  el.refresh = refresh;
  return el;
}

// A delegation pool's reserved prefixes, by the requesting router's DUID.
function pdReservations(pool) {
  return crudSection({
    title: `Reserved prefixes of ${pool.name}`, noun: "delegated prefix reservation",
    columns: [{ label: "Prefix", value: (r) => r.prefix }, { label: "DUID", value: (r) => code(r.duid) },
      { label: "Hostname", value: (r) => dash(r.hostname) }],
    fields: [{ name: "prefix", label: `Delegated prefix (a /${pool.delegated_length})`, required: true },
      { name: "duid", label: "DUID of the requesting router", required: true }, HOSTNAME],
    list: pageOf(`/pd-pools/${pool.id}/reservations`),
    create: (v) => post(`/pd-pools/${pool.id}/reservations`, v),
    remove: (r) => del(`/pd-reservations/${r.id}`),
    describe: (r) => r.prefix,
  });
}

// Delegation pools (DHCPv6 IA_PD, RFC 8415 §6.3) and, per pool, its reservations by DUID.
export function pdPoolsSection(subnetId) {
  const sec = crudSection({
    title: "Delegation pools", noun: "delegation pool",
    columns: [{ label: "Name", value: (p) => p.name }, { label: "Prefix", value: (p) => p.prefix },
      { label: "Delegated length", value: (p) => `/${p.delegated_length}` },
      { label: "Delegated prefixes", value: (p) => String(p.size) },
      { label: "Reservations", value: (p) => lazyDetails(`Reservations of ${p.name}`, () => pdReservations(p)) }],
    fields: [{ name: "name", label: "Name", required: true },
      { name: "prefix", label: "Prefix", required: true, placeholder: "2001:db8:100::/40" },
      { name: "delegated_length", label: "Delegated length", type: "number", required: true, placeholder: "56" }],
    list: pageOf(`/subnets/${subnetId}/pd-pools`),
    create: (v) => post(`/subnets/${subnetId}/pd-pools`, v),
    remove: (p) => del(`/pd-pools/${p.id}`),
    describe: (p) => `${p.name} (${p.prefix})`,
  });
  sec.querySelector("h2").after(h("p", { class: "muted" },
    "Prefixes delegated to requesting routers on this link (DHCPv6 prefix delegation); counts are exact."));
  return sec;
}
