import { h } from "./dom.js";

// tree renders a JSON value as nested disclosure widgets: objects and arrays
// are <details> a keyboard opens with Enter or Space, and a screen reader
// announces as expanded or collapsed. Levels below openDepth start closed.
export function tree(value, { label = "", openDepth = 1 } = {}) {
  return h("div", { class: "tree" }, node(label, value, 0, openDepth));
}

function node(label, value, depth, openDepth) {
  const key = label === "" ? null : h("span", { class: "key" }, label);
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    const kind = Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`;
    if (entries.length === 0) {
      return h("div", { class: "leaf" }, key, h("span", { class: "muted" }, Array.isArray(value) ? "[ ]" : "{ }"));
    }
    return h(
      "details",
      { open: depth < openDepth },
      h("summary", null, key, h("span", { class: "muted" }, ` ${kind} `), preview(value)),
      h("div", { class: "children" }, entries.map(([k, v]) => node(k, v, depth + 1, openDepth))),
    );
  }
  return h("div", { class: "leaf" }, key, scalar(value));
}

function preview(value) {
  if (Array.isArray(value)) return null;
  // A message shows its type and the start of its content.
  if (typeof value.type === "string" && "content" in value) {
    const text = typeof value.content === "string" ? value.content : JSON.stringify(value.content);
    return h("span", { class: "preview" }, `${value.type}: ${clip(text, 60)}`);
  }
  return null;
}

function scalar(v) {
  if (typeof v === "string") {
    if (v.includes("\n") || v.length > 80) return h("pre", { class: "str" }, v);
    return h("span", { class: "str" }, JSON.stringify(v));
  }
  return h("span", { class: v === null ? "null" : typeof v }, String(v));
}

export function clip(text, n) {
  text = String(text).replace(/\s+/g, " ").trim();
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}
