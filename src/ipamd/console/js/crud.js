// A resource section: a paged list, a create form, edit and delete per row — writes only
// offered to roles that may make them.
import { can } from "./api.js";
import { clear, h } from "./dom.js";
import { confirmDialog, errorBox, form, notice, pagedTable, section } from "./ui.js";

export function crudSection({
  title, noun, columns, fields, editFields, list, create, update, remove, role = "operator",
  describe = (row) => row.name || row.id, extraActions, removeLabel = "Delete", impact, onChange,
  bulk = false,
}) {
  const writer = can(role);
  // Many rows at once (bulk): a checkbox per row, one confirmation naming them, then one
  // DELETE each (the API's rules and messages per row; the ones refused are listed).
  const many = writer && remove && bulk;
  const bulkButton = many ? h("button", {
    type: "button", class: "button small danger", disabled: true, onclick: () => removeMany(),
  }, `${removeLabel} selected`) : null;
  const panel = h("div", { class: "panel" });
  const tableSlot = h("div");
  const el = section(title);
  let table = null;

  function reload(message) {
    table = pagedTable({
      columns: writer && (update || remove || extraActions)
        ? [...columns, { label: "Actions", class: "actions-cell", value: actions }]
        : columns,
      load: list,
      select: many ? {
        enabled: () => true, label: (row) => `${noun} ${describe(row)}`,
        onChange: (rows) => {
          bulkButton.disabled = rows.length === 0;
          bulkButton.textContent = rows.length ? `${removeLabel} selected (${rows.length})` : `${removeLabel} selected`;
        },
      } : undefined,
    });
    if (bulkButton) { bulkButton.disabled = true; bulkButton.textContent = `${removeLabel} selected`; }
    clear(tableSlot).append(table);
    if (message) clear(panel).append(notice(message));
    if (message && onChange) onChange();  // a change was made: what shows it elsewhere redraws
    return table.ready;
  }

  function actions(row) {
    const cell = h("div", { class: "row-actions" });
    if (extraActions) cell.append(...extraActions(row, reload));
    if (update) {
      cell.append(h("button", {
        type: "button", class: "button small", "aria-label": `Edit ${noun} ${describe(row)}`,
        onclick: () => {
          clear(panel).append(form({
            title: `Edit ${noun} ${describe(row)}`, fields: editFields || fields, initial: row,
            onSubmit: async (values) => { await update(row, values); await reload(`${noun} saved.`); },
            onCancel: () => clear(panel),
          }));
          panel.querySelector("input, select, textarea")?.focus();
        },
      }, "Edit"));
    }
    if (remove) {
      cell.append(h("button", {
        type: "button", class: "button small danger", "aria-label": `${removeLabel} ${noun} ${describe(row)}`,
        onclick: async () => {
          // What the delete takes with it, asked for now (it may have changed since the list).
          let said = null;
          if (impact) {
            try { said = await impact(row); } catch (error) { said = `Its impact could not be read: ${error.message}`; }
          }
          if (!(await confirmDialog(`${removeLabel} ${noun} ${describe(row)}?`, removeLabel, said))) return;
          try { await remove(row); await reload(`${noun} ${removeLabel === "Delete" ? "deleted" : "revoked"}.`); }
          catch (error) { clear(panel).append(errorBox(error)); }
        },
      }, removeLabel));
    }
    return cell;
  }

  async function removeMany() {
    const rows = table.selected();
    if (!rows.length) return;
    const names = rows.slice(0, 5).map(describe).join(", ") + (rows.length > 5 ? `, and ${rows.length - 5} more` : "");
    let said = null;
    if (impact) {  // each row's impact, as a single delete says it (the first 20)
      const each = await Promise.all(rows.slice(0, 20).map((row) => impact(row).catch((error) => error.message)));
      said = each.map((text, k) => (text ? `${describe(rows[k])}: ${text}` : null)).filter(Boolean).join(" ") || null;
    }
    const question = `${removeLabel} ${rows.length} ${rows.length === 1 ? noun : `${noun}s`} (${names})?`;
    if (!(await confirmDialog(question, `${removeLabel} ${rows.length}`, said))) return;
    const refused = [];
    for (const row of rows) {
      try { await remove(row); } catch (error) { refused.push(`${describe(row)}: ${error.message}`); }
    }
    const done = rows.length - refused.length;
    await reload(`${done} ${done === 1 ? noun : `${noun}s`} ${removeLabel === "Delete" ? "deleted" : "revoked"}.`);
    const not = `Not ${removeLabel === "Delete" ? "deleted" : "revoked"}`;
    if (refused.length) panel.append(errorBox(new Error(`${not}: ${refused.join("; ")}`)));
  }

  if (writer && create) {
    el.querySelector("h2").after(h("div", { class: "section-tools" }, h("button", {
      type: "button", class: "button primary small",
      onclick: () => {
        clear(panel).append(form({
          title: `New ${noun}`, fields, submitLabel: `Create ${noun}`,
          onSubmit: async (values) => { await create(values); await reload(`${noun} created.`); },
          onCancel: () => clear(panel),
        }));
        panel.querySelector("input, select, textarea")?.focus();
      },
    }, `New ${noun}`)));
  }
  if (bulkButton) {
    const tools = el.querySelector(".section-tools") || h("div", { class: "section-tools" });
    if (!tools.isConnected) el.querySelector("h2").after(tools);
    tools.append(" ", bulkButton);
  }
  el.append(panel, tableSlot);
  el.reload = reload;
  el.ready = reload();
  return el;
}
