// A DNS zone's static records.
import { del, get, patch, post } from "../api.js";
import { h } from "../dom.js";
import { link, section } from "../ui.js";
import { crudSection } from "../crud.js";
import { pageOf } from "../lists.js";
import { workLink } from "./dns.js";

const RECORD_TYPES = ["A", "AAAA", "CNAME", "PTR", "TXT", "MX", "SRV", "NS"];
const recordFields = [
  { name: "name", label: "Name (@, relative or absolute in the zone)", required: true, placeholder: "www" },
  { name: "type", label: "Type", type: "select", options: RECORD_TYPES },
  { name: "value", label: "Value", required: true, placeholder: "10.0.0.5, '10 mail', host.example.com." },
  { name: "ttl", label: "TTL (empty: the zone's default)", type: "number", nullable: true },
];

export async function zonePage(view, { args }) {
  const zone = await get(`/dns-zones/${args[0]}`);
  let server = null;
  try { server = await get(`/dns-servers/${zone.server_id}`); } catch { /* shown as its id */ }
  view.append(h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, link("#/dns", "DNS"), " / ", zone.name),
    h("h1", {}, `Zone ${zone.name}`));
  view.append(section("Zone", h("dl", { class: "kv" }, [
    ["Kind", zone.kind], ["Server", server ? `${server.name} (${server.adapter})` : zone.server_id],
    ["Default TTL", `${zone.default_ttl} s`], ["Updates", workLink("Work → DNS")],
  ].map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]))));
  const sec = crudSection({
    title: "Static records", noun: "record", fields: recordFields,
    columns: [
      { label: "Name", value: (r) => r.name }, { label: "Type", value: (r) => r.type },
      { label: "Value", value: (r) => h("code", {}, r.value) },
      { label: "TTL", value: (r) => (r.ttl === null ? `${zone.default_ttl} (zone default)` : String(r.ttl)) },
    ],
    describe: (r) => `${r.name} ${r.type}`, bulk: true,
    list: pageOf(`/dns-zones/${zone.id}/records`),
    create: (v) => post(`/dns-zones/${zone.id}/records`, v),
    update: (r, v) => patch(`/dns-records/${r.id}`, v),
    remove: (r) => del(`/dns-records/${r.id}`),
  });
  view.append(sec);
  await sec.ready;
}
