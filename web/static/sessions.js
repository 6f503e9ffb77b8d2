// sessions.js: the tenant's sessions, one session's cells, and running a
// cell from the page.

import { get, post, request } from "./api.js";
import { h, badge, when, outputs, code, ms } from "./dom.js";

export async function sessionsView(main, _m, ctx) {
  const lang = h("select", { id: "session-language" }, h("option", { value: "python" }, "Python"), h("option", { value: "bash" }, "Bash"));
  const create = h("form", { class: "filters", "aria-label": "New session", onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      const s = await post("/v1/sessions", { language: lang.value });
      ctx.go("#/sessions/" + s.id);
    } catch (err) {
      ctx.fail(err);
    }
  } }, h("label", { for: "session-language" }, "Language"), lang, h("button", { type: "submit", id: "new-session" }, "New session"));
  main.append(h("h1", {}, "Sessions"), create);
  const { sessions } = await get("/v1/sessions");
  if (!sessions.length) {
    main.append(h("p", {}, "No sessions open."));
    return;
  }
  main.append(h("table", { class: "list" },
    h("caption", { class: "visually-hidden" }, "Open sessions"),
    h("thead", {}, h("tr", {}, ["Session", "Language", "Cells", "Created", "Last used", "State"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, sessions.map((s) => h("tr", {},
      h("td", { "data-label": "Session" }, h("a", { href: "#/sessions/" + s.id }, s.id)),
      h("td", { "data-label": "Language" }, s.language),
      h("td", { "data-label": "Cells" }, String(s.cells)),
      h("td", { "data-label": "Created" }, when(s.created)),
      h("td", { "data-label": "Last used" }, when(s.last_used)),
      h("td", { "data-label": "State" }, badge(s.busy ? "busy" : s.alive === false ? "dead" : "idle")))))));
}

export async function sessionView(main, [id], ctx) {
  const info = await get("/v1/sessions/" + encodeURIComponent(id));
  const list = h("ol", { class: "notebook", "aria-label": "Cells" });
  const src = h("textarea", { id: "cell-code", rows: 5, spellcheck: false, class: "mono" });
  const run = h("button", { type: "submit", id: "run-cell" }, "Run cell");
  const form = h("form", { class: "stack", "aria-label": "Run a cell", onsubmit: async (ev) => {
    ev.preventDefault();
    run.disabled = true;
    ctx.say("Running…");
    try {
      const cell = await request("POST", "/v1/sessions/" + info.id + "/execute", { code: src.value });
      list.append(cellItem(cell));
      src.value = "";
      ctx.say("Cell " + (cell.execution_count || "") + " " + cell.status + ".");
    } catch (err) {
      ctx.fail(err);
    } finally {
      run.disabled = false;
      src.focus();
    }
  } }, h("label", { for: "cell-code" }, "Code (" + info.language + "); Ctrl+Enter runs it"), src, run);
  src.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
  main.append(
    h("h1", {}, "Session ", h("code", {}, info.id)),
    h("p", { class: "muted" }, info.language + (info.interpreter ? " (" + info.interpreter + ")" : "") + " · created " + when(info.created)),
    list, form);
  const { cells } = await get("/v1/sessions/" + info.id + "/cells");
  for (const c of cells) list.append(cellItem(c));
}

function cellItem(c) {
  return h("li", { class: "step cell", dataset: { status: c.status } },
    h("h3", {}, "In [" + (c.execution_count || " ") + "]", " ", badge(c.status), c.duration_ms ? h("span", { class: "muted" }, " · " + ms(c.duration_ms)) : null),
    code(c.code),
    outputs(c.outputs),
    c.ended && c.ended.message ? h("p", { class: "warn" }, c.ended.message) : null);
}
