// DHCP options of a subnet, a client class or a reservation (docs/api-ipam.md, "Option
// scopes"): the section that lists and edits them, the form per option kind (DHCPv4 and
// DHCPv6) and a value's text.
import { can, del, patch, post } from "./api.js";
import { clear, h } from "./dom.js";
import { form } from "./ui.js";
import { crudSection } from "./crud.js";
import { dash, pageOf } from "./lists.js";
import { optionLabel, optionLabel6 } from "./optnames.js";

export const OPTION_KINDS = [
  ["6", "6 — DNS servers"], ["15", "15 — domain name"], ["42", "42 — NTP servers"],
  ["43", "43 — vendor specific (hex) + vendor class"], ["other", "other code (JSON payload)"],
];

// DHCPv6 options (RFC 8415 numbers): the five the API takes (docs/api-ipam.md, "Options").
export const OPTION6_KINDS = ["23", "24", "56", "59", "17"].map((c) => [`v6-${c}`, optionLabel6(c)]);

// Each option kind's form: its fields and the request body made from what was entered.
const addresses = (code, label) => [
  [{ name: "addresses", label: `${label} (comma separated)`, type: "list", required: true }],
  (v) => ({ code, payload: { addresses: v.addresses || [] } }),
];
const json = (help) => ({ name: "payload", label: "Payload (JSON)", type: "json", required: true, help });
const OPTION_FORMS = {
  "v6-23": addresses(23, "DNS server IPv6 addresses"),
  "v6-56": addresses(56, "NTP server IPv6 addresses"),
  "v6-24": [[{ name: "domains", label: "Search domains (comma separated)", type: "list", required: true }],
    (v) => ({ code: 24, payload: { domains: v.domains || [] } })],
  "v6-59": [[{ name: "url", label: "Boot file URL", required: true, placeholder: "tftp://[2001:db8::69]/boot.efi" }],
    (v) => ({ code: 59, payload: { url: v.url ?? "" } })],
  "v6-17": [[json('{"enterprise": 4491, "suboptions": [{"code": 1, "hex": "01:02"}]}')],
    (v) => ({ code: 17, payload: v.payload ?? {} })],
  "6": addresses(6, "DNS server addresses"),
  "42": addresses(42, "NTP server addresses"),
  "15": [[{ name: "value", label: "Domain name", required: true }],
    (v) => ({ code: 15, payload: { value: v.value ?? "" } })],
  "43": [[{ name: "hex", label: "Vendor data (hex octets)", required: true, placeholder: "01:04:c0:a8:00:01" },
    { name: "vendor_class", label: "Vendor class (option 60) it applies to", nullable: true }],
  (v) => ({ code: 43, payload: { hex: v.hex ?? "" }, vendor_class: v.vendor_class ?? null })],
  "other": [[{ name: "code", label: "Option code", type: "number", required: true },
    json('{"addresses": [...]}, {"value": ...}, {"domains": [...]}, {"routes": [...]} or {"hex": "..."}'),
    { name: "vendor_class", label: "Vendor class", nullable: true }],
  (v) => ({ code: v.code, payload: v.payload ?? {}, vendor_class: v.vendor_class ?? null })],
};
// Kinds whose form shows the payload as it is (the API's "payload" names that field).
const RAW_PAYLOAD = new Set(["other", "v6-17"]);

// `collection`: the options' create path (/subnets/{id}/options, /client-classes/{id}/options, …).
export function optionForm(collection, onDone, onCancel, kinds = OPTION_KINDS) {
  const slot = h("div");
  const kindId = "opt-kind";
  const kind = h("select", { id: kindId }, kinds.map(([v, l]) => h("option", { value: v }, l)));
  function build() {
    const k = kind.value;
    const [fields, toBody] = OPTION_FORMS[k];
    clear(slot).append(form({
      fields, submitLabel: "Add option", onCancel,
      onSubmit: async (v) => {
        try {
          await post(collection, toBody(v));
        } catch (error) {
          // The API names the payload; this form shows the payload as its first field.
          if (error.status === 422 && !RAW_PAYLOAD.has(k)) {
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
  return h("div", { class: "form" }, h("h3", {}, "New option"),
    h("div", { class: "field" }, h("label", { for: kindId }, "Option"), kind), slot);
}

export function payloadText(o) {
  const p = o.payload || {};
  if (p.addresses) return p.addresses.join(", ");
  if (p.domains) return p.domains.join(", ");
  if (p.routes) return p.routes.map((r) => `${r.destination} via ${r.router}`).join(", ");
  if (p.hex !== undefined) return p.hex;
  if (p.value !== undefined) return String(p.value);
  if (p.url !== undefined) return p.url;
  return JSON.stringify(p);
}

// The options at `collection` (any scope: items are /options/{id}); DHCPv6 codes when `v6`.
export function optionsSection(collection, v6 = false, title = "Options") {
  const label = v6 ? optionLabel6 : optionLabel;
  const payload = { name: "payload", label: "Payload (JSON)", type: "json" };
  const vendorClass = { name: "vendor_class", label: "Vendor class", nullable: true };
  const options = crudSection({
    title, noun: "option",
    columns: [{ label: "Option", value: (o) => label(o.code) }, { label: "Value", value: payloadText },
      ...(v6 ? [] : [{ label: "Vendor class", value: (o) => dash(o.vendor_class) }])],
    fields: [],
    editFields: v6 ? [payload] : [payload, vendorClass],
    list: pageOf(collection),
    update: (o, v) => patch(`/options/${o.id}`, v),
    remove: (o) => del(`/options/${o.id}`),
    describe: (o) => label(o.code),
  });
  if (can("operator")) {
    const slot = options.querySelector(".panel");
    const open = () => {
      clear(slot).append(optionForm(collection, async () => { await options.reload("option created."); },
        () => clear(slot), v6 ? OPTION6_KINDS : OPTION_KINDS));
      slot.querySelector("select")?.focus();
    };
    options.querySelector("h2").after(h("div", { class: "section-tools" },
      h("button", { type: "button", class: "button primary small", onclick: open }, "New option")));
  }
  return options;
}
