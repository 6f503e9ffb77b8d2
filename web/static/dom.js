// dom.js: building the page from data, always as text (never as HTML).

// h creates an element: attrs are properties or attributes ("on..."
// functions are listeners), children are nodes, strings or arrays.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k in el && typeof v !== "string") el[k] = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

// fill replaces el's children with children (null and false skipped).
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// ANSI terminal escapes (colours in tracebacks) are not shown.
export function plain(s) {
  return String(s || "").replace(/\u001b\[[0-9;?]*[A-Za-z]/g, "");
}

export function ms(n) {
  if (n === undefined || n === null) return "";
  if (n < 1000) return Math.round(n) + " ms";
  if (n < 60000) return (n / 1000).toFixed(1) + " s";
  return (n / 60000).toFixed(1) + " min";
}

export function when(t) {
  if (!t) return "";
  const d = new Date(t);
  return isNaN(d) ? "" : d.toLocaleString();
}

export function badge(status) {
  return h("span", { class: "badge s-" + status }, String(status || "").replace(/_/g, " "));
}

// outputs renders Jupyter-shaped outputs: streams, rich results (images
// inline, text; HTML shown as its text), errors with their tracebacks.
export function outputs(list) {
  return (list || []).map((o) => {
    switch (o.output_type) {
      case "stream":
        return h("pre", { class: "out " + (o.name === "stderr" ? "stderr" : "stdout"), "aria-label": o.name }, plain(o.text));
      case "execute_result":
      case "display_data":
        return richOutput(o.data || {});
      case "error":
        return h("pre", { class: "out error", "aria-label": "error" },
          plain((o.traceback || []).join("\n") || (o.ename + ": " + o.evalue)));
      default:
        return null;
    }
  });
}

function richOutput(data) {
  if (data["image/png"]) {
    return h("img", { class: "plot", src: "data:image/png;base64," + String(data["image/png"]).replace(/\s/g, ""), alt: data["text/plain"] || "plot" });
  }
  if (data["image/jpeg"]) {
    return h("img", { class: "plot", src: "data:image/jpeg;base64," + String(data["image/jpeg"]).replace(/\s/g, ""), alt: data["text/plain"] || "image" });
  }
  if (data["image/svg+xml"]) {
    const svg = [].concat(data["image/svg+xml"]).join("");
    const src = "data:image/svg+xml;base64," + btoa(unescape(encodeURIComponent(svg)));
    return h("img", { class: "plot", src, alt: data["text/plain"] || "plot" });
  }
  const text = data["text/plain"] !== undefined ? [].concat(data["text/plain"]).join("") :
    data["application/json"] !== undefined ? JSON.stringify(data["application/json"], null, 2) : "";
  return h("pre", { class: "out result" }, plain(text));
}

// code renders source code.
export function code(src, lang) {
  return h("pre", { class: "code", "aria-label": (lang || "code") + " code" }, h("code", {}, src || ""));
}
