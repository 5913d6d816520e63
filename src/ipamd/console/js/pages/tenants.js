// Tenants.
import { h } from "../dom.js";
import { crudSection } from "../crud.js";
import { code, restOf } from "../lists.js";

export async function tenants(view) {
  view.append(h("h1", {}, "Tenants"));
  const fields = [{ name: "name", label: "Name", required: true }, { name: "description", label: "Description" }];
  const sec = crudSection({
    title: "Tenants", noun: "tenant", fields,
    columns: [{ label: "Name", value: (t) => t.name }, { label: "Id", value: (t) => code(t.id) },
      { label: "Description", value: (t) => t.description },
      { label: "Default", value: (t) => (t.default ? "yes" : "") }],
    ...restOf("/tenants"),
  });
  view.append(sec);
  await sec.ready;
}
