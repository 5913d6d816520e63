// The address map: every address of a subnet as a cell coloured by state; a subnet larger
// than a /24 is shown as /24 blocks first, with drill-down. Redrawn for any moment ("As of").
import { get } from "./api.js";
import { clear, h } from "./dom.js";
import { errorBox, fmtTime } from "./ui.js";

// network, broadcast and gateway are the subnet's own addresses (never "free"): drawn from the
// subnet itself, not from the history answer.
export const STATES = ["free", "pool", "excluded", "reserved", "assigned", "leased", "declined",
  "network", "broadcast", "gateway"];
const CODE = Object.fromEntries(STATES.map((s, i) => [s, i]));
const USED = ["reserved", "assigned", "leased", "declined", "gateway"].map((s) => CODE[s]);

const ipToInt = (ip) => ip.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
const intToIp = (n) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");

// The subnet's own addresses: network and broadcast of a /30 or larger (a /31 or /32 has
// none, RFC 3021), and the gateway unless something else holds it (then that is shown).
function markOwn(model, subnet) {
  const bits = Number(subnet.cidr.split("/")[1]);
  if (bits <= 30) {
    if (!model.holders.has(0)) model.states[0] = CODE.network;
    if (!model.holders.has(model.size - 1)) model.states[model.size - 1] = CODE.broadcast;
  }
  if (subnet.gateway && !subnet.gateway.includes(":")) {
    const g = ipToInt(subnet.gateway) - model.base;
    if (g >= 0 && g < model.size && !model.holders.has(g)) model.states[g] = CODE.gateway;
  }
}

function countStates(model) {
  const counts = Object.fromEntries(STATES.map((s) => [s, 0]));
  for (let i = 0; i < model.size; i += 1) counts[STATES[model.states[i]]] += 1;
  return counts;
}

function decode(data) {
  const base = ipToInt(data.cidr.split("/")[0]);
  const size = data.size;
  const states = new Uint8Array(size);
  for (const r of data.ranges) {
    const a = ipToInt(r.start) - base;
    const b = ipToInt(r.end) - base;
    states.fill(CODE[r.state] ?? 0, Math.max(0, a), Math.min(size, b + 1));
  }
  const cols = data.addresses.columns;
  const iIp = cols.indexOf("ip");
  const holders = new Map();
  for (const row of data.addresses.rows) {
    const i = ipToInt(row[iIp]) - base;
    if (i < 0 || i >= size) continue;
    const rec = {};
    cols.forEach((c, k) => { rec[c] = row[k]; });
    states[i] = CODE[rec.state] ?? states[i];
    holders.set(i, rec);
  }
  return { base, size, states, holders };
}

function describe(model, i) {
  const ip = intToIp(model.base + i);
  const state = STATES[model.states[i]];
  const rec = model.holders.get(i);
  const parts = [ip, state];
  if (rec) {
    if (rec.mac) parts.push(`MAC ${rec.mac}`);
    if (rec.hostname) parts.push(`host ${rec.hostname}`);
  }
  return parts.join(" — ");
}

function legend(counts) {
  // The subnet's own addresses are listed only when the subnet has them.
  const shown = STATES.filter((s) => counts[s] || !["network", "broadcast", "gateway"].includes(s));
  return h("ul", { class: "legend", "aria-label": "Legend" }, shown.map((s) =>
    h("li", {}, h("span", { class: `swatch st-${s}`, "aria-hidden": "true" }), `${s} ${counts[s] ?? 0}`)));
}

// A /24 block's colour says how full it is.
const HEAT = [[0, "none in use"], [25, "under 25 %"], [50, "25–50 %"], [80, "50–80 %"], [101, "80 % or more"]];
const heatOf = (percent) => (percent === 0 ? 0 : HEAT.findIndex(([limit], k) => k > 0 && percent < limit));
function heatLegend() {
  return h("ul", { class: "legend", "aria-label": "Block colours" }, HEAT.map(([, label], k) =>
    h("li", {}, h("span", { class: `swatch heat-${k}`, "aria-hidden": "true" }), label)));
}

// Arrow keys move between cells (one tab stop for the whole grid).
function roving(grid, columns) {
  grid.addEventListener("keydown", (e) => {
    const cells = [...grid.querySelectorAll("[data-i]")];
    const at = cells.indexOf(document.activeElement);
    if (at < 0) return;
    const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: columns, ArrowUp: -columns }[e.key];
    if (!step) return;
    e.preventDefault();
    const next = cells[Math.max(0, Math.min(cells.length - 1, at + step))];
    cells[at].tabIndex = -1;
    next.tabIndex = 0;
    next.focus();
  });
}

function cellsView(model, from, count, info) {
  const span = `${intToIp(model.base + from)} to ${intToIp(model.base + from + count - 1)}`;
  const grid = h("div", { class: "map-grid", role: "group", "aria-label": `Addresses ${span}` });
  const frag = document.createDocumentFragment();
  for (let k = 0; k < count; k += 1) {
    const i = from + k;
    const text = describe(model, i);
    frag.append(h("button", {
      type: "button", class: `cell st-${STATES[model.states[i]]}`, tabindex: k === 0 ? 0 : -1,
      "aria-label": text, title: text,
      dataset: { i: String(i), ip: intToIp(model.base + i), state: STATES[model.states[i]] },
    }));
  }
  grid.append(frag);
  const show = (e) => {
    const cell = e.target.closest("[data-i]");
    if (!cell) return;
    const ip = intToIp(model.base + Number(cell.dataset.i));
    info.replaceChildren(h("span", {}, describe(model, Number(cell.dataset.i))), " ",
      h("a", { href: `#/history?ip=${ip}` }, `History of ${ip}`));
  };
  grid.addEventListener("mouseover", show);
  grid.addEventListener("focusin", show);
  grid.addEventListener("click", show);
  roving(grid, 16);
  return grid;
}

function blocksView(model, onOpen) {
  const grid = h("div", { class: "map-blocks", role: "group", "aria-label": "/24 blocks" });
  const frag = document.createDocumentFragment();
  for (let b = 0; b * 256 < model.size; b += 1) {
    const counts = new Array(STATES.length).fill(0);
    const end = Math.min(model.size, (b + 1) * 256);
    for (let i = b * 256; i < end; i += 1) counts[model.states[i]] += 1;
    const used = USED.reduce((a, code) => a + counts[code], 0);
    const percent = (100 * used) / (end - b * 256);
    const pooled = counts[CODE.pool];
    const label = `${intToIp(model.base + b * 256)}/24: ${used} of ${end - b * 256} in use (${percent.toFixed(1)} %)`
      + (pooled ? `, ${pooled} free in pools` : "");
    frag.append(h("button", {
      type: "button", class: `block heat-${heatOf(percent)}`, tabindex: b === 0 ? 0 : -1, title: label,
      "aria-label": label, dataset: { i: String(b), block: intToIp(model.base + b * 256), used: String(used) },
    }));
  }
  grid.append(frag);
  grid.addEventListener("click", (e) => {
    const block = e.target.closest("[data-block]");
    if (block) onOpen(Number(block.dataset.i));
  });
  roving(grid, 16);
  return grid;
}

function localInputValue(date) {
  const pad = (n) => String(n).padStart(2, "0");
  const day = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
  return `${day}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

const WEEK_MINUTES = 7 * 24 * 60;

export function addressMap(subnetId, subnet) {
  const tz = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const body = h("div", { class: "map-body" });
  const info = h("div", { class: "map-info", role: "status", "aria-live": "polite" },
    "Point at an address to see who holds it.");
  const asOfLabel = h("span", { class: "as-of-label", "data-testid": "as-of" }, "now");
  const picker = h("input", { id: "map-at", type: "datetime-local", step: 1 });
  const slider = h("input", {
    id: "map-slider", type: "range", min: 0, max: WEEK_MINUTES, step: 15, value: WEEK_MINUTES, "aria-valuetext": "now",
  });
  const nowButton = h("button", { type: "button", class: "button small" }, "Now");
  let block = null;
  let model = null;
  let timer = null;
  let seq = 0;
  let moment = null; // null: now

  function backToBlocks() {
    const b = block;
    block = null;
    draw();
    body.querySelector(`[data-i="${b}"]`)?.focus();
  }

  function draw() {
    clear(body);
    if (!model) return;
    if (model.before) {
      body.append(h("p", { class: "alert ok", "data-testid": "not-yet" },
        `This subnet did not exist then: it was created ${fmtTime(subnet.created_at)}.`));
      return;
    }
    if (model.size <= 256) {
      body.append(cellsView(model, 0, model.size, info));
    } else if (block === null) {
      body.append(h("p", { class: "muted" },
        "Each square is a /24, coloured by how much of it is in use. Open one to see its addresses."),
      heatLegend(), blocksView(model, (b) => { block = b; draw(); body.querySelector(".cell")?.focus(); }));
    } else {
      body.append(h("div", { class: "row" },
        h("button", { type: "button", class: "button small", onclick: backToBlocks }, "← All /24 blocks"),
        h("strong", {}, `${intToIp(model.base + block * 256)}/24`)),
      cellsView(model, block * 256, Math.min(256, model.size - block * 256), info));
    }
  }

  const legendSlot = h("div");
  async function load() {
    const mine = ++seq;
    const params = { tz };
    if (moment) params.at = moment.toISOString();
    const started = performance.now();
    try {
      const data = await get(`/subnets/${subnetId}/history`, params);
      if (mine !== seq) return;
      model = decode(data);
      // History before the subnet existed is empty, not free (the API answers the range).
      model.before = !!(subnet && moment && moment < new Date(subnet.created_at));
      if (subnet) markOwn(model, subnet);
      clear(legendSlot).append(model.before ? null : legend(subnet ? countStates(model) : data.counts));
      asOfLabel.textContent = moment ? fmtTime(data.at) : `now (${fmtTime(data.at)})`;
      draw();
      el.dataset.drawMs = String(Math.round(performance.now() - started));
      el.dataset.loaded = String(mine);
    } catch (error) {
      if (mine === seq) clear(body).append(errorBox(error));
    }
  }

  function setMoment(date, from) {
    moment = date;
    if (from !== "picker") picker.value = date ? localInputValue(date) : "";
    if (from !== "slider") {
      const ago = date ? Math.round((Date.now() - date.getTime()) / 60000) : 0;
      slider.value = String(WEEK_MINUTES - Math.max(0, Math.min(WEEK_MINUTES, ago)));
    }
    slider.setAttribute("aria-valuetext", date ? date.toLocaleString() : "now");
    clearTimeout(timer);
    timer = setTimeout(load, from === "slider" ? 250 : 0);
  }

  slider.addEventListener("input", () => {
    const ago = WEEK_MINUTES - Number(slider.value);
    setMoment(ago === 0 ? null : new Date(Date.now() - ago * 60000), "slider");
  });
  picker.addEventListener("change", () => {
    const d = picker.value ? new Date(picker.value) : null;
    setMoment(d && !Number.isNaN(d.getTime()) ? d : null, "picker");
  });
  nowButton.addEventListener("click", () => setMoment(null));

  const el = h("div", { class: "address-map" },
    h("div", { class: "map-controls" },
      h("label", { for: "map-at" }, "As of"), picker,
      h("label", { for: "map-slider" }, "Past 7 days"), h("span", { class: "muted" }, "−7 d"), slider,
      h("span", { class: "muted" }, "now"),
      nowButton, h("span", {}, "Showing: ", asOfLabel)),
    legendSlot, info, body);
  el.ready = load();
  // Redrawn after any change on the page (a pool, a reservation, …), at the moment shown.
  el.refresh = () => load();
  return el;
}
