// api.js: calls to coderun's API with the key kept in sessionStorage.

const KEY = "coderun-api-key";

export function key() {
  return sessionStorage.getItem(KEY) || "";
}

export function setKey(k) {
  if (k) sessionStorage.setItem(KEY, k);
  else sessionStorage.removeItem(KEY);
}

// APIError is an error answer of the API: its status and message.
export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra) {
  const h = new Headers(extra || {});
  const k = key();
  if (k) h.set("Authorization", "Bearer " + k);
  return h;
}

async function failure(resp) {
  let code = "", message = resp.status + " " + resp.statusText;
  try {
    const body = await resp.json();
    if (body && body.error) {
      code = body.error.code;
      message = body.error.message;
    }
  } catch (_) { /* not JSON */ }
  return new APIError(resp.status, code, message);
}

// request sends a request and returns the decoded JSON answer (null for
// an empty one); an error answer throws an APIError.
export async function request(method, path, body) {
  const init = { method, headers: headers() };
  if (body !== undefined) {
    init.headers.set("Content-Type", "application/json");
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  if (!resp.ok) throw await failure(resp);
  if (resp.status === 204) return null;
  const text = await resp.text();
  return text ? JSON.parse(text) : null;
}

export const get = (path) => request("GET", path);
export const post = (path, body) => request("POST", path, body === undefined ? {} : body);

// blob fetches a file's bytes.
export async function blob(path) {
  const resp = await fetch(path, { headers: headers() });
  if (!resp.ok) throw await failure(resp);
  return resp.blob();
}

// stream follows a Server-Sent Events stream, calling onEvent(name, data,
// id) for each event, until the stream ends or signal aborts it. (An
// EventSource cannot send the key.)
export async function stream(path, onEvent, signal) {
  const resp = await fetch(path, { headers: headers({ Accept: "text/event-stream" }), signal });
  if (!resp.ok) throw await failure(resp);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let name = "message", id = "", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("id: ")) id = line.slice(4);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) onEvent(name, JSON.parse(data), id);
    }
  }
}
