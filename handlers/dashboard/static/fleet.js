// streamcrawl fleet page: polls /api/fleet every second and redraws the table of crawls;
// its pause and resume buttons POST /api/crawls/NAME/pause|resume (JSON, as the
// server requires).
"use strict";

const $ = (id) => document.getElementById(id);
const fmt = (n) => (n >= 100 || Number.isInteger(n) ? Math.round(n).toLocaleString("en") : n.toFixed(1));
const active = (s) => s === "queued" || s === "running";

function cell(tr, content, cls) {
  const td = document.createElement("td");
  if (content instanceof Node) td.append(content); else td.textContent = content;
  if (cls) td.className = cls;
  tr.append(td);
  return td;
}

function draw(crawls) {
  const tbody = $("crawls").tBodies[0];
  tbody.replaceChildren(...crawls.map((c) => {
    const tr = document.createElement("tr");
    tr.dataset.crawl = c.name;
    const a = document.createElement("a");
    a.href = "/crawls/" + encodeURIComponent(c.name) + "/";
    a.textContent = c.name;
    cell(tr, a);
    const badge = document.createElement("span");
    badge.className = "badge " + c.state;
    badge.textContent = c.state;
    cell(tr, badge);
    cell(tr, fmt(c.pages_per_s), "num");
    cell(tr, fmt(c.items), "num");
    cell(tr, fmt(c.waiting), "num");
    cell(tr, fmt(c.dead_letters), "num");
    cell(tr, c.last_error || "", "err").title = c.last_error || "";
    const action = active(c.state) ? "pause" : c.state === "paused" ? "resume" : "";
    if (action) {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.action = action;
      b.textContent = action;
      cell(tr, b);
    } else {
      cell(tr, "");
    }
    return tr;
  }));
  $("empty").hidden = crawls.length > 0;
}

async function refresh() {
  try {
    const st = await (await fetch("/api/fleet", { cache: "no-store" })).json();
    $("error").textContent = st.error || "";
    draw(st.crawls);
  } catch (e) {
    $("error").textContent = "dashboard unreachable: " + e;
  }
}

$("crawls").addEventListener("click", async (ev) => {
  const b = ev.target.closest("button[data-action]");
  if (!b) return;
  const name = b.closest("tr").dataset.crawl;
  b.disabled = true;
  const res = await fetch("/api/crawls/" + encodeURIComponent(name) + "/" + b.dataset.action,
    { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
  const out = await res.json();
  $("error").textContent = res.ok ? "" : out.error;
  refresh();
});

refresh();
setInterval(refresh, 1000);
