// DNS: servers (admin writes) and zones; Work → DNS from each.
// Secret locations (secret_ref, keytab_path) come from the API already redacted for other
// roles (docs/security.md: the one rule for secrets); the console shows what it is given.
import { del, get, patch, post } from "../api.js";
import { h } from "../dom.js";
import { link, plural } from "../ui.js";
import { crudSection } from "../crud.js";
import { dash, pageOf, pickerOf } from "../lists.js";

export const workLink = (label) => link("#/work?kind=dns", label);

const ADAPTERS = [["embedded", "embedded (this appliance answers)"], ["bind_tsig", "bind_tsig (RFC 2136 + TSIG)"],
  ["powerdns_http", "powerdns_http (PowerDNS API)"], ["ad_gsstsig", "ad_gsstsig (Active Directory, GSS-TSIG)"]];
const ALGORITHMS = ["hmac-sha256", "hmac-sha384", "hmac-sha512", "hmac-sha224", "hmac-sha1"];
const serverFields = [
  { name: "name", label: "Name", required: true },
  { name: "adapter", label: "Adapter", type: "select", options: ADAPTERS },
  { name: "address", label: "Address (bind_tsig)", nullable: true },
  { name: "port", label: "Port (bind_tsig)", type: "number" },
  { name: "tsig_key_name", label: "TSIG key name (bind_tsig)", nullable: true },
  { name: "tsig_algorithm", label: "TSIG algorithm", type: "select", options: ALGORITHMS },
  { name: "api_url", label: "API URL (powerdns_http)", nullable: true, placeholder: "https://pdns.example/api/v1" },
  { name: "pdns_server_id", label: "PowerDNS server id" },
  { name: "secret_ref", label: "Secret reference (env:NAME or file:/path)", nullable: true,
    help: "Where the TSIG secret or X-API-Key is read from; never the secret itself." },
  { name: "krb_realm", label: "Kerberos realm (ad_gsstsig)", nullable: true },
  { name: "krb_principal", label: "Kerberos principal (ad_gsstsig)", nullable: true },
  { name: "keytab_path", label: "Keytab path (ad_gsstsig)", nullable: true },
  { name: "krb_service_host", label: "DNS server host name (ad_gsstsig)", nullable: true },
];
const serverEditFields = serverFields.filter((f) => f.name !== "adapter");

function where(s) {
  if (s.adapter === "embedded") return "this appliance";
  if (s.adapter === "powerdns_http") return dash(s.api_url);
  if (s.adapter === "ad_gsstsig") return dash(s.krb_service_host);
  return s.address ? `${s.address}:${s.port}` : "—";
}

export async function dnsPage(view) {
  view.append(h("h1", {}, "DNS"), h("p", { class: "muted" },
    "Servers the appliance updates (or answers as, embedded), their zones and static records. ",
    "Updates and their failures: ",
    workLink("Work → DNS"), "."));
  const tenants = await pickerOf("/tenants", "tenant_id", "Tenant", "default tenant", (t) => t.name);
  const servers = await pickerOf("/dns-servers", "server_id", "Server", null, (s) => `${s.name} (${s.adapter})`);
  const serverName = new Map((servers?.items || []).map((s) => [s.id, s.name]));
  const serverSec = crudSection({
    title: "DNS servers", noun: "DNS server", role: "admin",
    fields: [...serverFields, ...(tenants ? [tenants] : [])], editFields: serverEditFields,
    columns: [
      { label: "Name", value: (s) => s.name }, { label: "Adapter", value: (s) => s.adapter },
      { label: "Where", value: where },
      { label: "Secret reference", value: (s) => h("code", {}, dash(s.secret_ref || s.keytab_path)) },
      { label: "Work", value: (s) => link("#/work?kind=dns", `Work → DNS`) },
    ],
    list: pageOf("/dns-servers"),
    create: async (v) => { await post("/dns-servers", v); await refresh(); },
    update: (s, v) => patch(`/dns-servers/${s.id}`, v),
    remove: (s) => del(`/dns-servers/${s.id}`),
  });
  const zoneFields = () => [
    { name: "name", label: "Zone name", required: true, placeholder: "lan.example or 0.10.in-addr.arpa" },
    servers ? { ...servers, options: [["", "choose a server"], ...servers.options] }
      : { name: "server_id", label: "Server id" },
    { name: "default_ttl", label: "Default TTL (seconds)", type: "number", placeholder: "3600" },
    ...(tenants ? [tenants] : []),
  ];
  const zoneSec = crudSection({
    title: "Zones", noun: "zone",
    fields: zoneFields(),
    editFields: zoneFields().filter((f) => f.name === "server_id" || f.name === "default_ttl"),
    columns: [
      { label: "Zone", value: (z) => link(`#/dns/zones/${z.id}`, z.name) }, { label: "Kind", value: (z) => z.kind },
      { label: "Server", value: (z) => serverName.get(z.server_id) || h("code", {}, z.server_id) },
      { label: "Default TTL", value: (z) => String(z.default_ttl) },
      { label: "Work", value: () => workLink("Work → DNS") },
    ],
    list: pageOf("/dns-zones"),
    create: (v) => post("/dns-zones", v),
    update: (z, v) => patch(`/dns-zones/${z.id}`, v),
    remove: (z) => del(`/dns-zones/${z.id}`),
    impact: async (z) => {
      const page = await get(`/dns-zones/${z.id}/records`, { limit: 1000 });
      const n = page.next_cursor ? "more than 1000 static records" : plural(page.items.length, "static record");
      return `It holds ${n}${page.items.length ? " (a zone is deleted only once they are)" : ""}.`;
    },
  });
  // A new server is offered in the zone form at once: redraw the page.
  async function refresh() { window.dispatchEvent(new HashChangeEvent("hashchange")); }
  view.append(serverSec, zoneSec);
  await Promise.all([serverSec.ready, zoneSec.ready]);
}
