// The status page served at GET / on the admin listener. Self-contained: inline style, script and
// SVG, the system's own fonts; it polls /status.json every second.
#include "proxy/status.h"

namespace shellac::proxy {

const std::string& StatusPage() {
  static const std::string page = R"HTML(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>shellac status</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:20px 24px;background:#f6f7f9;color:#1f2328}
h1{font-size:18px;margin:0}
#state{color:#59636e;font-size:12px;margin-top:2px}
#charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:14px;margin-top:14px}
.chart{background:#fff;border:1px solid #d1d9e0;border-radius:6px;padding:10px 12px 6px}
.chart h2{font-size:13px;margin:0 0 4px;font-weight:600;display:flex;justify-content:space-between}
.chart h2 span{font-weight:400;font-variant-numeric:tabular-nums}
svg{width:100%;height:auto;display:block}
svg text{font-size:10px;fill:#59636e;font-family:inherit}
svg .rule{stroke:#e6e9ed;stroke-width:1}
svg .line{fill:none;stroke-width:1.5;stroke-linejoin:round}
.key{font-size:11px;color:#59636e}
.key b{display:inline-block;width:10px;height:3px;vertical-align:middle;margin:0 3px 0 8px}
p.foot{color:#59636e;font-size:12px}
</style></head>
<body>
<h1>shellac</h1>
<div id="state">waiting for the first sample&hellip;</div>
<div id="charts"></div>
<p class="foot">The last 15 minutes, one sample a second, kept by shellac itself
(<a href="/status.json">/status.json</a>). Every counter: <a href="/metrics">/metrics</a>;
in a terminal: <code>shellac stat</code>.</p>
<script>
"use strict";
const SPAN = 900, W = 440, H = 150, L = 64, R = 6, T = 8, B = 18;
let data = [], last = 0, budget = 0;
function bytes(v) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0;
  while (v >= 1024 && i < 4) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : v.toFixed(0)) + " " + u[i];
}
function num(v) { return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2); }
const charts = [
  {id: "rps", title: "Requests/s", series: [[1, "#0969da", "requests/s"]], fmt: num},
  {id: "hit", title: "Store hit ratio", series: [[2, "#1a7f37", "hits / lookups"]], max: () => 1,
   fmt: v => (v * 100).toFixed(1) + "%"},
  {id: "render", title: "Render time", series: [[3, "#8250df", "p50"], [4, "#bc4c00", "p99"]],
   fmt: v => num(v) + " ms"},
  {id: "store", title: "Store fill", series: [[5, "#1b7c83", "bytes"]], fmt: bytes,
   note: v => budget ? " of " + bytes(budget) + " (" + (100 * v / budget).toFixed(1) + "%)" : ""},
  {id: "errors", title: "Upstream errors/s", series: [[6, "#cf222e", "errors/s"]], fmt: num},
];
function nice(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v))), m = v / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}
function setup() {
  const box = document.getElementById("charts");
  for (const c of charts) {
    const div = document.createElement("div");
    div.className = "chart";
    const key = c.series.map(s => '<b style="background:' + s[1] + '"></b>' + s[2]).join("");
    div.innerHTML = "<h2>" + c.title + ' <span id="v-' + c.id + '">&ndash;</span></h2>' +
      '<svg id="c-' + c.id + '" viewBox="0 0 ' + W + " " + H + '" data-samples="0"></svg>' +
      '<div class="key">' + key + "</div>";
    box.appendChild(div);
  }
}
function draw(c) {
  const svg = document.getElementById("c-" + c.id);
  const now = data.length ? data[data.length - 1][0] : Math.floor(Date.now() / 1000);
  const t0 = now - SPAN;
  let max = c.max ? c.max() : null;
  if (!max) {
    max = 0;
    for (const s of data) for (const [i] of c.series) if (s[i] !== null && s[i] > max) max = s[i];
    max = nice(max);
  }
  const x = t => L + (W - L - R) * (t - t0) / SPAN;
  const y = v => T + (H - T - B) * (1 - Math.min(v, max) / max);
  let out = "";
  for (const f of [0, 0.5, 1]) {
    const yy = y(max * f).toFixed(1);
    out += '<line class="rule" x1="' + L + '" x2="' + (W - R) + '" y1="' + yy + '" y2="' + yy + '"/>';
    out += '<text x="' + (L - 4) + '" y="' + (+yy + 3) + '" text-anchor="end">' + c.fmt(max * f) + "</text>";
  }
  out += '<text x="' + L + '" y="' + (H - 4) + '">&minus;15 min</text>';
  out += '<text x="' + (W - R) + '" y="' + (H - 4) + '" text-anchor="end">now</text>';
  let points = 0, current = [];
  for (const [i, color] of c.series) {
    let d = "", pen = "M", latest = null;
    for (const s of data) {
      if (s[i] === null) { pen = "M"; continue; }
      d += pen + x(s[0]).toFixed(1) + " " + y(s[i]).toFixed(1) + " ";
      pen = "L";
      points++;
      latest = s[i];
    }
    if (d) out += '<path class="line" stroke="' + color + '" d="' + d.trim() + '"/>';
    current.push(latest === null ? "\u2013" : c.fmt(latest) + (c.note ? c.note(latest) : ""));
  }
  svg.innerHTML = out;
  svg.setAttribute("data-samples", String(points));
  document.getElementById("v-" + c.id).textContent = current.join(" / ");
}
async function poll() {
  const state = document.getElementById("state");
  try {
    const r = await fetch("/status.json?since=" + last, {cache: "no-store"});
    if (!r.ok) throw new Error(r.status + " " + r.statusText);
    const j = await r.json();
    budget = j.budget;
    for (const s of j.samples) { data.push(s); last = s[0]; }
    const cut = last - SPAN;
    while (data.length && data[0][0] <= cut) data.shift();
    for (const c of charts) draw(c);
    state.textContent = data.length ? "last sample " + new Date(last * 1000).toLocaleTimeString() +
      ", " + data.length + " in view" : "waiting for the first sample\u2026";
  } catch (e) {
    state.textContent = "not reachable: " + e.message + " (retrying)";
  }
  setTimeout(poll, 1000);
}
setup();
poll();
</script>
</body></html>
)HTML";
  return page;
}

}  // namespace shellac::proxy
