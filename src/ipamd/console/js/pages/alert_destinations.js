// Alert destinations (admin only): where alerts are sent.
import { h } from "../dom.js";
import { link } from "../ui.js";
import { crudSection } from "../crud.js";
import { restOf } from "../lists.js";

const SETTINGS_HELP = 'webhook/alertmanager: {"url": "https://…"}; pager: {"routing_key_ref": "env:NAME"}; '
  + 'smtp: {"host", "port", "starttls", "from", "to": [...], "username", "password_ref"}';
const destinationFields = [
  { name: "name", label: "Name", required: true },
  { name: "kind", label: "Kind", type: "select", options: ["webhook", "alertmanager", "pager", "smtp"] },
  { name: "settings", label: "Settings (JSON)", type: "json", rows: 5, help: SETTINGS_HELP },
  { name: "enabled", label: "Enabled", type: "checkbox", default: true },
];

// Where a destination sends: its URL, or an SMTP server and its recipients.
function where(d) {
  const s = d.settings;
  if (s.url) return s.url;
  return s.host ? `${s.host}:${s.port} → ${s.to.join(", ")}` : "";
}

export async function alertDestinations(view) {
  view.append(h("h1", {}, "Alert destinations"));
  const sec = crudSection({
    title: "Alert destinations", noun: "alert destination", role: "admin",
    fields: destinationFields, editFields: destinationFields.filter((f) => f.name !== "kind"),
    columns: [
      { label: "Name", value: (d) => d.name }, { label: "Kind", value: (d) => d.kind },
      { label: "Where", value: where },
      { label: "Enabled", value: (d) => (d.enabled ? "yes" : "no") },
    ],
    ...restOf("/settings/alert-destinations"),
  });
  view.append(h("p", { class: "muted" }, "Every alert opening and clearing is sent to each enabled destination; ",
    "deliveries show in ", link("#/work", "Work"), "."), sec);
  await sec.ready;
}
