// API tokens (admin only): the secret is shown once.
import { del, post } from "../api.js";
import { clear, h } from "../dom.js";
import { badge, fmtTime, secretBox, section } from "../ui.js";
import { crudSection } from "../crud.js";
import { code, pageOf } from "../lists.js";

export async function tokensPage(view) {
  view.append(h("h1", {}, "Tokens"));
  const shown = h("div");
  const sec = crudSection({
    title: "API tokens", noun: "token", role: "admin",
    fields: [{ name: "name", label: "Name", required: true },
      { name: "role", label: "Role", type: "select", options: ["viewer", "operator", "admin"] },
      { name: "expires_at", label: "Expires at (RFC 3339, optional)", nullable: true,
        placeholder: "2030-01-01T00:00:00Z" }],
    columns: [{ label: "Name", value: (t) => t.name }, { label: "Role", value: (t) => badge(t.role, `role-${t.role}`) },
      { label: "Hint", value: (t) => code(t.hint) },
      { label: "Last used", value: (t) => fmtTime(t.last_used_at) || "never" },
      { label: "Expires", value: (t) => fmtTime(t.expires_at) || "never" }],
    list: pageOf("/tokens"),
    create: async (v) => {
      const t = await post("/tokens", v);
      clear(shown).append(section(`New token ${t.name}`, secretBox("Token secret", t.token)));
    },
    remove: (t) => del(`/tokens/${t.id}`), removeLabel: "Revoke",
  });
  view.append(shown, sec);
  await sec.ready;
}
