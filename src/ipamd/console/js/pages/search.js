// Search results, each linked to where it is seen.
import { h } from "../dom.js";
import { badge, link, pagedTable } from "../ui.js";
import { code, pageOf } from "../lists.js";

const HIT_LINK = {
  subnet: (o) => `#/subnets/${o.id}`, prefix: () => "#/prefixes",
  lease: (o) => `#/leases?ip=${encodeURIComponent(o.ip)}`,
  reservation: (o) => `#/subnets/${o.subnet_id}`, assignment: (o) => `#/subnets/${o.subnet_id}`,
};

export async function search(view, { params }) {
  const q = params.get("q") || "";
  const box = document.getElementById("search");
  if (box && !box.value) box.value = q;
  view.append(h("h1", {}, "Search"), h("p", {}, "Results for ", code(q)));
  const table = pagedTable({
    columns: [
      { label: "Type", value: (r) => badge(r.type, "type") },
      { label: "Match", value: (r) => (HIT_LINK[r.type] ? link(HIT_LINK[r.type](r.object), r.summary) : r.summary) },
      { label: "Matched on", value: (r) => r.match },
    ],
    load: pageOf("/search", { q }), empty: "Nothing matches.",
  });
  view.append(table);
  await table.ready;
}
