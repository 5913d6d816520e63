// A subnet's page: its settings, utilisation, address map (IPv6: held addresses) and children.
import { can, del, get, patch, post } from "../api.js";
import { clear, h } from "../dom.js";
import { bar, confirmDialog, errorBox, form, link, plural, section } from "../ui.js";
import { crudSection } from "../crud.js";
import { addressMap } from "../map.js";
import { dash, pageOf, pickerOf } from "../lists.js";
import { familyFields, isV6, loadDdnsPickers, subnetFormFields, V6_NOTE } from "../subnet_fields.js";
import { optionsSection } from "../subnet_options.js";
import { effectiveSection } from "../effective.js";
import { addressList6, pdPoolsSection, RESERVATION6 } from "../subnet_v6.js";

// What a delete takes with it, said in its confirmation (docs/console.md).
async function poolImpact(pool) {
  const u = await get(`/pools/${pool.id}/utilisation`);
  return `It holds ${plural(u.leased, "live lease")} and ${plural(u.reserved, "reservation")} `
    + `in ${pool.start_ip} – ${pool.end_ip}; no new lease is offered from this range once it is deleted.`;
}
async function subnetImpact(id) {
  const u = await get(`/subnets/${id}/utilisation`);
  return `It holds ${plural(u.leased, "live lease")}, ${plural(u.reserved, "reservation")} `
    + `and ${plural(u.assigned, "assignment")}.`;
}
async function reservationImpact(r) {
  if (!r.ip) return null;
  const counts = await Promise.all(["active", "offered"].map((state) => get("/leases/count", { ip: r.ip, state })));
  const live = counts.reduce((a, c) => a + c.count, 0);
  if (!live) return `${r.ip} has no live lease.`;
  return `${r.ip} is leased now (${plural(live, "live lease")}); the lease stays until it ends.`;
}

// A field's value as the settings list shows it (the DDNS server and the shared network by
// name, linked).
function shownValue(s, f, serverName, groupName) {
  const v = s[f.name];
  if (f.name === "ddns_server_id" && serverName.has(v)) return link("#/dns", serverName.get(v));
  if (f.name === "shared_network_id" && groupName.has(v)) return link("#/shared-networks", groupName.get(v));
  if (Array.isArray(v)) return dash(v.join(", "));
  if (typeof v === "boolean") return v ? "yes" : "no";
  return dash(v);
}

function editButtons(s, ddns, panel) {
  const edit = () => {
    clear(panel).append(form({
      title: "Edit subnet", fields: subnetFormFields(isV6(s.cidr), ddns), initial: s,
      onSubmit: async (v) => {
        await patch(`/subnets/${s.id}`, v);
        window.dispatchEvent(new HashChangeEvent("hashchange"));
      },
      onCancel: () => clear(panel),
    }));
    panel.querySelector("input")?.focus();
  };
  const remove = async () => {
    if (!(await confirmDialog(`Delete subnet ${s.cidr}?`, "Delete", await subnetImpact(s.id)))) return;
    try {
      await del(`/subnets/${s.id}`);
      location.hash = "#/prefixes";
    } catch (e) { clear(panel).append(errorBox(e)); }
  };
  return h("div", { class: "row" },
    h("button", { type: "button", class: "button small", onclick: edit }, "Edit subnet"),
    h("button", { type: "button", class: "button small danger", onclick: remove }, "Delete subnet"));
}

async function settingsSection(s) {
  const fields = section("Settings");
  const ddns = await loadDdnsPickers();
  const serverName = new Map((ddns.servers?.items || []).map((x) => [x.id, x.name]));
  const groupName = new Map((ddns.groups?.items || []).map((x) => [x.id, x.name]));
  const v6 = isV6(s.cidr);
  if (v6) fields.append(h("p", { class: "muted", "data-testid": "v6-note" }, V6_NOTE));
  fields.append(h("dl", { class: "kv" },
    familyFields(v6).map((f) => [h("dt", {}, f.label), h("dd", {}, shownValue(s, f, serverName, groupName))])));
  if (can("operator")) {
    const panel = h("div");
    fields.append(editButtons(s, ddns, panel), panel);
  }
  return fields;
}

const USAGE_FIGURES = ["size", "used", "free", "leased", "reserved", "assigned", "excluded"];

// The utilisation, redrawn by `usage.refresh()` after a change on the page.
function usageSection(s) {
  const usage = section("Utilisation");
  const nextFree = h("output", { "data-testid": "next-free" });
  usage.append(h("p", {}, link(`#/leases?subnet_id=${s.id}`, "Leases in this subnet"), " · ",
    link(`#/audit?object_id=${s.id}`, "Audit of this subnet")));
  const askNextFree = async () => {
    try {
      const r = await get(`/subnets/${s.id}/next-free-ip`);
      nextFree.textContent = r.ip ?? "none free";
    } catch (e) { nextFree.textContent = e.message; }
  };
  usage.append(h("button", { type: "button", class: "button small", onclick: askNextFree }, "Next free IP"),
    " ", nextFree);
  const slot = h("div");
  usage.querySelector("h2").after(slot);
  usage.refresh = () => get(`/subnets/${s.id}/utilisation`)
    .then((u) => clear(slot).append(bar(u.percent_used, s.cidr),
      h("dl", { class: "stats" }, USAGE_FIGURES.map((k) => [h("dt", {}, k), h("dd", {}, String(u[k]))]))))
    .catch((e) => clear(slot).append(errorBox(e)));
  usage.refresh();
  return usage;
}

// A reservation's options and PXE fields beat its classes' and the subnet's: its own page.
const PXE_FIELDS = [{ name: "next_server", label: "Next server (PXE)", nullable: true },
  { name: "boot_file", label: "Boot file (PXE)", nullable: true }];
const RESERVATION4 = [
  [{ label: "IP", value: (r) => link(`#/reservations/${r.id}`, r.ip) }, { label: "MAC", value: (r) => dash(r.mac) },
    { label: "Client id / DUID", value: (r) => dash(r.client_id || r.duid) },
    { label: "Hostname", value: (r) => dash(r.hostname) }],
  [{ name: "ip", label: "IP (empty: next free)", nullable: true }, { name: "mac", label: "MAC", nullable: true },
    { name: "client_id", label: "Client id", nullable: true }, { name: "duid", label: "DUID", nullable: true },
    { name: "hostname", label: "Hostname", nullable: true }, ...PXE_FIELDS],
  [{ name: "ip", label: "IP" }, { name: "mac", label: "MAC", nullable: true },
    { name: "client_id", label: "Client id", nullable: true }, { name: "duid", label: "DUID", nullable: true },
    { name: "hostname", label: "Hostname", nullable: true }, ...PXE_FIELDS],
];
const RANGE_FIELDS = [{ name: "start_ip", label: "First address", required: true },
  { name: "end_ip", label: "Last address", required: true }];

// Pools, excludes, reservations and assignments: each a section of the subnet's children.
async function childSections(id, v6, changed) {
  const classField = (await pickerOf("/client-classes", "class_id", "Client class", "any client",
    (c) => `${c.name} (${c.match} ${c.value})`)) || { name: "class_id", label: "Client class id", nullable: true };
  const className = new Map((classField.options || []).slice(1));
  const child = (title, noun, path, columns, createFields, editFields, impact) => crudSection({
    title, noun, columns, fields: createFields, editFields, impact, onChange: changed, bulk: true,
    list: pageOf(`/subnets/${id}/${path}`),
    create: (v) => post(`/subnets/${id}/${path}`, v),
    update: (row, v) => patch(`/${path}/${row.id}`, v),
    remove: (row) => del(`/${path}/${row.id}`),
    describe: (row) => row.name || row.ip || (row.start_ip ? `${row.start_ip}–${row.end_ip}` : row.code ?? row.id),
  });
  const range = (x) => `${x.start_ip} – ${x.end_ip}`;
  return [
    child("Pools", "pool", "pools",
      [{ label: "Name", value: (p) => p.name }, { label: "Range", value: range },
        { label: "Size", value: (p) => String(p.size) },
        { label: "Client class", value: (p) => (p.class_id ? className.get(p.class_id) || p.class_id : "any") }],
      [{ name: "name", label: "Name", required: true }, ...RANGE_FIELDS, classField], undefined, poolImpact),
    child("Excludes", "exclude", "excludes",
      [{ label: "Range", value: range }, { label: "Size", value: (x) => String(x.size) }], RANGE_FIELDS),
    child("Reservations", "reservation", "reservations", ...(v6 ? RESERVATION6 : RESERVATION4), reservationImpact),
    child("Assignments", "assignment", "assignments",
      [{ label: "IP", value: (a) => a.ip }, { label: "Hostname", value: (a) => a.hostname },
        { label: "Description", value: (a) => a.description }],
      [{ name: "ip", label: "IP (empty: next free)", nullable: true },
        { name: "hostname", label: "Hostname", required: true }, { name: "description", label: "Description" }],
      [{ name: "ip", label: "IP" }, { name: "hostname", label: "Hostname" },
        { name: "description", label: "Description" }]),
  ];
}

export async function subnetPage(view, { args }) {
  const [id] = args;
  const s = await get(`/subnets/${id}`);
  const v6 = isV6(s.cidr);
  view.append(h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, link("#/prefixes", "Prefixes"), " / ", s.cidr),
    h("h1", {}, `Subnet ${s.cidr}`, s.name ? ` — ${s.name}` : ""));
  const top = h("div", { class: "cards" });
  view.append(top);
  const usage = usageSection(s);
  top.append(await settingsSection(s), usage);

  const map = section("Address map");
  const mapView = v6 ? addressList6(id) : addressMap(id, s);
  map.append(mapView);
  view.append(map);

  const sections = await childSections(id, v6, () => { mapView.refresh(); usage.refresh(); });
  const options = optionsSection(`/subnets/${id}/options`, v6);
  const delegation = v6 ? pdPoolsSection(id) : null;
  view.append(...sections, options, v6 ? delegation : effectiveSection(id));
  await Promise.all([mapView.ready, ...sections.map((x) => x.ready), options.ready, delegation?.ready]);
}
