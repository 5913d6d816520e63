// Shared pieces: forms that show 422s beside their field, paged tables, dialogs, bars.
import { ApiError } from "./api.js";
import { append, clear, h, nextId } from "./dom.js";

export function errorBox(error) {
  const text = error instanceof ApiError
    ? `${error.message} (${error.status} ${error.code})`
    : String(error && error.message ? error.message : error);
  return h("div", { class: "alert error", role: "alert" }, text);
}

export function notice(text) {
  return h("div", { class: "alert ok", role: "status" }, text);
}

export function fmtTime(value) {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? String(value) : d.toLocaleString();
}

export function bar(percent, label) {
  const p = Math.max(0, Math.min(100, Number(percent) || 0));
  const level = p >= 90 ? "high" : p >= 70 ? "mid" : "low";
  return h("div", { class: "util" },
    h("div", { class: `util-bar ${level}`, role: "img", "aria-label": `${label || ""} ${p.toFixed(1)}% used` },
      h("span", { style: { width: `${p}%` } })),
    h("span", { class: "util-text" }, `${p.toFixed(1)}%`));
}

export function badge(text, kind) {
  return h("span", { class: `badge ${kind || text}` }, text);
}

// A modal confirmation; resolves true when confirmed. `impact` (what the change takes with it:
// live leases, records, …) is said on a line of its own. Focus starts on Cancel, so a stray
// Enter or Space changes nothing.
export function confirmDialog(message, okLabel = "Confirm", impact = null) {
  return new Promise((resolve) => {
    const titleId = nextId("dlg");
    const impactId = impact ? nextId("dlg") : null;
    const dialog = h("dialog", { class: "dialog", "aria-labelledby": titleId, "aria-describedby": impactId });
    const done = (value) => { dialog.close(); dialog.remove(); resolve(value); };
    const cancel = h("button", { type: "button", class: "button", autofocus: true, onclick: () => done(false) },
      "Cancel");
    append(dialog, [
      h("p", { id: titleId }, message),
      impact ? h("p", { id: impactId, class: "impact", "data-testid": "impact" }, impact) : null,
      h("div", { class: "actions" },
        h("button", { type: "button", class: "button danger", onclick: () => done(true) }, okLabel), cancel),
    ]);
    dialog.addEventListener("cancel", (e) => { e.preventDefault(); done(false); });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

// "1 live lease", "3 live leases"
export function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

// A secret shown once, with a copy button.
export function secretBox(label, secret) {
  const id = nextId("secret");
  const input = h("input", { id, class: "secret", readonly: true, value: secret, size: 60 });
  const status = h("span", { class: "muted", role: "status" });
  return h("div", { class: "secret-box" },
    h("label", { for: id }, label),
    h("div", { class: "row" }, input,
      h("button", {
        type: "button", class: "button",
        onclick: async () => {
          input.select();
          try { await navigator.clipboard.writeText(secret); status.textContent = "Copied."; }
          catch { document.execCommand("copy"); status.textContent = "Copied."; }
        },
      }, "Copy")),
    h("p", { class: "muted" }, "This secret is shown once. Store it now."), status);
}

function controlFor(field, value, id, describedBy) {
  const common = { id, name: field.name, "aria-describedby": describedBy };
  if (field.type === "select") {
    return h("select", common, (field.options || []).map((o) => {
      const [v, label] = Array.isArray(o) ? o : [o, o];
      return h("option", { value: v, selected: String(value ?? field.default ?? "") === String(v) }, label);
    }));
  }
  if (field.type === "checkbox") {
    return h("input", { ...common, type: "checkbox", checked: value ?? field.default ?? false });
  }
  if (field.type === "textarea" || field.type === "json") {  // json: an object, shown as JSON
    const text = value === undefined || value === null ? ""
      : typeof value === "object" ? JSON.stringify(value, null, 1) : String(value);
    return h("textarea", { ...common, rows: field.rows || 3, value: text });
  }
  const text = value === undefined || value === null ? "" : Array.isArray(value) ? value.join(", ") : String(value);
  return h("input", {
    ...common, type: field.type === "number" ? "number" : field.type === "datetime" ? "datetime-local" : "text",
    value: text, placeholder: field.placeholder, required: field.required, autocomplete: "off",
    spellcheck: "false", list: field.suggestions ? `${id}-list` : null,
  });
}

function readField(field, el) {
  if (field.type === "checkbox") return el.checked;
  const text = el.value.trim();
  if (text === "") return field.nullable ? null : undefined;
  if (field.type === "number") return Number(text);
  if (field.type === "list") return text.split(/[,\s]+/).filter(Boolean);
  if (field.type === "json") {
    try { return JSON.parse(text); } catch { return { __invalid: text }; }
  }
  return text;
}

function same(a, b) {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/**
 * A form whose submit calls onSubmit(values). With `initial` (an edit), only changed fields are
 * sent. A 422 is shown beside each field its message names; any other error above the buttons.
 */
export function form({ fields, initial, submitLabel = "Save", onSubmit, onCancel, title }) {
  const controls = {};
  const messages = {};
  const formError = h("div", { class: "form-error" });
  const el = h("form", { class: "form", novalidate: true });
  if (title) el.append(h("h3", {}, title));
  for (const field of fields) {
    const id = nextId("fld");
    const msgId = `${id}-msg`;
    const helpId = field.help ? `${id}-help` : null;
    const control = controlFor(field, initial ? initial[field.name] : field.value, id,
      [msgId, helpId].filter(Boolean).join(" "));
    controls[field.name] = control;
    messages[field.name] = h("div", { id: msgId, class: "field-error", "aria-live": "polite" });
    el.append(h("div", { class: `field ${field.type === "checkbox" ? "check" : ""}`, dataset: { field: field.name } },
      h("label", { for: id }, field.label), control,
      field.suggestions
        ? h("datalist", { id: `${id}-list` }, field.suggestions.map((v) => h("option", { value: v }))) : null,
      field.help ? h("div", { id: helpId, class: "help" }, field.help) : null,
      messages[field.name]));
  }
  const submit = h("button", { type: "submit", class: "button primary" }, submitLabel);
  el.append(formError, h("div", { class: "actions" }, submit,
    onCancel ? h("button", { type: "button", class: "button", onclick: onCancel }, "Cancel") : null));
  el.addEventListener("submit", async (event) => {
    event.preventDefault();
    clear(formError);
    for (const [name, m] of Object.entries(messages)) {
      clear(m);
      controls[name].removeAttribute("aria-invalid");
    }
    const values = {};
    for (const field of fields) {
      if (field.readonly) continue;
      const v = readField(field, controls[field.name]);
      if (field.type === "json" && v && v.__invalid !== undefined) {
        messages[field.name].textContent = "not valid JSON";
        controls[field.name].setAttribute("aria-invalid", "true");
        return;
      }
      if (initial) {
        // An emptied field: null where the API allows it, else an empty string (numbers: unset).
        const empty = { number: undefined, list: [] }[field.type];
        const value = v !== undefined ? v : field.type in { number: 1, list: 1 } ? empty : "";
        const was = initial[field.name] ?? (field.type === "number" || field.nullable ? null : "");
        if (value !== undefined && !same(value, was)) values[field.name] = value;
      } else if (v !== undefined) {
        values[field.name] = v;
      }
    }
    submit.disabled = true;
    try {
      await onSubmit(values);
    } catch (error) {
      const named = error instanceof ApiError ? error.fields() : {};
      let shown = false;
      for (const [name, text] of Object.entries(named)) {
        if (messages[name]) {
          messages[name].textContent = text;
          controls[name].setAttribute("aria-invalid", "true");
          shown = true;
        }
      }
      const said = shown ? h("div", { class: "alert error", role: "alert" }, "Please correct the fields marked below.")
        : errorBox(error);
      formError.append(said);
    } finally {
      submit.disabled = false;
    }
  });
  return el;
}

/**
 * A table that loads one page at a time (next_cursor) — never everything at once.
 * columns: [{label, value: row => node|string, sort?: "api sort key"}],
 * load: cursor => Promise<{items,next_cursor}>.
 * sort + onSort: the current sort ("ip", "-ip" or "") and what a header click asks for.
 * total: () => Promise<number> — shown as "50 of 845".
 * select: {enabled: row => bool, label: row => text, onChange: rows => void} — a checkbox per
 * row (and one for every loaded row), for bulk actions.
 */
const SORT_MARKS = { ascending: " ▲", descending: " ▼" };

export function pagedTable({
  columns, load, empty = "Nothing here yet.", caption, rowProps, sort, onSort, total, select,
}) {
  const tbody = h("tbody");
  const status = h("div", { class: "table-status", role: "status" });
  const counter = h("p", { class: "table-count muted", "data-testid": "table-count" });
  const more = h("button", { type: "button", class: "button", hidden: true }, "Load more");
  const chosen = new Map();
  let cursor = null;
  let count = 0;
  let known = null;
  const showCount = () => {
    counter.textContent = known !== null ? `${count} of ${known}`
      : cursor ? `${count} shown; Load more for the rest` : count ? `${count} ${count === 1 ? "row" : "rows"}` : "";
  };
  const all = select ? h("input", { type: "checkbox", "aria-label": "Select every row shown", onchange: () => {
    for (const box of tbody.querySelectorAll("input.row-select")) {
      if (box.disabled) continue;
      box.checked = all.checked;
      box.dispatchEvent(new Event("change"));
    }
  } }) : null;
  const selectCell = (row) => {
    if (!select.enabled(row)) return h("td", { class: "select-cell" });
    const box = h("input", {
      type: "checkbox", class: "row-select", "aria-label": `Select ${select.label(row)}`,
      onchange: () => {
        if (box.checked) chosen.set(box, row); else chosen.delete(box);
        select.onChange([...chosen.values()]);
      },
    });
    return h("td", { class: "select-cell" }, box);
  };
  async function next() {
    more.disabled = true;
    clear(status);
    status.append(h("p", { class: "loading-line muted" }, "Loading…"));
    try {
      const page = await load(cursor);
      clear(status);
      for (const row of page.items) {
        const tr = h("tr", rowProps ? rowProps(row) : {});
        if (select) tr.append(selectCell(row));
        for (const col of columns) tr.append(h("td", { class: col.class }, col.value(row)));
        tbody.append(tr);
      }
      count += page.items.length;
      cursor = page.next_cursor;
      more.hidden = !cursor;
      showCount();
      if (count === 0) status.append(h("p", { class: "muted" }, empty));
    } catch (error) {
      clear(status).append(errorBox(error));
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener("click", next);
  const head = (c) => {
    if (!c.sort || !onSort) return h("th", { scope: "col" }, c.label);
    const way = sort === c.sort ? "ascending" : sort === `-${c.sort}` ? "descending" : null;
    return h("th", { scope: "col", "aria-sort": way || "none" }, h("button", {
      type: "button", class: "sort", title: `Sort by ${c.label}`,
      onclick: () => onSort(way === "ascending" ? `-${c.sort}` : c.sort),
    }, c.label, h("span", { class: "sort-mark", "aria-hidden": "true" }, SORT_MARKS[way] ?? " ↕")));
  };
  const table = h("table", { class: "table" },
    caption ? h("caption", {}, caption) : null,
    h("thead", {}, h("tr", {}, select ? h("th", { scope: "col", class: "select-cell" }, all) : null,
      columns.map(head))), tbody);
  // The wrapper scrolls sideways on narrow screens: focusable, so the keyboard can scroll it.
  const el = h("div", { class: "paged" }, counter, h("div", {
    class: "table-wrap", tabindex: 0, role: "region", "aria-label": caption || "Table",
  }, table), status, more);
  if (total) total().then((n) => { known = n; showCount(); }).catch(() => {});
  el.ready = next();
  el.selected = () => [...chosen.values()];
  return el;
}

// Every row a filter selects, page after page (1000 a page, at most `maxRows`), as a CSV file.
export async function downloadCsv(filename, columns, load, maxRows = 100000) {
  const quote = (v) => {
    const text = v === null || v === undefined ? "" : String(v);
    // A leading =, +, - or @ would be a formula to a spreadsheet (CSV injection): quote it away.
    const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
    return /[",\r\n']/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
  };
  const lines = [columns.map((c) => quote(c.label)).join(",")];
  let cursor = null;
  let rows = 0;
  do {
    const page = await load(cursor, 1000);
    for (const row of page.items) lines.push(columns.map((c) => quote(c.csv(row))).join(","));
    rows += page.items.length;
    cursor = page.next_cursor;
  } while (cursor && rows < maxRows);
  const url = URL.createObjectURL(new Blob([`${lines.join("\r\n")}\r\n`], { type: "text/csv" }));
  const a = h("a", { href: url, download: filename, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
  return rows;
}

export function link(href, text) {
  return h("a", { href }, text);
}

export function section(title, ...children) {
  const id = nextId("sec");
  return h("section", { class: "card", "aria-labelledby": id }, h("h2", { id }, title), ...children);
}
