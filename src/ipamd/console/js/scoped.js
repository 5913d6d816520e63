// What a client class's and a reservation's pages share: their fields shown and edited
// (PATCH), beside their options (subnet_options.optionsSection).
import { can, patch } from "./api.js";
import { clear, h } from "./dom.js";
import { form, section } from "./ui.js";
import { dash } from "./lists.js";

// `fields`: form fields ({name, label, ...}); `path`: the object's item path.
export function fieldsCard(title, object, fields, path) {
  const card = section(title);
  card.append(h("dl", { class: "kv" },
    fields.map((f) => [h("dt", {}, f.label), h("dd", {}, dash(object[f.name]))])));
  if (can("operator")) {
    const panel = h("div");
    const edit = () => {
      clear(panel).append(form({
        title: `Edit ${title.toLowerCase()}`, fields, initial: object,
        onSubmit: async (v) => {
          await patch(path, v);
          window.dispatchEvent(new HashChangeEvent("hashchange"));
        },
        onCancel: () => clear(panel),
      }));
      panel.querySelector("input")?.focus();
    };
    card.append(h("div", { class: "row" },
      h("button", { type: "button", class: "button small", onclick: edit }, "Edit"),
    ), panel);
  }
  return card;
}
