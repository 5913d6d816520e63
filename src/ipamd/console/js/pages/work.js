// Work: the outbox's deliveries by kind and state; attempts, Replay, CSV export.
import { can, get, post, query } from "../api.js";
import { clear, h } from "../dom.js";
import { badge, confirmDialog, errorBox, fmtTime, notice, pagedTable, section } from "../ui.js";
import { csvButton, dash, pageOf } from "../lists.js";

const target = (r) => r.target || (r.webhook_id ? `webhook ${r.webhook_name || `${r.webhook_id} (deleted)`}` : "—");
const KINDS = [["webhook", "Webhooks", "webhook"], ["dns", "DNS", "DNS"], ["alert", "Alerts", "alert"]];
const STATES = ["", "pending", "retrying", "failed", "delivered"];
const deliveries = (n) => `${n} ${n === 1 ? "delivery" : "deliveries"}`;
// Said once on the page drawn after "Replay all failed".
const NOTICE_KEY = "ipamd.work.notice";

// The badge and the row's state class follow the row's state (a replayed row is no longer red).
function showState(tr, state) {
  tr.querySelector(".badge").replaceWith(badge(state));
  tr.dataset.state = state;
}

async function replayAll(kind, noun, replayable, slot) {
  const many = replayable === 1 ? `1 failed ${noun} delivery` : `${replayable} failed ${noun} deliveries`;
  const question = `Replay ${many}? Each is queued again with a fresh attempt budget.`;
  if (!(await confirmDialog(question, `Replay ${replayable}`))) return;
  let replayed = 0;
  try {
    // The API takes a batch per call and says when more remain; bounded, as a row count is.
    for (let round = 0; round < 1000; round += 1) {
      const r = await post(`/outbox/replay${query({ kind, state: "failed" })}`);
      replayed += r.replayed;
      if (!r.more || r.replayed === 0) break;
    }
  } catch (error) { clear(slot).append(errorBox(error)); return; }
  sessionStorage.setItem(NOTICE_KEY, `Queued ${deliveries(replayed)} for delivery again.`);
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}

function attemptsTable(d) {
  const heads = ["#", "At", "Duration", "Status", "Error", "Response"];
  const row = (a) => h("tr", {}, h("td", {}, String(a.attempt)), h("td", {}, fmtTime(a.at)),
    h("td", {}, `${a.duration_ms} ms`), h("td", {}, dash(a.status)), h("td", {}, dash(a.error)),
    h("td", {}, h("code", {}, dash(a.response))));
  return h("table", { class: "table" },
    h("thead", {}, h("tr", {}, heads.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, (d.history || []).map(row)));
}

async function showAttempts(id, slot) {
  clear(slot);
  try {
    const d = await get(`/outbox/${id}`);
    slot.append(section(`Attempts of ${d.topic} → ${target(d)}`, attemptsTable(d),
      (d.history || []).length ? null : h("p", { class: "muted" }, "Not attempted yet.")));
  } catch (e) { slot.append(errorBox(e)); }
}

function actionsCell(r, detail) {
  const replay = async (e) => {
    if (!(await confirmDialog(`Replay this ${r.topic} delivery to ${target(r)}?`, "Replay"))) return;
    try {
      const fresh = await post(`/outbox/${r.id}/replay`);
      showState(e.target.closest("tr"), fresh.state || "pending");
      e.target.remove();
      clear(detail).append(notice("Queued for delivery again."));
    } catch (error) { clear(detail).append(errorBox(error)); }
  };
  return h("div", { class: "row-actions" },
    h("button", { type: "button", class: "button small", onclick: () => showAttempts(r.id, detail) }, "Attempts"),
    can("operator") && r.replayable ? h("button", {
      type: "button", class: "button small", "aria-label": `Replay ${r.topic} ${r.id}`, onclick: replay,
    }, "Replay") : null);
}

const CSV_COLUMNS = [["Created", (r) => r.created_at], ["Kind", (r) => r.kind], ["Topic", (r) => r.topic],
  ["Target", target], ["State", (r) => r.state], ["Attempts", (r) => r.attempts],
  ["Last result", (r) => r.last_error || r.last_status], ["Delivered", (r) => r.delivered_at], ["Id", (r) => r.id]]
  .map(([label, csv]) => ({ label, csv }));

// Tabs by kind and chips by state, each a link of its own.
function filterLinks(kind, state) {
  const tabs = h("div", { class: "tabs", role: "tablist", "aria-label": "Work kind" }, KINDS.map(([k, label]) =>
    h("a", {
      role: "tab", "aria-selected": String(k === kind), href: `#/work${query({ kind: k, state })}`,
      class: k === kind ? "tab active" : "tab",
    }, label)));
  const states = h("div", { class: "chips", role: "group", "aria-label": "State" }, STATES.map((s) =>
    h("a", {
      href: `#/work${query({ kind, state: s })}`, class: s === state ? "chip active" : "chip",
      "aria-current": s === state ? "true" : null,
    }, s || "all")));
  return [tabs, states];
}

// How many deliveries the filter selects, and "Replay all failed" when some can be.
async function countAndReplay(kind, noun, state, summary, detail) {
  try {
    const n = await get("/outbox/count", { kind, state });
    summary.append(h("span", { "data-testid": "work-count" }, deliveries(n.count)));
    if (can("operator") && n.replayable > 0 && (state === "" || state === "failed")) {
      summary.append(h("button", {
        type: "button", class: "button small danger",
        onclick: () => replayAll(kind, noun, n.replayable, detail),
      }, `Replay all failed (${n.replayable})`));
    }
  } catch (error) { summary.append(errorBox(error)); }
}

export async function work(view, { params }) {
  const kind = params.get("kind") || "webhook";
  const state = params.get("state") || "";
  const noun = (KINDS.find(([k]) => k === kind) || KINDS[0])[2];
  view.append(h("h1", {}, "Work"));
  const detail = h("div", { class: "panel" });
  const said = sessionStorage.getItem(NOTICE_KEY);
  if (said) {
    sessionStorage.removeItem(NOTICE_KEY);
    detail.append(notice(said));
  }
  const summary = h("div", { class: "row table-tools" });
  const table = pagedTable({
    rowProps: (r) => ({ dataset: { state: r.state } }),
    columns: [
      { label: "Created", value: (r) => fmtTime(r.created_at) }, { label: "Topic", value: (r) => r.topic },
      { label: "Target", value: target }, { label: "State", value: (r) => badge(r.state) },
      { label: "Attempts", value: (r) => String(r.attempts) },
      { label: "Last result", value: (r) => dash(r.last_error || r.last_status) },
      { label: "Actions", value: (r) => actionsCell(r, detail) },
    ],
    load: pageOf("/outbox", { kind, state }), empty: "No deliveries.",
  });
  summary.append(csvButton(`work-${kind}.csv`, CSV_COLUMNS,
    (cursor, limit) => get("/outbox", { kind, state, cursor, limit }), detail, deliveries));
  view.append(...filterLinks(kind, state), summary, detail, table);
  await countAndReplay(kind, noun, state, summary, detail);
  await table.ready;
}
