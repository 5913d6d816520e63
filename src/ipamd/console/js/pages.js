// Every page of the console. Each is (view, {params, args}) => fills `view`.
import { call, can, del, get, patch, post, query } from "./api.js";
import { clear, h } from "./dom.js";
import { crudSection } from "./crud.js";
import { dnsRoutes, pickerOf } from "./dns.js";
import { addressMap } from "./map.js";
import { optionLabel, optionLabel6 } from "./optnames.js";
import * as opsPages from "./ops.js";
import {
  badge, bar, confirmDialog, downloadCsv, errorBox, fmtTime, form, link, notice, pagedTable, plural, secretBox, section,
} from "./ui.js";

const pageOf = (path, params) => (cursor) => get(path, { ...params, cursor });
let tenantField = { name: "tenant_id", label: "Tenant id (empty: default tenant)", type: "text", nullable: true };

// Pickers from the first 200 rows of a list; the raw-id text field stays when the list fails.
async function picker(path, field, label, empty, name) {
  try {
    const page = await get(path, { limit: 200 });
    return { name: field, label, type: "select", nullable: true,
      options: [["", empty], ...page.items.map((x) => [x.id, name(x)])] };
  } catch {
    return null;
  }
}
async function loadTenantField() {
  tenantField = (await picker("/tenants", "tenant_id", "Tenant", "default tenant", (t) => t.name)) || tenantField;
}
const code = (text) => h("code", {}, text ?? "");
const dash = (v) => (v === null || v === undefined || v === "" ? "—" : String(v));

// ---- Prefixes → subnets tree ------------------------------------------------------------

const subnetFields = [
  { name: "cidr", label: "CIDR", required: true, placeholder: "10.1.2.0/24" },
  { name: "name", label: "Name" },
  { name: "description", label: "Description" },
  { name: "gateway", label: "Gateway", nullable: true, v4: true },
  { name: "lease_time_seconds", label: "Lease time (seconds)", type: "number" },
  { name: "dhcp_enabled", label: "DHCP enabled", type: "checkbox", default: true },
  { name: "next_server", label: "PXE next server", nullable: true, v4: true },
  { name: "boot_file", label: "PXE boot file", nullable: true, v4: true },
  { name: "ntp_servers", label: "NTP servers (comma separated)", type: "list" },
  { name: "ddns_adapter", label: "DDNS adapter", type: "select", options: ["none", "ad_gsstsig", "bind_tsig", "powerdns_http", "embedded"], default: "none" },
  { name: "ddns_zone", label: "DDNS forward zone", nullable: true },
  { name: "ddns_reverse_zone", label: "DDNS reverse zone", nullable: true },
  { name: "ddns_ttl", label: "DDNS TTL", type: "number", nullable: true },
  { name: "ddns_server_id", label: "DDNS server", nullable: true },
];

// The DDNS server as a picker and the zones with the known zones offered (a zone of an
// external server need not be one of the appliance's: the field stays free text).
let ddnsPickers = {};
async function loadDdnsPickers() {
  const [servers, zones] = await Promise.all([
    pickerOf("/dns-servers", "ddns_server_id", "DDNS server", "none", (x) => `${x.name} (${x.adapter})`),
    pickerOf("/dns-zones", "ddns_zone", "", "", (z) => z.name),
  ]);
  const names = (kind) => (zones?.items || []).filter((z) => z.kind === kind).map((z) => z.name);
  ddnsPickers = {
    ddns_server_id: servers,
    ddns_zone: { suggestions: names("forward") },
    ddns_reverse_zone: { suggestions: names("reverse") },
  };
  return servers;
}
// An IPv6 subnet has no gateway and no PXE fields (docs/api-ipam.md, "IPv6"): the API refuses them.
const isV6 = (cidr) => String(cidr || "").includes(":");
const familyFields = (v6) => subnetFields.filter((f) => !(v6 && f.v4));
const V6_NOTE = "IPv6: no gateway — hosts learn their default routers from Router Advertisements (RFC 4861); "
  + "no PXE next server or boot file — give the boot file URL as DHCPv6 option 59 (RFC 5970) under Options.";
const subnetFormFields = (v6 = false) => familyFields(v6).map((f) => (ddnsPickers[f.name] === null || !ddnsPickers[f.name]
  ? f : ddnsPickers[f.name].type === "select" ? ddnsPickers[f.name] : { ...f, ...ddnsPickers[f.name] }));

function subnetList(prefix) {
  const slot = h("div", { class: "subnets" });
  const table = pagedTable({
    caption: `Subnets of ${prefix.cidr}`,
    columns: [
      { label: "Subnet", value: (s) => link(`#/subnets/${s.id}`, s.cidr) },
      { label: "Name", value: (s) => s.name },
      { label: "DHCP", value: (s) => (s.dhcp_enabled ? "on" : "off") },
      { label: "Utilisation", value: (s) => { const c = h("div"); get(`/subnets/${s.id}/utilisation`).then((u) => c.append(bar(u.percent_used, s.cidr))).catch((e) => c.append(errorBox(e))); return c; } },
    ],
    load: pageOf("/subnets", { prefix_id: prefix.id }),
    empty: "No subnets in this prefix.",
  });
  slot.append(table);
  if (can("operator")) {
    const panel = h("div");
    slot.append(h("button", {
      type: "button", class: "button small",
      onclick: () => {
        clear(panel).append(form({
          title: `New subnet in ${prefix.cidr}`, fields: [...subnetFormFields(isV6(prefix.cidr)), tenantField], submitLabel: "Create subnet",
          onSubmit: async (values) => { const s = await post("/subnets", { ...values, prefix_id: prefix.id }); location.hash = `#/subnets/${s.id}`; },
          onCancel: () => clear(panel),
        }));
        panel.querySelector("input")?.focus();
      },
    }, `New subnet in ${prefix.cidr}`), panel);
  }
  return slot;
}

async function prefixes(view, { params }) {
  view.append(h("h1", {}, "Prefixes and subnets"));
  // Tenants by name: the same CIDR may exist once per tenant, so each row says whose it is.
  const tenantPicker = await pickerOf("/tenants", "tenant_id", "Tenant", "every tenant", (t) => t.name);
  const tenantName = new Map((tenantPicker?.items || []).map((t) => [t.id, t.name]));
  if (can("operator")) await Promise.all([loadTenantField(), loadDdnsPickers()]);
  const tenantFilter = params.get("tenant_id") || "";
  if (tenantPicker) {
    const f = filterForm([tenantPicker], params, "#/prefixes");
    f.classList.add("filters");
    view.append(section("Filter", f));
  }
  const sec = crudSection({
    title: "Prefixes", noun: "prefix",
    fields: [{ name: "cidr", label: "CIDR", required: true, placeholder: "10.0.0.0/8" },
      { name: "description", label: "Description" }, tenantField],
    editFields: [{ name: "cidr", label: "CIDR" }, { name: "description", label: "Description" }],
    describe: (p) => p.cidr,
    columns: [
      { label: "Prefix", value: (p) => {
        const details = h("details", { class: "tree" }, h("summary", {}, h("strong", {}, p.cidr), p.description ? ` — ${p.description}` : ""));
        let loaded = false;
        details.addEventListener("toggle", () => { if (details.open && !loaded) { loaded = true; details.append(subnetList(p)); } });
        return details;
      } },
      { label: "Tenant", value: (p) => tenantName.get(p.tenant_id) || h("code", {}, p.tenant_id) },
      { label: "Utilisation", value: (p) => { const c = h("div"); get(`/prefixes/${p.id}/utilisation`).then((u) => c.append(bar(u.percent_used, p.cidr), h("span", { class: "muted" }, ` ${u.subnets} subnets`))).catch((e) => c.append(errorBox(e))); return c; } },
    ],
    list: pageOf("/prefixes", tenantFilter ? { tenant_id: tenantFilter } : {}),
    create: (v) => post("/prefixes", v),
    update: (p, v) => patch(`/prefixes/${p.id}`, v),
    remove: (p) => del(`/prefixes/${p.id}`),
    impact: async (p) => `It holds ${plural((await get(`/prefixes/${p.id}/utilisation`)).subnets, "subnet")}.`,
  });
  view.append(sec);
  await sec.ready;
}

// ---- Subnet page -------------------------------------------------------------------------

const OPTION_KINDS = [
  ["6", "6 — DNS servers"], ["15", "15 — domain name"], ["42", "42 — NTP servers"],
  ["43", "43 — vendor specific (hex) + vendor class"], ["other", "other code (JSON payload)"],
];

// DHCPv6 options (RFC 8415 numbers): the five the API takes (docs/api-ipam.md, "Options").
const OPTION6_KINDS = ["23", "24", "56", "59", "17"].map((c) => [`v6-${c}`, optionLabel6(c)]);

function optionForm(subnetId, onDone, onCancel, kinds = OPTION_KINDS) {
  const slot = h("div");
  const kindId = "opt-kind";
  const kind = h("select", { id: kindId }, kinds.map(([v, l]) => h("option", { value: v }, l)));
  function build() {
    const k = kind.value;
    let fields;
    let toBody;
    if (k === "v6-23" || k === "v6-56") {
      fields = [{ name: "addresses", label: k === "v6-23" ? "DNS server IPv6 addresses (comma separated)" : "NTP server IPv6 addresses (comma separated)", type: "list", required: true }];
      toBody = (v) => ({ code: Number(k.slice(3)), payload: { addresses: v.addresses || [] } });
    } else if (k === "v6-24") {
      fields = [{ name: "domains", label: "Search domains (comma separated)", type: "list", required: true }];
      toBody = (v) => ({ code: 24, payload: { domains: v.domains || [] } });
    } else if (k === "v6-59") {
      fields = [{ name: "url", label: "Boot file URL", required: true, placeholder: "tftp://[2001:db8::69]/boot.efi" }];
      toBody = (v) => ({ code: 59, payload: { url: v.url ?? "" } });
    } else if (k === "v6-17") {
      fields = [{ name: "payload", label: "Payload (JSON)", type: "json", required: true, help: '{"enterprise": 4491, "suboptions": [{"code": 1, "hex": "01:02"}]}' }];
      toBody = (v) => ({ code: 17, payload: v.payload ?? {} });
    } else if (k === "6" || k === "42") {
      fields = [{ name: "addresses", label: k === "6" ? "DNS server addresses (comma separated)" : "NTP server addresses (comma separated)", type: "list", required: true }];
      toBody = (v) => ({ code: Number(k), payload: { addresses: v.addresses || [] } });
    } else if (k === "15") {
      fields = [{ name: "value", label: "Domain name", required: true }];
      toBody = (v) => ({ code: 15, payload: { value: v.value ?? "" } });
    } else if (k === "43") {
      fields = [{ name: "hex", label: "Vendor data (hex octets)", required: true, placeholder: "01:04:c0:a8:00:01" },
        { name: "vendor_class", label: "Vendor class (option 60) it applies to", nullable: true }];
      toBody = (v) => ({ code: 43, payload: { hex: v.hex ?? "" }, vendor_class: v.vendor_class ?? null });
    } else {
      fields = [{ name: "code", label: "Option code", type: "number", required: true },
        { name: "payload", label: "Payload (JSON)", type: "json", required: true, help: '{"addresses": [...]}, {"value": ...}, {"domains": [...]}, {"routes": [...]} or {"hex": "..."}' },
        { name: "vendor_class", label: "Vendor class", nullable: true }];
      toBody = (v) => ({ code: v.code, payload: v.payload ?? {}, vendor_class: v.vendor_class ?? null });
    }
    clear(slot).append(form({
      fields, submitLabel: "Add option", onCancel,
      onSubmit: async (v) => {
        try { await post(`/subnets/${subnetId}/options`, toBody(v)); }
        catch (error) {
          // The API names the payload; this form shows the payload as its first field.
          if (error.status === 422 && k !== "other" && k !== "v6-17") {
            error.message = error.message.replace(/(^|; )payload(\.\w+)?:/g, `$1${fields[0].name}:`);
          }
          throw error;
        }
        await onDone();
      },
    }));
  }
  kind.addEventListener("change", build);
  build();
  return h("div", { class: "form" }, h("h3", {}, "New option"), h("div", { class: "field" }, h("label", { for: kindId }, "Option"), kind), slot);
}

function payloadText(o) {
  const p = o.payload || {};
  if (p.addresses) return p.addresses.join(", ");
  if (p.domains) return p.domains.join(", ");
  if (p.routes) return p.routes.map((r) => `${r.destination} via ${r.router}`).join(", ");
  if (p.hex !== undefined) return p.hex;
  if (p.value !== undefined) return String(p.value);
  if (p.url !== undefined) return p.url;
  return JSON.stringify(p);
}

// What a delete takes with it, said in its confirmation (issue 55).
async function poolImpact(pool) {
  const u = await get(`/pools/${pool.id}/utilisation`);
  return `It holds ${plural(u.leased, "live lease")} and ${plural(u.reserved, "reservation")} in ${pool.start_ip} – ${pool.end_ip}; `
    + "no new lease is offered from this range once it is deleted.";
}
async function subnetImpact(id) {
  const u = await get(`/subnets/${id}/utilisation`);
  return `It holds ${plural(u.leased, "live lease")}, ${plural(u.reserved, "reservation")} and ${plural(u.assigned, "assignment")}.`;
}
async function reservationImpact(r) {
  if (!r.ip) return null;
  const counts = await Promise.all(["active", "offered"].map((state) => get("/leases/count", { ip: r.ip, state })));
  const live = counts.reduce((a, c) => a + c.count, 0);
  return live ? `${r.ip} is leased now (${plural(live, "live lease")}); the lease stays until it ends.` : `${r.ip} has no live lease.`;
}

// An IPv6 subnet's reservations: a DHCPv6 client is known by its DUID (RFC 8415 §11); no MAC
// or client id is offered (docs/api-ipam.md, "IPv6").
const RESERVATION6 = [
  [{ label: "IP", value: (r) => r.ip }, { label: "DUID", value: (r) => code(r.duid) }, { label: "Hostname", value: (r) => dash(r.hostname) }],
  [{ name: "ip", label: "IP (empty: next free)", nullable: true }, { name: "duid", label: "DUID", required: true, placeholder: "00:03:00:01:aa:bb:cc:dd:ee:ff" }, { name: "hostname", label: "Hostname", nullable: true }],
  [{ name: "ip", label: "IP" }, { name: "duid", label: "DUID" }, { name: "hostname", label: "Hostname", nullable: true }],
];

// An IPv6 subnet is never drawn address by address: its ranges (exact decimal sizes are the
// API's strings, shown as they come) and the held addresses, a page at a time, in address order.
function addressList6(subnetId) {
  const el = h("div");
  let at = null;
  const load = async (cursor) => {
    const data = await get(`/subnets/${subnetId}/history`, { ...(at ? { at } : {}), ...(cursor ? { cursor } : {}) });
    at = data.at;  // one moment for every page (docs/history.md)
    const cols = data.addresses.columns;
    return { items: data.addresses.rows.map((r) => Object.fromEntries(cols.map((c, i) => [c, r[i]]))), next_cursor: data.next_cursor };
  };
  let table = null;
  const refresh = () => {
    at = null;
    table = pagedTable({
      caption: "Held addresses", load, empty: "No address is leased, reserved or assigned.",
      columns: [{ label: "IP", value: (a) => link(`#/history?ip=${a.ip}`, a.ip) }, { label: "State", value: (a) => badge(a.state) },
        { label: "Hostname", value: (a) => dash(a.hostname) }],
    });
    clear(el).append(h("p", { class: "muted" }, "An IPv6 subnet is listed by its held addresses rather than drawn."), table);
    return table.ready;
  };
  el.ready = refresh();
  el.refresh = refresh;
  return el;
}

// Delegation pools (DHCPv6 IA_PD, RFC 8415 §6.3) and, per pool, its reservations by DUID.
function pdPoolsSection(subnetId) {
  const reservations = (pool) => crudSection({
    title: `Reserved prefixes of ${pool.name}`, noun: "delegated prefix reservation",
    columns: [{ label: "Prefix", value: (r) => r.prefix }, { label: "DUID", value: (r) => code(r.duid) }, { label: "Hostname", value: (r) => dash(r.hostname) }],
    fields: [{ name: "prefix", label: `Delegated prefix (a /${pool.delegated_length})`, required: true },
      { name: "duid", label: "DUID of the requesting router", required: true }, { name: "hostname", label: "Hostname", nullable: true }],
    list: pageOf(`/pd-pools/${pool.id}/reservations`),
    create: (v) => post(`/pd-pools/${pool.id}/reservations`, v),
    remove: (r) => del(`/pd-reservations/${r.id}`),
    describe: (r) => r.prefix,
  });
  const sec = crudSection({
    title: "Delegation pools", noun: "delegation pool",
    columns: [{ label: "Name", value: (p) => p.name }, { label: "Prefix", value: (p) => p.prefix },
      { label: "Delegated length", value: (p) => `/${p.delegated_length}` }, { label: "Delegated prefixes", value: (p) => String(p.size) },
      { label: "Reservations", value: (p) => {
        const details = h("details", { class: "tree" }, h("summary", {}, `Reservations of ${p.name}`));
        let loaded = false;
        details.addEventListener("toggle", () => { if (details.open && !loaded) { loaded = true; details.append(reservations(p)); } });
        return details;
      } }],
    fields: [{ name: "name", label: "Name", required: true }, { name: "prefix", label: "Prefix", required: true, placeholder: "2001:db8:100::/40" },
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

async function subnetPage(view, { args }) {
  const [id] = args;
  const s = await get(`/subnets/${id}`);
  view.append(h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, link("#/prefixes", "Prefixes"), " / ", s.cidr),
    h("h1", {}, `Subnet ${s.cidr}`, s.name ? ` — ${s.name}` : ""));
  const top = h("div", { class: "cards" });
  view.append(top);

  const fields = section("Settings");
  const servers = await loadDdnsPickers();
  const serverName = new Map((servers?.items || []).map((x) => [x.id, x.name]));
  const shownValue = (f) => (f.name === "ddns_server_id" && serverName.has(s[f.name])
    ? link("#/dns", serverName.get(s[f.name])) : Array.isArray(s[f.name]) ? dash(s[f.name].join(", "))
      : typeof s[f.name] === "boolean" ? (s[f.name] ? "yes" : "no") : dash(s[f.name]));
  const v6 = isV6(s.cidr);
  if (v6) fields.append(h("p", { class: "muted", "data-testid": "v6-note" }, V6_NOTE));
  const dl = h("dl", { class: "kv" }, familyFields(v6).map((f) => [h("dt", {}, f.label), h("dd", {}, shownValue(f))]));
  fields.append(dl);
  if (can("operator")) {
    const panel = h("div");
    fields.append(h("div", { class: "row" },
      h("button", { type: "button", class: "button small", onclick: () => {
        clear(panel).append(form({ title: "Edit subnet", fields: subnetFormFields(v6), initial: s,
          onSubmit: async (v) => { await patch(`/subnets/${id}`, v); window.dispatchEvent(new HashChangeEvent("hashchange")); },
          onCancel: () => clear(panel) }));
        panel.querySelector("input")?.focus();
      } }, "Edit subnet"),
      h("button", { type: "button", class: "button small danger", onclick: async () => {
        if (!(await confirmDialog(`Delete subnet ${s.cidr}?`, "Delete", await subnetImpact(id)))) return;
        try { await del(`/subnets/${id}`); location.hash = "#/prefixes"; } catch (e) { clear(panel).append(errorBox(e)); }
      } }, "Delete subnet")), panel);
  }
  const usage = section("Utilisation");
  const nextFree = h("output", { "data-testid": "next-free" });
  usage.append(h("p", {}, link(`#/leases?subnet_id=${id}`, "Leases in this subnet"), " · ",
    link(`#/audit?object_id=${id}`, "Audit of this subnet")));
  usage.append(h("button", { type: "button", class: "button small", onclick: async () => {
    try { const r = await get(`/subnets/${id}/next-free-ip`); nextFree.textContent = r.ip ?? "none free"; }
    catch (e) { nextFree.textContent = e.message; }
  } }, "Next free IP"), " ", nextFree);
  const usageSlot = h("div");
  usage.querySelector("h2").after(usageSlot);
  const refreshUsage = () => get(`/subnets/${id}/utilisation`).then((u) => clear(usageSlot).append(bar(u.percent_used, s.cidr),
    h("dl", { class: "stats" }, ["size", "used", "free", "leased", "reserved", "assigned", "excluded"].map((k) => [h("dt", {}, k), h("dd", {}, String(u[k]))])))).catch((e) => clear(usageSlot).append(errorBox(e)));
  refreshUsage();
  top.append(fields, usage);

  const map = section("Address map");
  const mapView = v6 ? addressList6(id) : addressMap(id, s);
  map.append(mapView);
  view.append(map);

  const classField = (await picker("/client-classes", "class_id", "Client class", "any client", (c) => `${c.name} (${c.match} ${c.value})`))
    || { name: "class_id", label: "Client class id", nullable: true };
  const className = new Map((classField.options || []).slice(1));
  const changed = () => { mapView.refresh(); refreshUsage(); };
  const child = (title, noun, path, itemPath, columns, createFields, editFields, impact) => crudSection({
    title, noun, columns, fields: createFields, editFields, impact, onChange: changed, bulk: true,
    list: pageOf(`/subnets/${id}/${path}`),
    create: (v) => post(`/subnets/${id}/${path}`, v),
    update: (row, v) => patch(`/${itemPath}/${row.id}`, v),
    remove: (row) => del(`/${itemPath}/${row.id}`),
    describe: (row) => row.name || row.ip || (row.start_ip ? `${row.start_ip}–${row.end_ip}` : row.code ?? row.id),
  });
  const sections = [
    child("Pools", "pool", "pools", "pools",
      [{ label: "Name", value: (p) => p.name }, { label: "Range", value: (p) => `${p.start_ip} – ${p.end_ip}` }, { label: "Size", value: (p) => String(p.size) }, { label: "Client class", value: (p) => (p.class_id ? className.get(p.class_id) || p.class_id : "any") }],
      [{ name: "name", label: "Name", required: true }, { name: "start_ip", label: "First address", required: true }, { name: "end_ip", label: "Last address", required: true }, classField],
      undefined, poolImpact),
    child("Excludes", "exclude", "excludes", "excludes",
      [{ label: "Range", value: (x) => `${x.start_ip} – ${x.end_ip}` }, { label: "Size", value: (x) => String(x.size) }],
      [{ name: "start_ip", label: "First address", required: true }, { name: "end_ip", label: "Last address", required: true }]),
    v6 ? child("Reservations", "reservation", "reservations", "reservations", ...RESERVATION6, reservationImpact)
      : child("Reservations", "reservation", "reservations", "reservations",
        [{ label: "IP", value: (r) => r.ip }, { label: "MAC", value: (r) => dash(r.mac) }, { label: "Client id / DUID", value: (r) => dash(r.client_id || r.duid) }, { label: "Hostname", value: (r) => dash(r.hostname) }],
        [{ name: "ip", label: "IP (empty: next free)", nullable: true }, { name: "mac", label: "MAC", nullable: true }, { name: "client_id", label: "Client id", nullable: true }, { name: "duid", label: "DUID", nullable: true }, { name: "hostname", label: "Hostname", nullable: true }],
        [{ name: "ip", label: "IP" }, { name: "mac", label: "MAC", nullable: true }, { name: "client_id", label: "Client id", nullable: true }, { name: "duid", label: "DUID", nullable: true }, { name: "hostname", label: "Hostname", nullable: true }],
        reservationImpact),
    child("Assignments", "assignment", "assignments", "assignments",
      [{ label: "IP", value: (a) => a.ip }, { label: "Hostname", value: (a) => a.hostname }, { label: "Description", value: (a) => a.description }],
      [{ name: "ip", label: "IP (empty: next free)", nullable: true }, { name: "hostname", label: "Hostname", required: true }, { name: "description", label: "Description" }],
      [{ name: "ip", label: "IP" }, { name: "hostname", label: "Hostname" }, { name: "description", label: "Description" }]),
  ];
  const options = crudSection({
    title: "Options", noun: "option",
    columns: v6 ? [{ label: "Option", value: (o) => optionLabel6(o.code) }, { label: "Value", value: payloadText }]
      : [{ label: "Option", value: (o) => optionLabel(o.code) }, { label: "Value", value: payloadText }, { label: "Vendor class", value: (o) => dash(o.vendor_class) }],
    fields: [],
    editFields: v6 ? [{ name: "payload", label: "Payload (JSON)", type: "json" }]
      : [{ name: "payload", label: "Payload (JSON)", type: "json" }, { name: "vendor_class", label: "Vendor class", nullable: true }],
    list: pageOf(`/subnets/${id}/options`),
    update: (o, v) => patch(`/options/${o.id}`, v),
    remove: (o) => del(`/options/${o.id}`),
    describe: (o) => (v6 ? optionLabel6(o.code) : optionLabel(o.code)),
  });
  if (can("operator")) {
    const slot = options.querySelector(".panel");
    options.querySelector("h2").after(h("div", { class: "section-tools" }, h("button", { type: "button", class: "button primary small", onclick: () => {
      clear(slot).append(optionForm(id, async () => { await options.reload("option created."); }, () => clear(slot), v6 ? OPTION6_KINDS : OPTION_KINDS));
      slot.querySelector("select")?.focus();
    } }, "New option")));
  }
  const delegation = v6 ? pdPoolsSection(id) : null;
  view.append(...sections, options, ...(delegation ? [delegation] : []));
  await Promise.all([mapView.ready, ...sections.map((x) => x.ready), options.ready, delegation?.ready]);
}

// ---- Leases ------------------------------------------------------------------------------

// New filters keep the page's sort (it is in its link too).
function filterForm(fields, params, target, keep = ["sort"]) {
  const kept = Object.fromEntries(keep.filter((k) => params.get(k)).map((k) => [k, params.get(k)]));
  return form({
    fields: fields.map((f) => ({ ...f, value: params.get(f.name) ?? f.value })), submitLabel: "Apply filters",
    onSubmit: async (values) => { location.hash = `${target}${query({ ...values, ...kept })}`; },
  });
}

// Sort and filters live in the page's link: a header click changes the link (#/leases?sort=-ip).
function sortTo(target, params) {
  return (sort) => {
    const q = Object.fromEntries(params);
    delete q.cursor;
    location.hash = `${target}${query({ ...q, sort })}`;
  };
}

async function leases(view, { params }) {
  view.append(h("h1", {}, "Leases"));
  // The subnet filter lists the first 200 subnets; a deep link to any other still works.
  let subnetFilter = { name: "subnet_id", label: "Subnet id" };
  const cidrOf = new Map();
  try {
    const page = await get("/subnets", { limit: 200 });
    for (const x of page.items) cidrOf.set(x.id, x.cidr);
    const options = [["", "any"], ...page.items.map((x) => [x.id, x.name ? `${x.cidr} ${x.name}` : x.cidr])];
    const wanted = params.get("subnet_id");
    if (!wanted || options.some(([v]) => v === wanted)) subnetFilter = { name: "subnet_id", label: "Subnet", type: "select", options };
  } catch { /* the text field stays */ }
  const filters = [
    subnetFilter,
    { name: "state", label: "State", type: "select", options: [["", "any"], "offered", "active", "released", "expired", "declined"] },
    { name: "ip", label: "IP" }, { name: "mac", label: "MAC" }, { name: "hostname", label: "Hostname" },
  ];
  const f = filterForm(filters, params, "#/leases");
  f.classList.add("filters");
  const message = h("div");
  const filter = Object.fromEntries([...params].filter(([k]) => filters.some((x) => x.name === k)));
  const sort = params.get("sort") || "";
  // limit (page size) is honoured from the link too: #/leases?limit=100
  const p = { ...filter, ...(sort ? { sort } : {}), ...(params.get("limit") ? { limit: params.get("limit") } : {}) };
  const live = (l) => ["active", "offered"].includes(l.state);
  const tools = h("div", { class: "row table-tools" });
  const releaseSelected = h("button", { type: "button", class: "button small danger", disabled: true, onclick: async () => {
    const rows = table.selected().filter(live);
    if (!rows.length) return;
    const names = rows.slice(0, 5).map((l) => l.ip).join(", ") + (rows.length > 5 ? `, and ${rows.length - 5} more` : "");
    if (!(await confirmDialog(`Force release of ${rows.length} ${rows.length === 1 ? "lease" : "leases"} (${names})? Their clients lose their addresses.`, `Release ${rows.length}`))) return;
    try {
      const done = await post("/leases/release", { lease_ids: rows.map((l) => l.lease_id) });
      for (const l of done.released) {
        const tr = view.querySelector(`tr[data-lease="${l.lease_id}"]`);
        if (!tr) continue;
        tr.querySelector(".badge").replaceWith(badge("released"));
        const box = tr.querySelector("input.row-select");
        if (box) { box.checked = false; box.disabled = true; box.dispatchEvent(new Event("change")); }
        tr.querySelector("button.danger")?.remove();
      }
      const skipped = done.skipped.length ? ` ${done.skipped.length} skipped: ${done.skipped.map((x) => x.reason).join("; ")}` : "";
      clear(message).append(notice(`Released ${done.released.length} ${done.released.length === 1 ? "lease" : "leases"}.${skipped}`));
    } catch (error) { clear(message).append(errorBox(error)); }
  } }, "Release selected");
  const columns = [
    { label: "IP", sort: "ip", value: (l) => link(`#/history?ip=${l.ip}`, l.ip), csv: (l) => l.ip },
    { label: "State", sort: "state", value: (l) => badge(l.state), csv: (l) => l.state },
    { label: "MAC", sort: "mac", value: (l) => dash(l.mac), csv: (l) => l.mac },
    // A DHCPv6 binding's identity and IA (docs/dhcpv6.md); a DHCPv4 lease has none of them.
    { label: "DUID", value: (l) => (l.duid ? code(l.duid) : "—"), csv: (l) => l.duid },
    { label: "IAID", value: (l) => dash(l.iaid), csv: (l) => l.iaid },
    { label: "IA type", value: (l) => dash(l.ia_type), csv: (l) => l.ia_type },
    { label: "Prefix length", value: (l) => (l.prefix_length == null ? "—" : `/${l.prefix_length}`), csv: (l) => l.prefix_length },
    { label: "Hostname", sort: "hostname", value: (l) => dash(l.hostname), csv: (l) => l.hostname },
    { label: "Subnet", value: (l) => link(`#/subnets/${l.subnet_id}`, cidrOf.get(l.subnet_id) || "subnet"), csv: (l) => cidrOf.get(l.subnet_id) || l.subnet_id },
    { label: "Expires", sort: "expires_at", value: (l) => fmtTime(l.expires_at), csv: (l) => l.expires_at },
  ];
  const table = pagedTable({
    rowProps: (l) => ({ dataset: { lease: l.lease_id } }),
    columns: [...columns,
      ...(can("operator") ? [{ label: "Actions", value: (l) => (live(l) ? h("button", {
        type: "button", class: "button small danger", "aria-label": `Release ${l.ip}`,
        onclick: async (e) => {
          if (!(await confirmDialog(`Force release of ${l.ip}${l.hostname ? ` (${l.hostname})` : ""}? The client loses its address.`, "Release"))) return;
          try {
            await post(`/leases/${l.lease_id}/release`);
            const tr = e.target.closest("tr");
            tr.querySelector(".badge").replaceWith(badge("released"));
            const box = tr.querySelector("input.row-select");
            if (box) { box.checked = false; box.disabled = true; box.dispatchEvent(new Event("change")); }
            e.target.remove();
            clear(message).append(notice(`Released ${l.ip}.`));
          } catch (error) { clear(message).append(errorBox(error)); }
        },
      }, "Release") : "") }] : [])],
    load: pageOf("/leases", p),
    sort, onSort: sortTo("#/leases", params),
    total: async () => (await get("/leases/count", filter)).count,
    select: can("operator") ? {
      enabled: live, label: (l) => l.ip,
      onChange: (rows) => {
        const n = rows.filter(live).length;
        releaseSelected.disabled = n === 0;
        releaseSelected.textContent = n ? `Release selected (${n})` : "Release selected";
      },
    } : undefined,
    empty: "No lease matches.",
  });
  tools.append(h("button", { type: "button", class: "button small", onclick: async (e) => {
    e.target.disabled = true;
    try {
      const n = await downloadCsv("leases.csv", columns, (cursor, limit) => get("/leases", { ...filter, ...(sort ? { sort } : {}), cursor, limit }));
      clear(message).append(notice(`Exported ${n} ${n === 1 ? "lease" : "leases"} as CSV.`));
    } catch (error) { clear(message).append(errorBox(error)); }
    finally { e.target.disabled = false; }
  } }, "Export CSV"), can("operator") ? releaseSelected : null);
  view.append(section("Filters", f), message, tools, table);
  await table.ready;
}

// ---- Search ------------------------------------------------------------------------------

const HIT_LINK = {
  subnet: (o) => `#/subnets/${o.id}`, prefix: () => "#/prefixes",
  lease: (o) => `#/leases?ip=${encodeURIComponent(o.ip)}`,
  reservation: (o) => `#/subnets/${o.subnet_id}`, assignment: (o) => `#/subnets/${o.subnet_id}`,
};

async function search(view, { params }) {
  const q = params.get("q") || "";
  const box = document.getElementById("search");
  if (box && !box.value) box.value = q;
  view.append(h("h1", {}, "Search"), h("p", {}, "Results for ", code(q)));
  const table = pagedTable({
    columns: [
      { label: "Type", value: (r) => badge(r.type, "type") },
      { label: "Match", value: (r) => { const to = HIT_LINK[r.type]; return to ? link(to(r.object), r.summary) : r.summary; } },
      { label: "Matched on", value: (r) => r.match },
    ],
    load: pageOf("/search", { q }), empty: "Nothing matches.",
  });
  view.append(table);
  await table.ready;
}

// ---- History -----------------------------------------------------------------------------

async function history(view, { params }) {
  const tz = params.get("tz") || Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  view.append(h("h1", {}, "History"), h("p", { class: "muted" }, "Who held an address, or what a client held, at a moment or over a range."));
  const kinds = [["ip", "IP address"], ["mac", "MAC"], ["hostname", "Hostname"], ["client_id", "Client id"], ["duid", "DUID"], ["circuit", "Circuit id (option 82)"], ["remote", "Remote id (option 82)"]];
  const kind = kinds.find(([k]) => params.get(k)) || kinds[0];
  const f = form({
    fields: [
      { name: "kind", label: "Identity", type: "select", options: kinds, value: kind[0] },
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
  view.append(section("Query", f));
  const q = {};
  for (const k of [...kinds.map(([x]) => x), "at", "from", "to"]) if (params.get(k)) q[k] = params.get(k);
  if (!kinds.some(([k]) => q[k])) return;
  q.tz = tz;
  // Subnets by CIDR (the first 1000; any other keeps the word "subnet" as its link).
  const cidrOf = new Map();
  try { for (const x of (await get("/subnets", { limit: 1000 })).items) cidrOf.set(x.id, x.cidr); } catch { /* links stay */ }
  const result = h("div");
  const download = h("button", { type: "button", class: "button", onclick: async () => {
    try {
      // No limit: the API streams the whole answer as one CSV.
      const response = await call("GET", `/history${query({ ...q, format: "csv" })}`, undefined, { raw: true });
      const blob = await response.blob();
      const url = URL.createObjectURL(blob);
      const a = h("a", { href: url, download: "history.csv", hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) { result.prepend(errorBox(e)); }
  } }, "Download CSV");
  const table = pagedTable({
    columns: ["ip", "mac", "hostname", "client_id", "circuit_id", "remote_id", "giaddr"].map((c) => ({ label: c, value: (r) => dash(r[c]) }))
      .concat([{ label: "from", value: (r) => fmtTime(r.from) }, { label: "to", value: (r) => (r.to ? fmtTime(r.to) : "holding") },
        { label: "state", value: (r) => badge(r.state) }, { label: "subnet", value: (r) => link(`#/subnets/${r.subnet_id}`, cidrOf.get(r.subnet_id) || "subnet") }]),
    load: pageOf("/history", q), empty: "No occupancy matches.",
  });
  result.append(h("div", { class: "row" }, download), table);
  view.append(section("Results", result));
  await table.ready;
}

// ---- Work (outbox) -----------------------------------------------------------------------

const target = (r) => r.target || (r.webhook_id ? `webhook ${r.webhook_name || `${r.webhook_id} (deleted)`}` : "—");
const KINDS = [["webhook", "Webhooks", "webhook"], ["dns", "DNS", "DNS"], ["alert", "Alerts", "alert"]];

// The badge and the row's state class follow the row's state (a replayed row is no longer red).
function showState(tr, state) {
  tr.querySelector(".badge").replaceWith(badge(state));
  tr.dataset.state = state;
}

async function replayAll(kind, noun, replayable, slot) {
  const many = replayable === 1 ? `1 failed ${noun} delivery` : `${replayable} failed ${noun} deliveries`;
  if (!(await confirmDialog(`Replay ${many}? Each is queued again with a fresh attempt budget.`, `Replay ${replayable}`))) return;
  let replayed = 0;
  try {
    // The API takes a batch per call and says when more remain; bounded, as a row count is.
    for (let round = 0; round < 1000; round += 1) {
      const r = await post(`/outbox/replay${query({ kind, state: "failed" })}`);
      replayed += r.replayed;
      if (!r.more || r.replayed === 0) break;
    }
  } catch (error) { clear(slot).append(errorBox(error)); return; }
  sessionStorage.setItem("ipamd.work.notice", `Queued ${replayed} ${replayed === 1 ? "delivery" : "deliveries"} for delivery again.`);
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}

async function work(view, { params }) {
  const kind = params.get("kind") || "webhook";
  const state = params.get("state") || "";
  const noun = (KINDS.find(([k]) => k === kind) || KINDS[0])[2];
  view.append(h("h1", {}, "Work"));
  const tabs = h("div", { class: "tabs", role: "tablist", "aria-label": "Work kind" }, KINDS.map(([k, label]) =>
    h("a", { role: "tab", "aria-selected": String(k === kind), href: `#/work${query({ kind: k, state })}`, class: k === kind ? "tab active" : "tab" }, label)));
  const states = h("div", { class: "chips", role: "group", "aria-label": "State" }, ["", "pending", "retrying", "failed", "delivered"].map((s) =>
    h("a", { href: `#/work${query({ kind, state: s })}`, class: s === state ? "chip active" : "chip", "aria-current": s === state ? "true" : null }, s || "all")));
  const detail = h("div", { class: "panel" });
  const said = sessionStorage.getItem("ipamd.work.notice");
  if (said) { sessionStorage.removeItem("ipamd.work.notice"); detail.append(notice(said)); }
  const summary = h("div", { class: "row table-tools" });
  const table = pagedTable({
    rowProps: (r) => ({ dataset: { state: r.state } }),
    columns: [
      { label: "Created", value: (r) => fmtTime(r.created_at) }, { label: "Topic", value: (r) => r.topic },
      { label: "Target", value: target }, { label: "State", value: (r) => badge(r.state) },
      { label: "Attempts", value: (r) => String(r.attempts) },
      { label: "Last result", value: (r) => dash(r.last_error || r.last_status) },
      { label: "Actions", value: (r) => h("div", { class: "row-actions" },
        h("button", { type: "button", class: "button small", onclick: () => showAttempts(r.id, detail) }, "Attempts"),
        can("operator") && r.replayable ? h("button", { type: "button", class: "button small", "aria-label": `Replay ${r.topic} ${r.id}`, onclick: async (e) => {
          if (!(await confirmDialog(`Replay this ${r.topic} delivery to ${target(r)}?`, "Replay"))) return;
          try {
            const fresh = await post(`/outbox/${r.id}/replay`);
            showState(e.target.closest("tr"), fresh.state || "pending");
            e.target.remove();
            clear(detail).append(notice("Queued for delivery again."));
          } catch (error) { clear(detail).append(errorBox(error)); }
        } }, "Replay") : null) },
    ],
    load: pageOf("/outbox", { kind, state }), empty: "No deliveries.",
  });
  const csvColumns = [["Created", (r) => r.created_at], ["Kind", (r) => r.kind], ["Topic", (r) => r.topic],
    ["Target", target], ["State", (r) => r.state], ["Attempts", (r) => r.attempts],
    ["Last result", (r) => r.last_error || r.last_status], ["Delivered", (r) => r.delivered_at], ["Id", (r) => r.id]]
    .map(([label, csv]) => ({ label, csv }));
  summary.append(h("button", { type: "button", class: "button small", onclick: async (e) => {
    e.target.disabled = true;
    try {
      const n = await downloadCsv(`work-${kind}.csv`, csvColumns, (cursor, limit) => get("/outbox", { kind, state, cursor, limit }));
      clear(detail).append(notice(`Exported ${n} ${n === 1 ? "delivery" : "deliveries"} as CSV.`));
    } catch (error) { clear(detail).append(errorBox(error)); }
    finally { e.target.disabled = false; }
  } }, "Export CSV"));
  view.append(tabs, states, summary, detail, table);
  try {
    const n = await get("/outbox/count", { kind, state });
    summary.append(h("span", { "data-testid": "work-count" }, `${n.count} ${n.count === 1 ? "delivery" : "deliveries"}`));
    if (can("operator") && n.replayable > 0 && (state === "" || state === "failed")) {
      summary.append(h("button", { type: "button", class: "button small danger",
        onclick: () => replayAll(kind, noun, n.replayable, detail) }, `Replay all failed (${n.replayable})`));
    }
  } catch (error) { summary.append(errorBox(error)); }
  await table.ready;
}

async function showAttempts(id, slot) {
  clear(slot);
  try {
    const d = await get(`/outbox/${id}`);
    slot.append(section(`Attempts of ${d.topic} → ${target(d)}`, h("table", { class: "table" },
      h("thead", {}, h("tr", {}, ["#", "At", "Duration", "Status", "Error", "Response"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, (d.history || []).map((a) => h("tr", {}, h("td", {}, String(a.attempt)), h("td", {}, fmtTime(a.at)),
        h("td", {}, `${a.duration_ms} ms`), h("td", {}, dash(a.status)), h("td", {}, dash(a.error)), h("td", {}, h("code", {}, dash(a.response))))))),
      (d.history || []).length ? null : h("p", { class: "muted" }, "Not attempted yet.")));
  } catch (e) { slot.append(errorBox(e)); }
}

// ---- Admin and reference pages ----------------------------------------------------------

async function webhooks(view) {
  view.append(h("h1", {}, "Webhooks"));
  const fields = [
    { name: "name", label: "Name", required: true }, { name: "url", label: "URL (https://…)", required: true },
    { name: "secret_ref", label: "Secret reference (env:NAME or file:/path)", required: true },
    { name: "previous_secret_ref", label: "Previous secret reference (rotation)", nullable: true },
    { name: "topics", label: "Topics (e.g. lease.* or *)" }, { name: "enabled", label: "Enabled", type: "checkbox", default: true },
  ];
  const sec = crudSection({ title: "Webhooks", noun: "webhook", role: "admin", fields,
    columns: [{ label: "Name", value: (w) => w.name }, { label: "URL", value: (w) => w.url }, { label: "Topics", value: (w) => w.topics }, { label: "Enabled", value: (w) => (w.enabled ? "yes" : "no") }],
    list: pageOf("/webhooks"), create: (v) => post("/webhooks", v), update: (w, v) => patch(`/webhooks/${w.id}`, v), remove: (w) => del(`/webhooks/${w.id}`) });
  view.append(sec);
  await sec.ready;
}

async function tokensPage(view) {
  view.append(h("h1", {}, "Tokens"));
  const shown = h("div");
  const sec = crudSection({ title: "API tokens", noun: "token", role: "admin",
    fields: [{ name: "name", label: "Name", required: true }, { name: "role", label: "Role", type: "select", options: ["viewer", "operator", "admin"] },
      { name: "expires_at", label: "Expires at (RFC 3339, optional)", nullable: true, placeholder: "2030-01-01T00:00:00Z" }],
    columns: [{ label: "Name", value: (t) => t.name }, { label: "Role", value: (t) => badge(t.role, `role-${t.role}`) }, { label: "Hint", value: (t) => code(t.hint) },
      { label: "Last used", value: (t) => fmtTime(t.last_used_at) || "never" }, { label: "Expires", value: (t) => fmtTime(t.expires_at) || "never" }],
    list: pageOf("/tokens"),
    create: async (v) => { const t = await post("/tokens", v); clear(shown).append(section(`New token ${t.name}`, secretBox("Token secret", t.token))); },
    remove: (t) => del(`/tokens/${t.id}`), removeLabel: "Revoke",
  });
  view.append(shown, sec);
  await sec.ready;
}

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
  return h("details", { class: "diff-all" }, h("summary", {}, `${before ? "deleted" : "created"}: ${rows.length} fields`), table);
}

// Every object type the appliance audits (the filter is a picker: a typo cannot match nothing).
const AUDIT_TYPES = ["alert", "alert_destination", "alert_rules", "assignment", "client_class",
  "dns_record", "dns_server", "dns_zone", "exclude", "lease", "node", "option", "outbox", "pd_exclude",
  "pd_pool", "pd_reservation", "pool", "prefix", "reservation", "settings", "subnet", "tenant",
  "token", "webhook"];
// Where an audited object can be seen: its page, or the page that lists it.
const AUDIT_LINK = {
  subnet: (a) => `#/subnets/${a.object_id}`, prefix: () => "#/prefixes",
  pool: (a, o) => o?.subnet_id && `#/subnets/${o.subnet_id}`, exclude: (a, o) => o?.subnet_id && `#/subnets/${o.subnet_id}`,
  reservation: (a, o) => o?.subnet_id && `#/subnets/${o.subnet_id}`, assignment: (a, o) => o?.subnet_id && `#/subnets/${o.subnet_id}`,
  option: (a, o) => o?.subnet_id && `#/subnets/${o.subnet_id}`, lease: (a, o) => o?.ip && `#/history?ip=${encodeURIComponent(o.ip)}`,
  dns_zone: (a) => `#/dns/zones/${a.object_id}`, dns_record: (a, o) => o?.zone_id && `#/dns/zones/${o.zone_id}`,
  dns_server: () => "#/dns", outbox: () => "#/work", node: (a) => `#/nodes/${a.object_id}`,
  tenant: () => "#/tenants", client_class: () => "#/client-classes", token: () => "#/tokens", webhook: () => "#/webhooks",
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

async function audit(view, { params }) {
  view.append(h("h1", {}, "Audit"));
  const filters = [
    { name: "object_type", label: "Object type", type: "select", options: [["", "any"], ...AUDIT_TYPES] },
    { name: "object_id", label: "Object id" }, { name: "actor", label: "Actor" },
    { name: "action", label: "Action", type: "select", options: [["", "any"], "create", "update", "delete", "release", "replay", "open", "clear"] },
  ];
  const f = filterForm(filters, params, "#/audit");
  f.classList.add("filters");
  const p = Object.fromEntries([...params].filter(([k]) => filters.some((x) => x.name === k)));
  const sort = params.get("sort") || "";
  // Admins may read tokens: show an actor "token:<id>" with the token's name.
  const names = new Map();
  if (can("admin")) {
    try {
      const page = await get("/tokens", { limit: 1000, include_revoked: true });
      for (const t of page.items) names.set(`token:${t.id}`, t.name);
    } catch { /* ids stay as they are */ }
  }
  const actorName = (a) => (names.has(a.actor) ? `${names.get(a.actor)} (token)` : a.actor);
  const actor = (a) => (names.has(a.actor) ? h("span", { title: a.actor }, actorName(a)) : a.actor);
  const object = (a) => {
    const o = a.after || a.before;
    const name = auditName(o);
    const to = AUDIT_LINK[a.object_type]?.(a, o);
    const text = name ? `${a.object_type} ${name}` : `${a.object_type} ${a.object_id || ""}`;
    return h("span", { title: a.object_id || "" }, to ? link(to, text) : text);
  };
  const columns = [
    { label: "At", sort: "at", value: (a) => fmtTime(a.at), csv: (a) => a.at },
    { label: "Actor", sort: "actor", value: actor, csv: actorName },
    { label: "Action", sort: "action", value: (a) => a.action, csv: (a) => a.action },
    { label: "Object", sort: "object_type", value: object, csv: (a) => `${a.object_type} ${auditName(a.after || a.before) || a.object_id || ""}` },
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
  const tools = h("div", { class: "row table-tools" }, h("button", { type: "button", class: "button small", onclick: async (e) => {
    e.target.disabled = true;
    try {
      const n = await downloadCsv("audit.csv", csvColumns, (cursor, limit) => get("/audit", { ...p, ...(sort ? { sort } : {}), cursor, limit }));
      clear(message).append(notice(`Exported ${n} audit ${n === 1 ? "entry" : "entries"} as CSV.`));
    } catch (error) { clear(message).append(errorBox(error)); }
    finally { e.target.disabled = false; }
  } }, "Export CSV"));
  view.append(section("Filters", f), message, tools, table);
  await table.ready;
}

async function clientClasses(view) {
  view.append(h("h1", {}, "Client classes"));
  const fields = [{ name: "name", label: "Name", required: true }, { name: "match", label: "Match on", type: "select", options: ["vendor_class", "user_class", "mac_prefix"] },
    { name: "value", label: "Value", required: true }, { name: "description", label: "Description" }];
  const sec = crudSection({ title: "Client classes", noun: "client class", fields, editFields: fields,
    columns: [{ label: "Name", value: (c) => c.name }, { label: "Match", value: (c) => c.match }, { label: "Value", value: (c) => code(c.value) }, { label: "Description", value: (c) => c.description }],
    list: pageOf("/client-classes"), create: (v) => post("/client-classes", v), update: (c, v) => patch(`/client-classes/${c.id}`, v), remove: (c) => del(`/client-classes/${c.id}`) });
  view.append(sec);
  await sec.ready;
}

async function tenants(view) {
  view.append(h("h1", {}, "Tenants"));
  const fields = [{ name: "name", label: "Name", required: true }, { name: "description", label: "Description" }];
  const sec = crudSection({ title: "Tenants", noun: "tenant", fields,
    columns: [{ label: "Name", value: (t) => t.name }, { label: "Id", value: (t) => code(t.id) }, { label: "Description", value: (t) => t.description }, { label: "Default", value: (t) => (t.default ? "yes" : "") }],
    list: pageOf("/tenants"), create: (v) => post("/tenants", v), update: (t, v) => patch(`/tenants/${t.id}`, v), remove: (t) => del(`/tenants/${t.id}`) });
  view.append(sec);
  await sec.ready;
}

async function settings(view) {
  view.append(h("h1", {}, "Settings"));
  const s = await get("/settings");
  const sec = section("Trusted relays",
    // docs/relays.md: trust goes by the packet's source address, which is usually not giaddr.
    h("p", { "data-testid": "relay-trust" }, "A relayed DHCP packet is served only when its source address (the relay's address towards this appliance) is trusted; ",
      "giaddr (the relay's address on the client's segment, often a different one) only picks the subnet. An untrusted source is dropped without an answer. ",
      "Such drops are counted by reason on each node's page (", link("#/nodes", "Nodes"), "); see docs/relays.md."),
    h("p", { class: "muted" }, "From the configuration file: ", s.trusted_relays_config.length ? s.trusted_relays_config.join(", ") : "none"),
    h("p", {}, "Set here: ", s.trusted_relays.length ? s.trusted_relays.join(", ") : "none", s.updated_at ? ` (updated ${fmtTime(s.updated_at)})` : ""));
  if (can("admin")) {
    sec.append(form({ fields: [{ name: "trusted_relays", label: "Trusted relays (addresses or CIDRs, comma separated)", type: "list",
      help: "The source addresses relays send from, not their giaddr." }],
      initial: { trusted_relays: s.trusted_relays }, submitLabel: "Save relays",
      onSubmit: async (v) => { await patch("/settings", { trusted_relays: v.trusted_relays ?? [] }); window.dispatchEvent(new HashChangeEvent("hashchange")); } }));
  }
  view.append(sec);
}

async function licensePage(view) {
  view.append(h("h1", {}, "License"));
  const l = await get("/license");
  view.append(section(`Tier: ${l.tier}`, bar(l.max_managed_ips ? (100 * l.managed_ips) / l.max_managed_ips : 0, "license"),
    h("dl", { class: "kv" }, [["Managed IPs", l.managed_ips], ["Limit", l.max_managed_ips], ["Reservations", l.reservations], ["Assignments", l.assignments], ["Available", l.available]]
      .map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))]))));
}

// A pool has no page of its own: its subnet's page shows it (alerts link here).
async function poolPage(view, { args }) {
  const pool = await get(`/pools/${args[0]}`);
  location.replace(`#/subnets/${pool.subnet_id}`);
}

export const routes = [
  [/^\/pools\/([0-9a-f-]{36})$/, poolPage],
  [/^\/$/, opsPages.dashboard],  // one GET /dashboard (issue 14)
  [/^\/nodes$/, opsPages.nodes],
  [/^\/nodes\/([0-9a-f-]{36})$/, opsPages.nodePage],
  [/^\/alerts$/, opsPages.alertsPage],
  [/^\/alert-destinations$/, opsPages.alertDestinations],
  [/^\/prefixes$/, prefixes],
  [/^\/subnets\/([0-9a-f-]{36})$/, subnetPage],
  [/^\/leases$/, leases],
  [/^\/search$/, search],
  [/^\/history$/, history],
  [/^\/work$/, work],
  [/^\/webhooks$/, webhooks],
  [/^\/tokens$/, tokensPage],
  [/^\/audit$/, audit],
  [/^\/client-classes$/, clientClasses],
  [/^\/tenants$/, tenants],
  [/^\/settings$/, settings],
  [/^\/license$/, licensePage],
  ...dnsRoutes,
];
