// Helpers the list pages share: a page loader, pickers from lists, filters and sort in the link.
import { del, get, patch, post, query } from "./api.js";
import { clear, h } from "./dom.js";
import { downloadCsv, errorBox, form, notice } from "./ui.js";

// A pagedTable's loader: the list at `path` with `params`, from a cursor.
export const pageOf = (path, params) => (cursor) => get(path, { ...params, cursor });

// A resource's list, create, update and delete at `path` (items at `${path}/<id>`), as
// crudSection takes them.
export const restOf = (path) => ({
  list: pageOf(path),
  create: (v) => post(path, v),
  update: (row, v) => patch(`${path}/${row.id}`, v),
  remove: (row) => del(`${path}/${row.id}`),
});

export const code = (text) => h("code", {}, text ?? "");
export const dash = (v) => (v === null || v === undefined || v === "" ? "—" : String(v));

// The first 200 rows of a list as a select, with its rows (`items`); null when the list
// cannot be read. `empty` labels the "none" choice (null: no such choice).
export async function pickerOf(path, field, label, empty, name, params = {}) {
  try {
    const page = await get(path, { limit: 200, ...params });
    const options = page.items.map((x) => [x.id, name(x)]);
    return {
      name: field, label, type: "select", nullable: true, items: page.items,
      options: empty === null ? options : [["", empty], ...options],
    };
  } catch {
    return null;
  }
}

// The tenant of a create form: a picker when the tenants can be read, else the raw id.
export async function tenantField() {
  return (await pickerOf("/tenants", "tenant_id", "Tenant", "default tenant", (t) => t.name))
    || { name: "tenant_id", label: "Tenant id (empty: default tenant)", type: "text", nullable: true };
}

// A folded row part that builds its content (`open()`) the first time it is unfolded.
export function lazyDetails(summary, open) {
  const details = h("details", { class: "tree" }, h("summary", {}, summary));
  let loaded = false;
  details.addEventListener("toggle", () => {
    if (details.open && !loaded) {
      loaded = true;
      details.append(open());
    }
  });
  return details;
}

// New filters keep the page's sort (it is in its link too).
export function filterForm(fields, params, target, keep = ["sort"]) {
  const kept = Object.fromEntries(keep.filter((k) => params.get(k)).map((k) => [k, params.get(k)]));
  return form({
    fields: fields.map((f) => ({ ...f, value: params.get(f.name) ?? f.value })), submitLabel: "Apply filters",
    onSubmit: async (values) => { location.hash = `${target}${query({ ...values, ...kept })}`; },
  });
}

// Sort and filters live in the page's link: a header click changes the link (#/leases?sort=-ip).
export function sortTo(target, params) {
  return (sort) => {
    const q = Object.fromEntries(params);
    delete q.cursor;
    location.hash = `${target}${query({ ...q, sort })}`;
  };
}

// "Export CSV": every row the list's filter selects, read a page at a time by
// `load(cursor, limit)`; `counted(n)` names what was exported, said in `message`.
export function csvButton(filename, columns, load, message, counted) {
  const click = async (e) => {
    e.target.disabled = true;
    try {
      const n = await downloadCsv(filename, columns, load);
      clear(message).append(notice(`Exported ${counted(n)} as CSV.`));
    } catch (error) {
      clear(message).append(errorBox(error));
    } finally {
      e.target.disabled = false;
    }
  };
  return h("button", { type: "button", class: "button small", onclick: click }, "Export CSV");
}
