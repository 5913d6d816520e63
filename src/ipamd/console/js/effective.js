// A subnet's "effective options": what a client would receive and from which scope
// (GET /subnets/{id}/effective-options; docs/api-ipam.md, "Option scopes").
import { get } from "./api.js";
import { clear, h } from "./dom.js";
import { form, section } from "./ui.js";
import { dash } from "./lists.js";
import { optionLabel } from "./optnames.js";

const FIELDS = [{ name: "mac", label: "Client MAC", required: true, placeholder: "02:00:00:00:00:01" },
  { name: "arch", label: "Architecture (option 93)", type: "number" },
  { name: "vendor_class", label: "Vendor class (option 60)" },
  { name: "user_class", label: "User class (option 77)" },
  { name: "client_id", label: "Client id (option 61, hex)" }];

const scopeText = (s) => (s.scope === "subnet" ? "subnet" : `${s.scope} ${s.scope_name ?? s.scope_id}`);

function answer(r) {
  const rows = r.options.map((o) => h("tr", {}, h("td", {}, optionLabel(o.code)),
    h("td", {}, h("code", {}, o.hex)), h("td", {}, scopeText(o)), h("td", {}, dash(o.vendor_class))));
  const field = (name, f) => h("p", {}, `${name}: `, f ? `${f.value} (${scopeText(f)})` : "—");
  return h("div", { "data-testid": "effective" },
    h("p", {}, "Classes: ", r.classes.length ? r.classes.map((c) => c.name).join(", ") : "none",
      " · Reservation: ", r.reservation ? r.reservation.ip : "none"),
    field("Next server", r.next_server), field("Boot file", r.boot_file),
    h("table", { class: "table" }, h("thead", {}, h("tr", {}, ["Option", "Value", "From", "Vendor class"]
      .map((t) => h("th", { scope: "col" }, t)))), h("tbody", {}, rows)));
}

export function effectiveSection(subnetId) {
  const sec = section("Effective options");
  const out = h("div");
  sec.append(h("p", { class: "muted" }, "What a client would receive, and from which scope: "
    + "its reservation's options over its classes' over the subnet's."), form({
    fields: FIELDS, submitLabel: "Show",
    onSubmit: async (v) => {
      const params = Object.fromEntries(Object.entries(v).filter(([, x]) => x !== "" && x != null));
      clear(out).append(answer(await get(`/subnets/${subnetId}/effective-options`, params)));
    },
  }), out);
  return sec;
}
