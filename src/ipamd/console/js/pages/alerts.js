// Alerts: history and thresholds.
import { can, get, patch } from "../api.js";
import { h } from "../dom.js";
import { fmtTime, form, link, pagedTable, section } from "../ui.js";
import { alertSubject, statusBadge } from "../opsparts.js";

function thresholds(rules) {
  const sec = section("Thresholds",
    h("dl", { class: "kv" }, Object.entries(rules).map(([k, v]) => [h("dt", {}, k), h("dd", {}, String(v))])));
  if (can("admin")) {
    sec.append(form({
      title: "Change thresholds", submitLabel: "Save thresholds", initial: rules,
      fields: Object.keys(rules).map((k) => ({ name: k, label: k.replaceAll("_", " "), type: "number" })),
      onSubmit: async (v) => {
        await patch("/settings/alert-rules", v);
        window.dispatchEvent(new HashChangeEvent("hashchange"));
      },
    }));
  }
  return sec;
}

export async function alertsPage(view, { params }) {
  view.append(h("h1", {}, "Alerts"));
  const status = params.get("status") || "";
  view.append(h("p", {}, link("#/alerts", "All"), " · ", link("#/alerts?status=open", "Open"), " · ",
    link("#/alerts?status=cleared", "Cleared")));
  const list = pagedTable({
    caption: status ? `Alerts (${status})` : "Alerts, newest first",
    columns: [
      { label: "Opened", value: (a) => fmtTime(a.opened_at) },
      { label: "Cleared", value: (a) => fmtTime(a.cleared_at) || "—" },
      { label: "State", value: (a) => statusBadge(a.status) },
      { label: "Rule", value: (a) => a.rule },
      { label: "Summary", value: (a) => alertSubject(a) },
    ],
    load: (cursor) => get("/alerts", { ...(status ? { status } : {}), cursor }),
    empty: "No alerts.",
  });
  view.append(section("History", list));
  await list.ready;
  view.append(thresholds(await get("/settings/alert-rules")));
}
