// The Agent Server's HTTP API, as the page uses it: JSON requests and runs
// streamed as server-sent events over fetch (EventSource cannot POST).

export class APIError extends Error {
  constructor(status, detail) {
    super(detail || `HTTP ${status}`);
    this.status = status;
  }
}

export class API {
  constructor() {
    this.key = sessionStorage.getItem("agentgraph-api-key") || "";
    // Called with no arguments when the server asks for a key (401).
    this.onUnauthorized = () => {};
  }

  setKey(key) {
    this.key = key;
    sessionStorage.setItem("agentgraph-api-key", key);
  }

  headers(json) {
    const h = {};
    if (json) h["Content-Type"] = "application/json";
    if (this.key) h["x-api-key"] = this.key;
    return h;
  }

  async fail(resp) {
    let detail = "";
    try {
      const body = await resp.json();
      detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body);
    } catch {
      detail = resp.statusText;
    }
    if (resp.status === 401) this.onUnauthorized();
    return new APIError(resp.status, detail);
  }

  // request sends one JSON request and returns the decoded answer (null for
  // an empty one).
  async request(method, path, body, signal) {
    const resp = await fetch(path, {
      method,
      headers: this.headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    if (!resp.ok) throw await this.fail(resp);
    const text = await resp.text();
    return text.trim() === "" ? null : JSON.parse(text);
  }

  get(path, signal) { return this.request("GET", path, undefined, signal); }
  post(path, body, signal) { return this.request("POST", path, body ?? {}, signal); }
  del(path) { return this.request("DELETE", path); }

  // stream sends a request whose answer is an event stream and calls
  // onEvent(name, data, id) for each event until the stream ends. The
  // response's Content-Location (the run's path) goes to onOpen first.
  async stream(method, path, body, { onOpen, onEvent, signal }) {
    const headers = this.headers(body !== undefined);
    headers.Accept = "text/event-stream";
    const resp = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    if (!resp.ok) throw await this.fail(resp);
    if (onOpen) onOpen(resp.headers.get("Content-Location") || "");
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value.replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const ev = parseEvent(block);
        if (ev) onEvent(ev.event, ev.data, ev.id);
      }
    }
  }
}

// parseEvent reads one server-sent event block; comments and empty blocks
// give null.
export function parseEvent(block) {
  let event = "message";
  let id = "";
  const data = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
  if (data.length === 0) return null;
  const text = data.join("\n");
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { event, data: parsed, id };
}

export const enc = encodeURIComponent;
