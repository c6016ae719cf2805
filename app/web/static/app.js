// icefloe ui: polls the JSON API every 2 s and re-renders; charts are inline SVG.
"use strict";

const MIB = 1 << 20;
const POLL_MS = 2000;
const SVG = "http://www.w3.org/2000/svg";
const token = new URLSearchParams(location.search).get("token");
let selected = null;
let busy = false;

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  for (const c of children) el.append(c instanceof Node ? c : String(c ?? "-"));
  return el;
}

function s(tag, attrs, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

async function api(path) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const r = await fetch(path, { headers, cache: "no-store" });
  const body = await r.json();
  if (!r.ok) throw new Error(path + ": " + (body.error || r.status));
  return body;
}

const mib = (b) => (b == null ? "-" : (b / MIB).toFixed(1));
const rmse = (m) => (m == null ? "-" : (Math.sqrt(m) / MIB).toFixed(2));

function scoreBadge(score) {
  const cls = score >= 80 ? "good" : score >= 50 ? "fair" : "poor";
  return h("span", { class: "score " + cls }, score.toFixed(1));
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

function statsText(st) {
  if (!st || st.snapshot == null) return "none";
  return st.current ? "current" : `${Math.round(st.changed_share * 100)}% behind`;
}

function verdictText(v) {
  if (!v || v.state === "none") return "healthy";
  return v.state === "wait" ? "waits" : v.action;
}

// the tables list: a page at a time (worst first), filtered by name
const PAGE = 50;
let offset = 0, filter = "";

function tablesPath() {
  return `/api/tables?offset=${offset}&limit=${PAGE}&q=${encodeURIComponent(filter)}`;
}

function seenText(r) {
  return r.age_s == null ? "" : `seen ${r.age_s}s ago`;
}

function renderTables(page) {
  const rows = page.rows;
  const last = Math.min(page.total, page.offset + rows.length);
  document.getElementById("page-info").textContent =
    page.total ? `${page.offset + 1}–${last} of ${page.total}` : "no tables";
  document.getElementById("page-prev").disabled = page.offset <= 0;
  document.getElementById("page-next").disabled = last >= page.total;
  const tbody = document.querySelector("#tables tbody");
  fill(tbody, rows.map((r) => {
    if (r.seen === false) return h("tr", { "data-table": r.table }, h("td", {}, r.table), h("td", { colspan: 9, class: "muted" }, "not seen by the decider yet"));
    if (r.error) return h("tr", { "data-table": r.table }, h("td", {}, r.table), h("td", { colspan: 9, class: "error" }, r.error));
    const tr = h("tr", { "data-table": r.table, "data-score": r.health.score, title: seenText(r) },
      h("td", {}, r.table), h("td", { class: "score-cell" }, scoreBadge(r.health.score)),
      h("td", {}, r.health.worst || "-"), h("td", {}, r.files), h("td", {}, mib(r.bytes)),
      h("td", {}, r.partitions), h("td", {}, r.partitions_needing_work),
      h("td", {}, r.manifests), h("td", {}, r.snapshots), h("td", {}, statsText(r.statistics)));
    if (r.table === selected) tr.classList.add("selected");
    tr.addEventListener("click", () => { selected = r.table; poll(); });
    return tr;
  }));
  if (!selected && rows.length) selected = rows[0].table;
}

function barChart(values, labels, full) {
  const W = 320, H = 160, pad = 18, n = values.length;
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none" });
  const top = Math.max(1, ...values);
  const bw = (W - 2 * pad) / Math.max(1, n);
  values.forEach((v, i) => {
    const bh = ((H - 2 * pad) * v) / top;
    const rect = s("rect", { class: "mark" + (full && i === n - 1 ? " full" : ""), x: pad + i * bw + 1,
      y: H - pad - bh, width: Math.max(1, bw - 2), height: bh });
    rect.append(s("title", {}, `${labels[i]}: ${v}`));
    svg.append(rect);
    if (v) svg.append(s("text", { x: pad + i * bw + bw / 2, y: H - pad - bh - 2, "text-anchor": "middle" }, v));
  });
  svg.append(s("text", { x: pad, y: H - 4 }, labels[0]), s("text", { x: W - pad, y: H - 4, "text-anchor": "end" }, labels[n - 1]));
  return svg;
}

function lineChart(points) {
  const W = 320, H = 160, pad = 18;
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none" });
  if (!points.length) { svg.append(s("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "no actions yet")); return svg; }
  const top = Math.max(1, ...points.map((p) => Math.max(p.before ?? 0, p.after ?? 0)));
  const x = (i) => pad + ((W - 2 * pad) * (points.length === 1 ? 0.5 : i / (points.length - 1)));
  const y = (m) => H - pad - ((H - 2 * pad) * (m ?? 0)) / top;
  const d = points.map((p, i) => `${i ? "L" : "M"}${x(i)},${y(p.before)}L${x(i)},${y(p.after)}`).join("");
  svg.append(s("path", { class: "line", d }));
  points.forEach((p, i) => {
    const b = s("circle", { class: "mark before", cx: x(i), cy: y(p.before), r: 3 });
    b.append(s("title", {}, `${p.at}: RMSE ${rmse(p.before)} MiB before`));
    const a = s("circle", { class: "mark after", cx: x(i), cy: y(p.after), r: 3 });
    a.append(s("title", {}, `${p.at}: RMSE ${rmse(p.after)} MiB after`));
    svg.append(b, a);
  });
  svg.append(s("text", { x: pad, y: 12 }, `RMSE ≤ ${rmse(top)} MiB`));
  return svg;
}

function renderTable(t) {
  document.getElementById("table-title").textContent =
    `${t.table}: score ${t.health.score.toFixed(1)}, target ${mib(t.target_file_size_bytes)} MiB`;
  const labels = t.histogram.map((b) => (b.hi == null ? "≥1" : (b.lo / t.target_file_size_bytes).toFixed(1)));
  document.getElementById("histogram").replaceChildren(barChart(t.histogram.map((b) => b.files), labels, true));
  document.getElementById("entropy").replaceChildren(lineChart(t.entropy));
  fill(document.querySelector("#partitions tbody"), t.partitions.slice(0, 50).map((p) =>
    h("tr", {}, h("td", {}, p.partition || "(unpartitioned)"), h("td", {}, p.files), h("td", {}, mib(p.bytes)),
      h("td", {}, p.rmse_fraction.toFixed(2)), h("td", { title: p.verdict ? p.verdict.reason : "" }, verdictText(p.verdict)))));
}

function renderOverview(o) {
  const d = o.queue.depth;
  document.getElementById("summary").textContent =
    `redis ${o.redis} · leader ${o.leader || "-"} · scans avoided ${o.scans_avoided_pct}%`;
  const kv = h("div", { class: "kv" });
  const add = (k, v) => kv.append(h("span", { class: "muted" }, k), h("span", {}, v));
  add("queue", `pending ${d.pending} · ready ${d.ready} · in flight ${d.inflight} · dead ${d.dead}`);
  add("pending by class", JSON.stringify(o.queue.pending_by_class));
  for (const f of o.inflight) add("lease", `${f.table} ${f.partition || ""} ${f.action}: age ${f.lease_age_s}s, ${f.lease_left_s}s left`);
  for (const x of o.dead) add("dead", `${x.id} after ${x.attempts}: ${x.last_error}`);
  add("deciders", Object.entries(o.deciders).map(([k, v]) => `${k} (${v} shards)`).join(", ") || "-");
  add("actors", Object.entries(o.actors).map(([k, v]) => `${k} (seen ${v}s ago)`).join(", ") || "-");
  document.getElementById("queue").replaceChildren(kv);
}

function renderHistory(rows) {
  const bytes = rows.reduce((a, r) => a + (r.bytes_rewritten || 0), 0);
  const removed = rows.reduce((a, r) => a + (r.files_removed || 0), 0);
  document.getElementById("savings").textContent =
    `${rows.length} actions: ${mib(bytes)} MiB rewritten, ${removed} files removed`;
  fill(document.querySelector("#actions tbody"), rows.map((r) => {
    const outcome = (r.outcome || (r.ok ? "ok" : "failed")) + (r.pending ? " (pending)" : "");
    const manifests = r.manifests_before == null ? "-" : `${r.manifests_before} → ${r.manifests_after ?? "-"}`;
    const planning = r.plan_ms ? `${r.plan_ms[0].toFixed(1)} → ${r.plan_ms[1].toFixed(1)}` : "-";
    return h("tr", { "data-item-id": r.item_id || "", "data-record-id": r.record_id },
      h("td", {}, r.ended_at.slice(0, 19).replace("T", " ")), h("td", {}, r.table_name), h("td", {}, r.action),
      h("td", {}, (r.partitions || []).length || "-"), h("td", {}, mib(r.bytes_rewritten)), h("td", {}, r.files_removed),
      h("td", {}, `${rmse(r.mse_before)} → ${rmse(r.mse_after)}` +
        (r.mse_predicted == null ? "" : ` (planned ${rmse(r.mse_predicted)})`)), h("td", {}, manifests),
      h("td", { class: "planning" }, planning), h("td", {}, r.seconds == null ? "-" : r.seconds.toFixed(1)), h("td", {}, outcome));
  }));
}

function renderSkew(reports) {
  const box = document.getElementById("skew");
  if (!reports.length) { box.replaceChildren(h("p", { class: "muted" }, "no stored reports (icefloe skew detect)")); return; }
  box.replaceChildren(...reports.map((r) => {
    const keys = Object.entries(r.keys || {}).map(([col, e]) =>
      h("li", {}, `${col}: ` + ((e.hot_keys || []).map((k) => `${k.key} (${(100 * k.share).toFixed(1)}%)`).join(", ") || "no hot keys")));
    return h("div", { "data-skew": r.table }, h("h3", {}, `${r.table} @ ${r.snapshot_id}`),
      h("p", { class: "muted" }, `${r.rows} rows, ${r.partitions} partitions, ${(r.skewed_partitions || []).length} skewed; ${r.created_at}`),
      h("ul", {}, ...keys));
  }));
}

// each panel on its own: Redis away still shows the tables, a broken table the rest
const PANELS = [
  ["/api/overview", renderOverview],
  [tablesPath, renderTables],
  ["/api/history", renderHistory],
  ["/api/skew", renderSkew],
];

async function poll() {
  if (busy) return;
  busy = true;
  const errors = [];
  const show = async (path, render) => {
    const at = typeof path === "function" ? path() : path;
    try { render(await api(at)); } catch (e) { errors.push(String(e.message || e)); }
  };
  try {
    await Promise.all(PANELS.map(([path, render]) => show(path, render)));
    if (selected) await show("/api/table?name=" + encodeURIComponent(selected), renderTable);
    const err = document.getElementById("error");
    err.textContent = errors.join(" · ");
    err.hidden = !errors.length;
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } finally {
    busy = false;
  }
}

document.getElementById("table-filter").addEventListener("input", (e) => {
  filter = e.target.value; offset = 0; poll();
});
document.getElementById("page-prev").addEventListener("click", () => { offset = Math.max(0, offset - PAGE); poll(); });
document.getElementById("page-next").addEventListener("click", () => { offset += PAGE; poll(); });

poll();
setInterval(poll, POLL_MS);
