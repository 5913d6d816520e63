// Client classes: what a pool's class_id steers by (vendor class, user class, MAC prefix).
import { h } from "../dom.js";
import { crudSection } from "../crud.js";
import { code, restOf } from "../lists.js";

const MATCHES = ["vendor_class", "user_class", "mac_prefix"];

export async function clientClasses(view) {
  view.append(h("h1", {}, "Client classes"));
  const fields = [{ name: "name", label: "Name", required: true },
    { name: "match", label: "Match on", type: "select", options: MATCHES },
    { name: "value", label: "Value", required: true }, { name: "description", label: "Description" }];
  const sec = crudSection({
    title: "Client classes", noun: "client class", fields, editFields: fields,
    columns: [{ label: "Name", value: (c) => c.name }, { label: "Match", value: (c) => c.match },
      { label: "Value", value: (c) => code(c.value) }, { label: "Description", value: (c) => c.description }],
    ...restOf("/client-classes"),
  });
  view.append(sec);
  await sec.ready;
}
