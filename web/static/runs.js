// runs.js: the runs list, a run as a notebook (followed live), and the
// form that starts a task.

import { get, post, blob, stream } from "./api.js";
import { h, fill, badge, ms, when, outputs, code, plain } from "./dom.js";

const STATUSES = ["running", "awaiting_approval", "succeeded", "failed", "cancelled", "interrupted"];

export async function runsView(main, _m, ctx) {
  const params = new URLSearchParams((location.hash.split("?")[1]) || "");
  const status = params.get("status") || "";
  const q = params.get("q") || "";
  const filter = h("form", { class: "filters", role: "search", "aria-label": "Filter runs", onsubmit: (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams();
    if (sel.value) p.set("status", sel.value);
    if (search.value.trim()) p.set("q", search.value.trim());
    ctx.go("#/runs" + (p.toString() ? "?" + p : ""));
  } });
  const sel = h("select", { id: "filter-status", name: "status" },
    h("option", { value: "" }, "any status"),
    STATUSES.map((s) => h("option", { value: s, selected: s === status }, s.replace(/_/g, " "))));
  const search = h("input", { id: "filter-q", type: "search", name: "q", value: q, placeholder: "task, answer, model, id" });
  filter.append(
    h("label", { for: "filter-status" }, "Status"), sel,
    h("label", { for: "filter-q" }, "Search"), search,
    h("button", { type: "submit" }, "Filter"));
  main.append(h("h1", {}, "Runs"), filter);
  const p = new URLSearchParams();
  if (status) p.set("status", status);
  if (q) p.set("q", q);
  const path = "/v1/runs" + (p.toString() ? "?" + p : "");
  const box = h("div", { "aria-live": "polite" });
  main.append(box);
  const render = (runs) => fill(box, runs.length ? table(runs) :
    h("p", {}, status || q ? "No run matches." : "No runs yet: start one with New task, or run coderun ask."));
  let { runs } = await get(path);
  render(runs);
  // While a listed run is going, the list is read again every few seconds.
  const timer = setInterval(async () => {
    if (!runs.some((r) => r.status === "running")) return;
    try {
      runs = (await get(path)).runs;
      render(runs);
    } catch (err) {
      ctx.fail(err);
    }
  }, 3000);
  return () => clearInterval(timer);
}

function table(runs) {
  return h("table", { class: "list" },
    h("caption", { class: "visually-hidden" }, "Runs, newest first"),
    h("thead", {}, h("tr", {}, ["Run", "Task", "Status", "Model", "Started", "Attempts", "Tokens"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, runs.map((r) => h("tr", {},
      h("td", { "data-label": "Run" }, h("a", { href: "#/runs/" + r.id }, r.id)),
      h("td", { "data-label": "Task", class: "task" }, r.task.length > 140 ? r.task.slice(0, 140) + "…" : r.task),
      h("td", { "data-label": "Status" }, badge(r.status)),
      h("td", { "data-label": "Model" }, r.model),
      h("td", { "data-label": "Started" }, when(r.created_at)),
      h("td", { "data-label": "Attempts" }, String(r.scorecard.attempts)),
      h("td", { "data-label": "Tokens" }, String(r.scorecard.input_tokens + r.scorecard.output_tokens))))));
}

// runView shows a run as a notebook and follows it while it runs.
export async function runView(main, [id], ctx) {
  const run = await get("/v1/runs/" + encodeURIComponent(id));
  const { steps } = await get("/v1/runs/" + run.id + "/steps");
  const head = h("section", { "aria-labelledby": "run-title", class: "runhead" });
  const actions = h("div", { class: "actions", role: "group", "aria-label": "Run actions" });
  const pending = h("section", { id: "pending", "aria-label": "Code awaiting approval" });
  const cells = h("ol", { class: "notebook", "aria-label": "Steps of the run" });
  const end = h("section", { id: "result", "aria-label": "Result" });
  main.append(head, actions, pending, cells, end);
  const state = { run, seen: 0, images: new Set(), steps: [] };

  const renderHead = () => {
    const r = state.run, sc = r.scorecard;
    fill(head,
      h("h1", { id: "run-title" }, "Run ", h("code", {}, r.id), " ", badge(r.status)),
      h("p", { class: "task" }, r.task),
      h("dl", { class: "facts" },
        fact("Model", r.model), fact("Mode", r.mode), fact("Started", when(r.created_at)),
        r.finished_at ? fact("Ended", when(r.finished_at)) : null,
        r.outcome ? fact("Outcome", r.outcome) : null,
        fact("Attempts", sc.attempts), fact("Retries", sc.retries),
        fact("Tokens", sc.input_tokens + " in, " + sc.output_tokens + " out"),
        fact("Model time", ms(sc.model_ms)), fact("Execution time", ms(sc.exec_ms)), fact("Active time", ms(sc.wall_ms))),
      (r.inputs || []).length ? h("p", {}, "Input files: ", r.inputs.map((f, i) => [i ? ", " : "", h("code", {}, f.path), " (" + (f.summary || f.size + " bytes") + ")"])) : null,
      r.standing ? h("p", { class: "note" }, r.standing.note) : null);
    renderActions();
    renderPending();
  };

  const act = async (what, body) => {
    try {
      state.run = await post("/v1/runs/" + state.run.id + "/" + what, body);
      renderHead();
      ctx.say(what === "cancel" ? "Cancelling…" : what === "resume" ? "Resumed." : "Decision recorded.");
      follow();
    } catch (err) {
      ctx.fail(err);
    }
  };

  const renderActions = () => {
    const r = state.run;
    const final = ["succeeded", "failed", "cancelled"].includes(r.status);
    fill(actions,
      !final ? h("button", { type: "button", id: "cancel-run", onclick: () => act("cancel") }, "Cancel run") : null,
      r.status === "interrupted" ? h("button", { type: "button", id: "resume-run", onclick: () => act("resume") }, "Resume run") : null,
      h("button", { type: "button", class: "quiet", onclick: () => download(r.id, ctx) }, "Download notebook"));
  };

  const renderPending = () => {
    const r = state.run;
    if (r.status !== "awaiting_approval" || !r.pending) {
      pending.replaceChildren();
      return;
    }
    const p = r.pending;
    const note = h("textarea", { id: "decision-note", rows: 2 });
    fill(pending,
      h("h2", {}, "Awaiting your approval"),
      h("p", {}, p.explanation),
      findings(p.findings),
      code(p.code, p.language),
      h("label", { for: "decision-note" }, "Note (optional; a rejection's note goes to the model)"), note,
      h("div", { class: "actions" },
        h("button", { type: "button", id: "approve", class: "good", onclick: () => act("approve", { note: note.value, by: "web view" }) }, "Approve and run"),
        h("button", { type: "button", id: "approve-always", class: "quiet", onclick: () => act("approve", { note: note.value, by: "web view", always: true }) },
          "Approve, and these rules for the rest of the run"),
        h("button", { type: "button", id: "reject", class: "bad", onclick: () => act("reject", { note: note.value, by: "web view" }) }, "Reject")));
  };

  const addStep = (s) => {
    if (s.seq <= state.seen) return;
    state.seen = s.seq;
    state.steps.push(s);
    const li = stepItem(s, state);
    if (li) cells.append(li);
    if (s.kind === "answer" || s.kind === "failure") fill(end, resultOf(s));
  };
  renderHead();
  steps.forEach(addStep);

  const controller = new AbortController();
  let following = false;
  const follow = () => {
    if (following || ["succeeded", "failed", "cancelled"].includes(state.run.status)) return;
    following = true;
    stream("/v1/runs/" + state.run.id + "/events?after=" + state.seen, (name, data) => {
      if (name === "step") addStep(data);
      else {
        state.run = data;
        renderHead();
      }
    }, controller.signal).catch((err) => {
      if (err.name !== "AbortError") ctx.fail(err);
    }).finally(() => { following = false; });
  };
  follow();
  return () => controller.abort();
}

function fact(name, value) {
  return [h("dt", {}, name), h("dd", {}, String(value))];
}

function findings(list) {
  if (!list || !list.length) return null;
  return h("ul", { class: "findings", "aria-label": "Policy findings" }, list.map((f) =>
    h("li", {}, h("strong", {}, f.rule), " (" + f.severity + ", line " + f.line + "): " + f.message + " ", h("code", {}, f.snippet))));
}

// stepItem renders one step of a run as a notebook entry.
function stepItem(s, state) {
  const d = s.data || {};
  const attempt = s.attempt ? "attempt " + s.attempt : "";
  const item = (cls, title, ...body) => h("li", { class: "step " + cls, dataset: { kind: s.kind, seq: s.seq } },
    h("h3", {}, title, attempt ? h("span", { class: "muted" }, " · " + attempt) : null, h("span", { class: "muted" }, " · " + when(s.at))), body);
  switch (s.kind) {
    case "start":
      return null;
    case "model_call": {
      const u = d.usage || {};
      return h("li", { class: "step meta", dataset: { kind: s.kind, seq: s.seq } },
        "Model call (" + d.purpose + "): " + (u.input_tokens || 0) + " + " + (u.output_tokens || 0) + " tokens, " + ms(d.latency_ms) +
        (d.error ? " — " + d.error : ""));
    }
    case "code":
      return item("code-step", "Code", d.intent ? h("p", { class: "intent" }, d.intent) : null, code(d.code, d.language));
    case "review": {
      const dec = d.decision || {};
      if (dec.action === "allow" && !(dec.findings || []).length) return h("li", { class: "step meta", dataset: { kind: s.kind, seq: s.seq } }, "Policy: allowed.");
      return item("review", "Policy: " + dec.action, h("p", {}, dec.explanation), findings(dec.findings));
    }
    case "approval":
      return item("approval", "Approval: " + d.decision, h("p", {}, "By " + d.by + (d.always ? " (always, for these rules)" : "")),
        d.note ? h("blockquote", {}, d.note) : null);
    case "execution": {
      const li = item("execution", "Output",
        h("p", { class: "muted" }, "Ran in " + ms(d.duration_ms) + "; " + d.reason + (d.reason === "exited" ? " with status " + d.exit_code : "") +
          (d.signal ? " (" + d.signal + ")" : "") + (d.usage && d.usage.PeakMemory ? "; peak memory " + Math.round(d.usage.PeakMemory / 1048576) + " MiB" : "")),
        d.outputs && d.outputs.length ? outputs(d.outputs) : [
          d.stdout ? h("pre", { class: "out stdout", "aria-label": "stdout" }, plain(d.stdout)) : null,
          d.stderr ? h("pre", { class: "out stderr", "aria-label": "stderr" }, plain(d.stderr)) : null],
        d.error ? h("pre", { class: "out error" }, d.error) : null);
      for (const f of d.files || []) {
        if (f.kind !== "file") continue;
        if (/\.(png|jpe?g|gif|webp)$/i.test(f.path)) li.append(fileImage(state.run.id, f.path));
        else li.append(h("p", { class: "muted" }, "Wrote ", h("code", {}, f.path), " (" + f.size + " bytes)"));
      }
      return li;
    }
    case "classification":
      if (d.class === "success") return null;
      return item("classification", "Classified: " + d.class + (d.kind ? " (" + d.kind + ")" : ""), h("p", {}, d.why), d.message ? h("pre", { class: "out error" }, plain(d.message)) : null);
    case "retry":
      return item("retry", "Retry " + d.number + " of " + d.max + ": " + d.reason,
        h("details", {}, h("summary", {}, "What the model was told"), h("pre", { class: "out" }, plain(d.feedback))));
    case "resume":
      return h("li", { class: "step meta", dataset: { kind: s.kind, seq: s.seq } }, "Resumed (" + d.from + ") at " + d.phase + (d.note ? ": " + d.note : ""));
    case "answer":
    case "failure":
      return null; // shown as the result
    default:
      return h("li", { class: "step meta" }, s.summary);
  }
}

function fileImage(runID, path) {
  const img = h("img", { class: "plot", alt: "plot " + path });
  const fig = h("figure", {}, img, h("figcaption", {}, path));
  blob("/v1/runs/" + runID + "/files/" + path.split("/").map(encodeURIComponent).join("/") + "?role=output")
    .then((b) => { img.src = URL.createObjectURL(new Blob([b], { type: "image/png" })); })
    .catch(() => fig.append(h("p", { class: "muted" }, "(the image could not be loaded)")));
  return fig;
}

function resultOf(s) {
  const d = s.data || {};
  if (s.kind === "answer") {
    return h("div", { class: "answer" }, h("h2", {}, "Answer"), h("p", { class: "answer-text" }, d.text),
      d.grounded === false ? h("p", { class: "warn" }, "Unverified: the answer quotes " + (d.unsupported || []).join(", ") + ", which the output does not show.") : null);
  }
  return h("div", { class: "failure" }, h("h2", {}, "No answer (" + d.outcome + ")"), h("p", {}, d.summary),
    d.intent ? h("p", {}, "What the code was trying to do: " + d.intent) : null,
    d.error ? h("pre", { class: "out error" }, plain(d.error)) : null,
    d.partial_output ? [h("p", {}, "Partial output of the last attempt:"), h("pre", { class: "out" }, plain(d.partial_output))] : null);
}

async function download(id, ctx) {
  try {
    const b = await blob("/v1/runs/" + id + "/notebook");
    const a = h("a", { href: URL.createObjectURL(b), download: "run-" + id + ".ipynb" });
    document.body.append(a);
    a.click();
    a.remove();
  } catch (err) {
    ctx.fail(err);
  }
}

// newTaskView is the form that starts a run.
export async function newTaskView(main, _m, ctx) {
  const field = (id, label, input, hint) => h("div", { class: "field" }, h("label", { for: id }, label), input, hint ? h("small", { id: id + "-hint" }, hint) : null);
  const task = h("textarea", { id: "task", rows: 4, required: true });
  const files = h("input", { id: "files", type: "file", multiple: true });
  const model = h("input", { id: "model", type: "text", placeholder: "the server's model", "aria-describedby": "model-hint" });
  const mode = h("select", { id: "mode" }, h("option", { value: "single" }, "single: one program, retried"), h("option", { value: "steps" }, "steps: cells in a session"));
  const approve = h("select", { id: "approve" }, h("option", { value: "defer" }, "ask me here"), h("option", { value: "all" }, "approve all"), h("option", { value: "none" }, "reject all"));
  const retries = h("input", { id: "max-retries", type: "number", min: 0, max: 20, placeholder: "server's" });
  const submit = h("button", { type: "submit" }, "Start");
  const form = h("form", { class: "stack", onsubmit: async (ev) => {
    ev.preventDefault();
    submit.disabled = true;
    try {
      const body = { task: task.value, mode: mode.value, approve: approve.value, files: [] };
      if (model.value.trim()) body.model = model.value.trim();
      if (retries.value !== "") body.max_retries = Number(retries.value);
      for (const f of files.files) body.files.push({ path: f.name, content_base64: await base64(f) });
      const run = await post("/v1/runs", body);
      ctx.go("#/runs/" + run.id);
    } catch (err) {
      ctx.fail(err);
    } finally {
      submit.disabled = false;
    }
  } },
    field("task", "Task", task),
    field("files", "Input files (placed in the workspace)", files),
    field("model", "Model (provider:model)", model, "For example openai:gpt-4.1-mini; empty uses the server's."),
    field("mode", "Mode", mode),
    field("approve", "Code the policy flags", approve),
    field("max-retries", "Retries at most", retries),
    submit);
  main.append(h("h1", {}, "New task"), form);
  task.focus();
}

function base64(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ""));
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}
