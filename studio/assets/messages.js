import { h } from "./dom.js";

// Messages are LangChain's serialized messages as the server sends them:
// {type: human|ai|tool|system, content, id, tool_calls, tool_call_id}.
// A partial is an AI message still streaming: its tool calls' arguments are
// text that is not yet whole JSON.

const roleNames = { human: "You", ai: "Assistant", tool: "Tool", system: "System", AIMessageChunk: "Assistant" };

// renderMessage returns the element of one message. calls maps tool call
// ids to the calls, so a tool's answer can say which call it answers.
export function renderMessage(msg, calls) {
  const type = msg.type || "ai";
  const who = roleNames[type] || type;
  const body = [];
  if (type === "tool") {
    const call = calls.get(msg.tool_call_id);
    return h(
      "article",
      { class: `msg tool${msg.status === "error" ? " error" : ""}`, "aria-label": `Result of ${call ? call.name : "a tool"}` },
      h("header", null, h("span", { class: "who" }, call ? `${call.name} answered` : "Tool answered"),
        msg.tool_call_id ? h("span", { class: "muted" }, ` (${msg.tool_call_id})`) : null),
      call && call.name === "run_python" ? pythonResult(text(msg.content)) : pre(text(msg.content)),
    );
  }
  const content = text(msg.content);
  if (content !== "") body.push(h("div", { class: "content" }, content));
  for (const c of msg.tool_calls || []) body.push(toolCall(c));
  if (msg.partial && content === "" && (msg.tool_calls || []).length === 0) body.push(h("div", { class: "content muted" }, "…"));
  return h(
    "article",
    { class: `msg ${type === "AIMessageChunk" ? "ai" : type}${msg.partial ? " partial" : ""}`, "aria-label": `${who} said`, "aria-busy": msg.partial ? "true" : null },
    h("header", null, h("span", { class: "who" }, who), msg.partial ? h("span", { class: "muted" }, " writing…") : null),
    body,
  );
}

function text(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((b) => (typeof b === "string" ? b : b.text || "")).join("");
  return content == null ? "" : JSON.stringify(content);
}

function pre(t) {
  return h("pre", { class: "output" }, t);
}

// args reads a call's arguments, whole (an object) or streaming (text).
function args(c) {
  if (typeof c.args === "string") {
    try {
      return JSON.parse(c.args);
    } catch {
      return c.args;
    }
  }
  return c.args || {};
}

function toolCall(c) {
  const a = args(c);
  const code = c.name === "run_python" && typeof a === "object" && typeof a.code === "string" ? a.code : null;
  return h(
    "section",
    { class: "call", "aria-label": `Call of ${c.name || "a tool"}` },
    h("header", null, h("span", { class: "who" }, `calls ${c.name || "…"}`), c.id ? h("span", { class: "muted" }, ` (${c.id})`) : null),
    code !== null
      ? h("pre", { class: "code python", "aria-label": "Python code" }, h("code", null, code))
      : h("pre", { class: "code" }, typeof a === "string" ? a : JSON.stringify(a, null, 2)),
  );
}

const imageURL = /data:image\/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]+/g;

// pythonResult formats run_python's answer: "[sandbox] exit code N" or
// "[sandbox] timed out", then the program's output. Images the program
// printed as data: URLs show inline.
function pythonResult(t) {
  const m = /^\[([^\]]+)\] (exit code (-?\d+)|timed out)\n?/.exec(t);
  if (!m) return pre(t);
  const ok = m[3] === "0";
  const out = t.slice(m[0].length);
  const images = [...out.matchAll(imageURL)].map((x, i) => h("img", { src: x[0], alt: `Image ${i + 1} the program printed` }));
  return h(
    "div",
    { class: "python-result" },
    h("p", { class: "run-status" },
      h("span", { class: `badge ${ok ? "ok" : "bad"}` }, m[2]),
      h("span", { class: "muted" }, ` in sandbox ${m[1]}`)),
    out.trim() === "" ? h("p", { class: "muted" }, "(no output)") : pre(images.length ? out.replace(imageURL, "[image]") : out),
    images,
  );
}

// callsOf indexes the tool calls of messages by id.
export function callsOf(messages) {
  const calls = new Map();
  for (const m of messages) for (const c of m.tool_calls || []) if (c.id) calls.set(c.id, c);
  return calls;
}
