// streamcrawl dashboard: polls /api/status every second and /api/dead every 5 s, draws
// line charts on canvases, and re-queues dead letters through POST /api/dead/retry. The
// API paths are relative to the page: a crawl of the fleet page is served under
// /crawls/NAME/.
"use strict";

const colors = ["#2563eb", "#16a34a", "#d97706", "#9333ea"];
const $ = (id) => document.getElementById(id);
const fmt = (n) => (n >= 100 || Number.isInteger(n) ? Math.round(n).toLocaleString("en") : n.toFixed(1));
const mib = (b) => (b / 1048576).toFixed(1) + " MiB";

// chart draws series (arrays of [t, v]) on a canvas, with a y axis from 0.
function chart(canvas, series, labels) {
  if (canvas.clientWidth && canvas.width !== canvas.clientWidth) canvas.width = canvas.clientWidth;
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, left = 48, bottom = 18, top = 16;
  ctx.clearRect(0, 0, w, h);
  let tMin = Infinity, tMax = -Infinity, vMax = 1;
  for (const s of series) for (const [t, v] of s) { tMin = Math.min(tMin, t); tMax = Math.max(tMax, t); vMax = Math.max(vMax, v); }
  if (!isFinite(tMin) || tMax === tMin) { tMax = tMin + 1; }
  const x = (t) => left + ((t - tMin) / (tMax - tMin)) * (w - left - 8);
  const y = (v) => h - bottom - (v / vMax) * (h - bottom - top);
  ctx.strokeStyle = "#e6e8ec"; ctx.fillStyle = "#5b6475"; ctx.font = "11px system-ui";
  for (let i = 0; i <= 4; i++) {
    const v = (vMax * i) / 4;
    ctx.beginPath(); ctx.moveTo(left, y(v)); ctx.lineTo(w - 8, y(v)); ctx.stroke();
    ctx.fillText(fmt(v), 2, y(v) + 4);
  }
  ctx.fillText(Math.round((tMax - tMin) / 1000) + " s", w - 40, h - 4);
  series.forEach((s, i) => {
    ctx.strokeStyle = colors[i % colors.length]; ctx.lineWidth = 2; ctx.beginPath();
    s.forEach(([t, v], j) => (j ? ctx.lineTo(x(t), y(v)) : ctx.moveTo(x(t), y(v))));
    ctx.stroke();
    ctx.fillStyle = colors[i % colors.length];
    ctx.fillText(labels[i], left + 8 + i * 110, 11);
  });
}

// consumers says how many of a stage's registered consumers are alive (read lately),
// as the page first rendered on the server does.
const consumers = (p, g) => fmt((p.alive || {})[g] || 0) + " of " + fmt(p.consumers[g] || 0);

function rows(tbody, items, cells) {
  tbody.replaceChildren(...items.map((it) => {
    const tr = document.createElement("tr");
    for (const [text, cls] of cells(it)) {
      const td = document.createElement("td");
      if (text instanceof Node) td.append(text); else td.textContent = text;
      if (cls) td.className = cls;
      tr.append(td);
    }
    return tr;
  }));
}

async function refresh() {
  let st;
  try {
    const res = await fetch("api/status", { cache: "no-store" });
    st = await res.json();
  } catch (e) {
    $("error").textContent = "dashboard unreachable: " + e;
    return;
  }
  $("crawl").textContent = st.crawl;
  $("error").textContent = st.error || "";
  const h = st.history || [];
  if (!h.length) return;
  const last = h[h.length - 1];
  const state = last.done ? "done" : last.continuous ? "continuous" : "running"; // stateOf in server.go
  $("state").textContent = state;
  $("state").className = "badge " + state;
  $("pages-rate").textContent = fmt(last.pages_rate);
  $("items-rate").textContent = fmt(last.items_rate);
  $("pages").textContent = fmt(last.pages);
  $("items").textContent = fmt(last.items);
  $("frontier").textContent = fmt(last.frontier + last.delayed);
  $("revisits").textContent = fmt(last.revisits) + " (" + fmt(last.revisits_due) + ")";
  $("dead").textContent = fmt(last.dead);
  $("redis").textContent = mib(last.redis_used);
  const s = (f) => h.map((p) => [p.at, f(p)]);
  chart($("chart-rates"), [s((p) => p.pages_rate), s((p) => p.items_rate)], ["pages/s", "items/s"]);
  chart($("chart-queue"), [s((p) => p.frontier), s((p) => p.delayed), s((p) => Math.max(0, p.unread.fetch || 0)), s((p) => p.revisits_due + p.revisits_next_hour)],
    ["frontier", "delayed", "fetch unread", "revisits (hour)"]);
  chart($("chart-pending"), ["fetch", "parse", "store"].map((g) => s((p) => p.pending[g] || 0)), ["fetch", "parse", "store"]);
  chart($("chart-memory"), [s((p) => p.redis_used / 1048576)], ["used"]);
  rows($("stages").tBodies[0], ["fetch", "parse", "store"], (g) => [[g], [consumers(last, g)], [fmt(last.pending[g] || 0)],
    [(last.unread[g] ?? 0) < 0 ? "?" : fmt(last.unread[g] || 0)]]);
  rows($("slowest").tBodies[0], st.slowest || [], (x) => [[x.host], [fmt(x.requests)], [fmt(x.avg_ms)]]);
  rows($("failing").tBodies[0], st.failing || [], (x) => [[x.host], [fmt(x.requests)], [fmt(x.failures)]]);
}

async function retry(ids, button) {
  button.disabled = true;
  const res = await fetch("api/dead/retry", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ ids }) });
  const body = await res.json();
  button.textContent = res.ok ? "re-queued" : "failed: " + body.error;
  button.className = res.ok ? "done" : "";
  setTimeout(refreshDead, 1000);
}

let shownDead = [];
async function refreshDead() {
  let list;
  try {
    list = await (await fetch("api/dead", { cache: "no-store" })).json();
  } catch (e) { return; }
  if (!Array.isArray(list)) return;
  shownDead = list.map((d) => d.id);
  rows($("deadletters").tBodies[0], list, (d) => {
    const b = document.createElement("button");
    b.type = "button"; b.textContent = "retry"; b.dataset.id = d.id; b.className = "retry";
    b.onclick = () => retry([d.id], b);
    return [[d.stage], [d.url || "-", "url"], [d.error, "err"], [b]];
  });
}

$("retry-all").onclick = (e) => shownDead.length && retry(shownDead, e.target);
refresh(); refreshDead();
setInterval(refresh, 1000);
setInterval(refreshDead, 5000);
