// Client classes: what a pool's class_id steers by (vendor class, user class, MAC prefix,
// architecture, relay circuit/remote id); each has a page with its options.
import { h } from "../dom.js";
import { link } from "../ui.js";
import { crudSection } from "../crud.js";
import { code, dash, restOf } from "../lists.js";

const MATCHES = ["vendor_class", "user_class", "mac_prefix", "arch", "circuit_id", "remote_id"];

// The fields a class is created and edited with (the class's page edits them too).
export const CLASS_FIELDS = [{ name: "name", label: "Name", required: true },
  { name: "match", label: "Match on", type: "select", options: MATCHES },
  { name: "value", label: "Value", required: true },
  { name: "priority", label: "Priority (lowest wins)", type: "number" },
  { name: "next_server", label: "Next server (PXE)", nullable: true },
  { name: "boot_file", label: "Boot file (PXE)", nullable: true },
  { name: "description", label: "Description" }];

export async function clientClasses(view) {
  view.append(h("h1", {}, "Client classes"));
  const sec = crudSection({
    title: "Client classes", noun: "client class", fields: CLASS_FIELDS, editFields: CLASS_FIELDS,
    columns: [{ label: "Name", value: (c) => link(`#/client-classes/${c.id}`, c.name) },
      { label: "Match", value: (c) => c.match }, { label: "Value", value: (c) => code(c.value) },
      { label: "Priority", value: (c) => String(c.priority) },
      { label: "Boot file", value: (c) => dash(c.boot_file) },
      { label: "Description", value: (c) => c.description }],
    ...restOf("/client-classes"),
  });
  view.append(sec);
  await sec.ready;
}
