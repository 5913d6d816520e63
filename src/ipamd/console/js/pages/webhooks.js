// Webhooks (admin only).
import { h } from "../dom.js";
import { crudSection } from "../crud.js";
import { restOf } from "../lists.js";

const fields = [
  { name: "name", label: "Name", required: true }, { name: "url", label: "URL (https://…)", required: true },
  { name: "secret_ref", label: "Secret reference (env:NAME or file:/path)", required: true },
  { name: "previous_secret_ref", label: "Previous secret reference (rotation)", nullable: true },
  { name: "topics", label: "Topics (e.g. lease.* or *)" },
  { name: "enabled", label: "Enabled", type: "checkbox", default: true },
];

export async function webhooks(view) {
  view.append(h("h1", {}, "Webhooks"));
  const sec = crudSection({
    title: "Webhooks", noun: "webhook", role: "admin", fields,
    columns: [{ label: "Name", value: (w) => w.name }, { label: "URL", value: (w) => w.url },
      { label: "Topics", value: (w) => w.topics }, { label: "Enabled", value: (w) => (w.enabled ? "yes" : "no") }],
    ...restOf("/webhooks"),
  });
  view.append(sec);
  await sec.ready;
}
