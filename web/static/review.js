// review.js: the review queue and the stats, with a chart of runs per
// day.

import { get } from "./api.js";
import { h, badge, when, ms } from "./dom.js";

export async function reviewView(main, _m, ctx) {
  const all = new URLSearchParams(location.hash.split("?")[1] || "").get("all") === "true";
  main.append(h("h1", {}, "Review queue"),
    h("p", {}, all ? h("a", { href: "#/review" }, "Show open items only") : h("a", { href: "#/review?all=true" }, "Show closed items too")));
  const { items } = await get("/v1/review" + (all ? "?all=true" : ""));
  if (!items.length) {
    main.append(h("p", {}, "Nothing to review."));
    return;
  }
  main.append(h("table", { class: "list" },
    h("caption", { class: "visually-hidden" }, "Review items, oldest first"),
    h("thead", {}, h("tr", {}, ["Run", "Why", "Reason", "Opened", "State"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, items.map((it) => h("tr", {},
      h("td", { "data-label": "Run" }, h("a", { href: "#/runs/" + it.run_id }, it.run_id)),
      h("td", { "data-label": "Why" }, it.kind.replace(/_/g, " ")),
      h("td", { "data-label": "Reason" }, it.reason),
      h("td", { "data-label": "Opened" }, when(it.created_at)),
      h("td", { "data-label": "State" }, it.status === "open" ? badge("open") : [badge(it.resolution || "closed"), it.note ? " " + it.note : ""]))))));
}

export async function statsView(main, _m, ctx) {
  const since = new URLSearchParams(location.hash.split("?")[1] || "").get("since") || "30d";
  const sel = h("select", { id: "since", onchange: () => ctx.go("#/stats?since=" + sel.value) },
    ["1d", "7d", "30d", "365d"].map((v) => h("option", { value: v, selected: v === since }, "last " + v.replace("d", " days").replace(/^1 days/, "day"))));
  main.append(h("h1", {}, "Stats"), h("div", { class: "filters" }, h("label", { for: "since" }, "Period"), sel));
  const s = await get("/v1/stats?since=" + encodeURIComponent(since));
  const pct = (x) => Math.round(100 * x) + "%";
  main.append(
    h("dl", { class: "cards" },
      card("Runs", s.runs), card("Answered", pct(s.answered)), card("First try", pct(s.first_try)),
      card("Attempts per run", s.mean_attempts.toFixed(2)), card("Tokens", (s.input_tokens + s.output_tokens).toLocaleString()),
      card("Model time", ms(s.model_ms)), card("Execution time", ms(s.exec_ms)), card("Open reviews", s.reviews_open)),
    h("h2", {}, "Outcomes"),
    outcomes(s.by_outcome),
    h("h2", {}, "Per day"),
    chart(s.days));
}

function card(name, value) {
  return h("div", { class: "card" }, h("dt", {}, name), h("dd", {}, String(value)));
}

function outcomes(by) {
  const entries = Object.entries(by || {}).sort((a, b) => b[1] - a[1]);
  if (!entries.length) return h("p", {}, "No run has ended yet.");
  const max = Math.max(...entries.map((e) => e[1]));
  return h("ul", { class: "bars" }, entries.map(([k, v]) => {
    const bar = h("span", { class: "bar o-" + k });
    bar.style.width = Math.max(2, Math.round(100 * v / max)) + "%"; // CSSOM, which the page's CSP allows
    return h("li", {}, h("span", { class: "bar-label" }, k.replace(/_/g, " ")), bar, h("span", { class: "bar-value" }, String(v)));
  }));
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) if (c) el.append(c);
  return el;
}

// chart draws answered and failed runs per day as stacked bars, and the
// day's tokens as a line, with a table of the same numbers for screen
// readers and narrow screens.
function chart(days) {
  if (!days || !days.length) return h("p", {}, "No runs in this period.");
  const W = 640, H = 200, pad = 28, n = days.length;
  const bw = Math.max(4, Math.min(40, (W - 2 * pad) / n - 4));
  const maxRuns = Math.max(1, ...days.map((d) => d.runs));
  const maxTok = Math.max(1, ...days.map((d) => d.tokens));
  const x = (i) => pad + i * ((W - 2 * pad) / n) + 2;
  const y = (v) => H - pad - v * (H - 2 * pad) / maxRuns;
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-labelledby": "chart-title" },
    svg("title", { id: "chart-title" }), svg("line", { x1: pad, y1: H - pad, x2: W - pad, y2: H - pad, class: "axis" }));
  g.querySelector("title").textContent = "Runs per day: answered and failed, with tokens";
  const points = [];
  days.forEach((d, i) => {
    const other = d.runs - d.answered - d.failed;
    let base = 0;
    for (const [v, cls] of [[d.answered, "answered"], [d.failed, "failed"], [other, "other"]]) {
      if (v <= 0) continue;
      g.append(svg("rect", { x: x(i), y: y(base + v), width: bw, height: y(base) - y(base + v), class: "bar-" + cls }));
      base += v;
    }
    points.push(`${x(i) + bw / 2},${H - pad - d.tokens * (H - 2 * pad) / maxTok}`);
    if (n <= 14 || i % Math.ceil(n / 10) === 0) {
      const t = svg("text", { x: x(i) + bw / 2, y: H - 8, "text-anchor": "middle", class: "tick" });
      t.textContent = d.date.slice(5);
      g.append(t);
    }
  });
  g.append(svg("polyline", { points: points.join(" "), class: "tokens" }));
  const legend = h("p", { class: "legend" }, h("span", { class: "key answered" }), " answered ", h("span", { class: "key failed" }), " failed ",
    h("span", { class: "key other" }), " cancelled or running ", h("span", { class: "key tokens" }), " tokens (scaled)");
  const table = h("details", {}, h("summary", {}, "The numbers"), h("table", { class: "list" },
    h("thead", {}, h("tr", {}, ["Day", "Runs", "Answered", "Failed", "Tokens", "Model time", "Execution time"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, days.map((d) => h("tr", {}, h("td", {}, d.date), h("td", {}, String(d.runs)), h("td", {}, String(d.answered)),
      h("td", {}, String(d.failed)), h("td", {}, String(d.tokens)), h("td", {}, ms(d.model_ms)), h("td", {}, ms(d.exec_ms)))))));
  return h("figure", { class: "chartbox" }, g, legend, table);
}
