// Prefixes and, folded under each, its subnets. Each list asks for its items' utilisation
// with the page itself (?include=utilisation, docs/api-ipam.md): one request a page.
import { can, del, get, patch, post } from "../api.js";
import { clear, h } from "../dom.js";
import { bar, form, link, pagedTable, plural, section } from "../ui.js";
import { crudSection } from "../crud.js";
import { filterForm, lazyDetails, pageOf, pickerOf, tenantField } from "../lists.js";
import { isV6, loadDdnsPickers, subnetFormFields } from "../subnet_fields.js";

const WITH_UTILISATION = { include: "utilisation" };

// What the create forms offer (operators only): the tenant picker and the DDNS pickers.
async function loadForms() {
  if (!can("operator")) return null;
  const [tenant, ddns] = await Promise.all([tenantField(), loadDdnsPickers()]);
  return { tenant, ddns };
}

function newSubnetButton(prefix, forms, panel) {
  const title = `New subnet in ${prefix.cidr}`;
  const open = () => {
    clear(panel).append(form({
      title, fields: [...subnetFormFields(isV6(prefix.cidr), forms.ddns), forms.tenant],
      submitLabel: "Create subnet",
      onSubmit: async (values) => {
        const s = await post("/subnets", { ...values, prefix_id: prefix.id });
        location.hash = `#/subnets/${s.id}`;
      },
      onCancel: () => clear(panel),
    }));
    panel.querySelector("input")?.focus();
  };
  return h("button", { type: "button", class: "button small", onclick: open }, title);
}

function subnetList(prefix, forms) {
  const slot = h("div", { class: "subnets" });
  const table = pagedTable({
    caption: `Subnets of ${prefix.cidr}`,
    columns: [
      { label: "Subnet", value: (s) => link(`#/subnets/${s.id}`, s.cidr) },
      { label: "Name", value: (s) => s.name },
      { label: "DHCP", value: (s) => (s.dhcp_enabled ? "on" : "off") },
      { label: "Utilisation", value: (s) => bar(s.utilisation.percent_used, s.cidr) },
    ],
    load: pageOf("/subnets", { prefix_id: prefix.id, ...WITH_UTILISATION }),
    empty: "No subnets in this prefix.",
  });
  slot.append(table);
  if (forms) {
    const panel = h("div");
    slot.append(newSubnetButton(prefix, forms, panel), panel);
  }
  return slot;
}

function prefixColumns(tenantName, forms) {
  const summary = (p) => [h("strong", {}, p.cidr), p.description ? ` — ${p.description}` : ""];
  return [
    { label: "Prefix", value: (p) => lazyDetails(summary(p), () => subnetList(p, forms)) },
    { label: "Tenant", value: (p) => tenantName.get(p.tenant_id) || h("code", {}, p.tenant_id) },
    { label: "Utilisation", value: (p) => h("div", {}, bar(p.utilisation.percent_used, p.cidr),
      h("span", { class: "muted" }, ` ${p.utilisation.subnets} subnets`)) },
  ];
}

export async function prefixes(view, { params }) {
  view.append(h("h1", {}, "Prefixes and subnets"));
  // Tenants by name: the same CIDR may exist once per tenant, so each row says whose it is.
  const [tenantPicker, forms] = await Promise.all([
    pickerOf("/tenants", "tenant_id", "Tenant", "every tenant", (t) => t.name), loadForms()]);
  const tenantName = new Map((tenantPicker?.items || []).map((t) => [t.id, t.name]));
  const tenantFilter = params.get("tenant_id") || "";
  if (tenantPicker) {
    const f = filterForm([tenantPicker], params, "#/prefixes");
    f.classList.add("filters");
    view.append(section("Filter", f));
  }
  const sec = crudSection({
    title: "Prefixes", noun: "prefix",
    fields: [{ name: "cidr", label: "CIDR", required: true, placeholder: "10.0.0.0/8" },
      { name: "description", label: "Description" }, ...(forms ? [forms.tenant] : [])],
    editFields: [{ name: "cidr", label: "CIDR" }, { name: "description", label: "Description" }],
    describe: (p) => p.cidr,
    columns: prefixColumns(tenantName, forms),
    list: pageOf("/prefixes", { ...(tenantFilter ? { tenant_id: tenantFilter } : {}), ...WITH_UTILISATION }),
    create: (v) => post("/prefixes", v),
    update: (p, v) => patch(`/prefixes/${p.id}`, v),
    remove: (p) => del(`/prefixes/${p.id}`),
    impact: async (p) => `It holds ${plural((await get(`/prefixes/${p.id}/utilisation`)).subnets, "subnet")}.`,
  });
  view.append(sec);
  await sec.ready;
}
