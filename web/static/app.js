// app.js: the web view's router, the API key form and the status line.

import { APIError, key, setKey } from "./api.js";
import { runsView, runView, newTaskView } from "./runs.js";
import { sessionsView, sessionView } from "./sessions.js";
import { reviewView, statsView } from "./review.js";

const main = document.getElementById("main");
const keyForm = document.getElementById("key-form");
const keyInput = document.getElementById("key-input");
const statusLine = document.getElementById("status");

// Each view is given the element to fill and what the route named; it
// returns a function that stops what it started (a live stream), if any.
const routes = [
  [/^#\/runs\/([\w.-]+)$/, runView, "runs"],
  [/^#\/new$/, newTaskView, "new"],
  [/^#\/sessions\/([\w.-]+)$/, sessionView, "sessions"],
  [/^#\/sessions$/, sessionsView, "sessions"],
  [/^#\/review(\?.*)?$/, reviewView, "review"],
  [/^#\/stats(\?.*)?$/, statsView, "stats"],
  [/^(#\/runs(\?.*)?|#?\/?)$/, runsView, "runs"],
];

let stop = null;

export function say(message) {
  statusLine.textContent = message;
}

// fail shows an error; an unknown or missing key opens the key form.
export function fail(err) {
  if (err instanceof APIError && err.status === 401) {
    showKeyForm(key() ? "The API key was not accepted: enter another." : "This server needs an API key.");
    return;
  }
  say("Error: " + (err && err.message ? err.message : String(err)));
}

function showKeyForm(message) {
  keyForm.hidden = false;
  say(message || "");
  keyInput.focus();
}

async function route() {
  if (stop) {
    stop();
    stop = null;
  }
  const hash = location.hash || "#/runs";
  for (const [re, view, section] of routes) {
    const m = hash.match(re);
    if (!m) continue;
    for (const a of document.querySelectorAll("nav a")) {
      if (a.dataset.section === section) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    main.replaceChildren();
    say("");
    try {
      stop = (await view(main, m.slice(1), { say, fail, go })) || null;
    } catch (err) {
      fail(err);
    }
    return;
  }
  main.replaceChildren(document.createTextNode("No such page."));
}

// go navigates to a route of the page.
export function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

keyForm.addEventListener("submit", (ev) => {
  ev.preventDefault();
  setKey(keyInput.value.trim());
  keyInput.value = "";
  keyForm.hidden = true;
  route();
});
document.getElementById("key-forget").addEventListener("click", () => {
  setKey("");
  keyForm.hidden = true;
  say("The key is forgotten.");
});
document.getElementById("key-button").addEventListener("click", () => {
  if (keyForm.hidden) showKeyForm("");
  else keyForm.hidden = true;
});
window.addEventListener("hashchange", route);
route();
