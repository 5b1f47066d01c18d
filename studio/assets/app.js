import { API, APIError, enc } from "./api.js";
import { h } from "./dom.js";
import { drawGraph } from "./graph.js";
import { callsOf, renderMessage } from "./messages.js";
import { clip, tree } from "./tree.js";
import { FilesPane } from "./files.js";

const api = new API();
const $ = (id) => document.getElementById(id);
const files = new FilesPane(api, { pane: $("files-pane"), list: $("files"), note: $("files-note"), refresh: $("files-refresh") }, (err) => report(err));

// What the page shows now.
const st = {
  assistants: [],
  assistant: null, // the selected assistant
  nodes: [], // its graph's node names
  drawing: null, // drawGraph's result
  hasMessages: true, // whether its state has a "messages" key
  threads: [],
  thread: null, // the selected thread's record
  messages: [], // its messages, as the last values event or state had them
  partials: new Map(), // AI messages still streaming, by chunk id
  running: new Set(), // nodes running now, or that ended a moment ago
  tasks: new Map(), // node -> tasks of it running now
  interrupts: [],
  run: null, // {id, controller, cancelled} while a run streams
  watch: null, // AbortController of the selected thread's page-side requests
  history: [],
  timelineOpen: false,
};

const streamModes = ["messages-tuple", "updates", "values", "debug"];

function setStatus(text) {
  $("status").textContent = text;
}

function setAlert(text) {
  $("alert").textContent = text;
}

function report(err) {
  if (err && err.name === "AbortError") return;
  setAlert(err instanceof APIError ? `The server answered ${err.status}: ${err.message}` : String(err && err.message ? err.message : err));
}

// Run fn, showing any error it throws in the alert line.
function guarded(fn) {
  return async (...args) => {
    try {
      await fn(...args);
    } catch (err) {
      report(err);
    }
  };
}

// ---- assistants and their graphs ----

async function loadAssistants() {
  st.assistants = (await api.post("/assistants/search", { limit: 100 })) || [];
  const select = $("assistant");
  select.replaceChildren(...st.assistants.map((a) => h("option", { value: a.assistant_id }, a.name || a.graph_id)));
  if (st.assistants.length === 0) {
    setStatus("The server has no assistants.");
    return;
  }
  await selectAssistant(st.assistants[0].assistant_id);
}

async function selectAssistant(id) {
  const a = st.assistants.find((x) => x.assistant_id === id || x.graph_id === id);
  if (!a) return;
  st.assistant = a;
  $("assistant").value = a.assistant_id;
  $("assistant-about").textContent = a.description || "";
  const [graph, schemas] = await Promise.all([
    api.get(`/assistants/${enc(a.assistant_id)}/graph`),
    api.get(`/assistants/${enc(a.assistant_id)}/schemas`).catch(() => null),
  ]);
  st.nodes = graph.nodes.map((n) => n.id);
  st.drawing = drawGraph(graph, `Graph ${a.graph_id}`);
  st.drawing.highlight(st.running);
  $("graph").replaceChildren(st.drawing.svg);
  const props = schemas && schemas.state_schema && schemas.state_schema.properties;
  st.hasMessages = !props || "messages" in props;
  $("chat-input").placeholder = st.hasMessages ? "Ask the agent…" : 'This graph has no "messages" key: write its input as a JSON object';
}

function showRunning() {
  if (st.drawing) st.drawing.highlight(st.running);
  const names = [...st.running];
  $("running").textContent = names.length ? `running: ${names.join(", ")}` : "";
}

// ---- threads ----

async function loadThreads() {
  const status = $("thread-status").value;
  st.threads = (await api.post("/threads/search", { limit: 100, sort_by: "updated_at", sort_order: "desc", status: status || undefined })) || [];
  renderThreads();
}

function threadText(t) {
  const msgs = (t.values && t.values.messages) || [];
  const first = msgs.find((m) => m.type === "human");
  return first ? String(first.content) : "";
}

function renderThreads() {
  const q = $("thread-search").value.trim().toLowerCase();
  const found = st.threads.filter((t) => !q || (t.thread_id + " " + JSON.stringify(t.metadata) + " " + JSON.stringify(t.values || {})).toLowerCase().includes(q));
  const list = $("thread-list");
  if (found.length === 0) {
    list.replaceChildren(h("li", { class: "muted" }, st.threads.length ? "No thread matches." : "No threads yet."));
    return;
  }
  list.replaceChildren(
    ...found.map((t) => {
      const current = st.thread && st.thread.thread_id === t.thread_id;
      const text = threadText(t);
      return h(
        "li",
        null,
        h(
          "button",
          {
            type: "button",
            class: "thread",
            "data-thread": t.thread_id,
            "aria-current": current ? "true" : null,
            title: t.thread_id,
            onclick: guarded(() => selectThread(t.thread_id)),
          },
          // Thread ids are time-ordered uuids: their ends tell them apart.
          h("span", { class: "tid" }, `…${t.thread_id.slice(-12)}`),
          h("span", { class: `badge ${t.status}` }, t.status),
          h("span", { class: "preview" }, text ? clip(text, 48) : (t.metadata && t.metadata.graph_id) || "empty"),
        ),
      );
    }),
  );
}

// leaveRun stops streaming the page's run when another thread is shown; the
// run itself goes on in the server.
function leaveRun(id) {
  if (st.run && st.run.tid !== id) st.run.controller.abort();
}

async function selectThread(id) {
  leaveRun(id);
  if (st.watch) st.watch.abort();
  st.watch = new AbortController();
  const signal = st.watch.signal;
  setAlert("");
  const t = await api.get(`/threads/${enc(id)}`, signal);
  st.thread = t;
  st.partials.clear();
  st.running.clear();
  showRunning();
  history.replaceState(null, "", `#thread=${enc(id)}`);
  $("thread-label").textContent = `thread ${id}`;
  $("delete-thread").disabled = false;
  $("timeline-toggle").disabled = false;
  const graphID = t.metadata && t.metadata.graph_id;
  if (graphID && st.assistant && st.assistant.graph_id !== graphID) await selectAssistant(graphID);
  await refreshState(signal);
  renderThreads();
  files.load(id).catch(report);
  if (st.timelineOpen) await loadTimeline();
  if (t.status === "busy" && !st.run) await joinActiveRun(id);
}

async function refreshState(signal) {
  const state = await api.get(`/threads/${enc(st.thread.thread_id)}/state`, signal);
  st.messages = (state.values && state.values.messages) || [];
  st.interrupts = state.interrupts || [];
  if (st.interrupts.length === 0) for (const task of state.tasks || []) st.interrupts.push(...(task.interrupts || []));
  renderMessages();
  renderInterrupts();
}

function newThread() {
  leaveRun(null);
  if (st.watch) st.watch.abort();
  st.thread = null;
  st.messages = [];
  st.partials.clear();
  st.interrupts = [];
  st.history = [];
  history.replaceState(null, "", "#");
  $("thread-label").textContent = "new thread: sending a message starts it";
  $("delete-thread").disabled = true;
  $("timeline-toggle").disabled = true;
  setTimeline(false);
  $("timeline").replaceChildren();
  files.clear("a new thread has none yet");
  renderMessages();
  renderInterrupts();
  renderThreads();
  $("chat-input").focus();
}

async function deleteThread() {
  if (!st.thread || st.run) return;
  const id = st.thread.thread_id;
  await api.del(`/threads/${enc(id)}`);
  setStatus(`Deleted thread ${id}.`);
  newThread();
  await loadThreads();
}

// ---- messages ----

const rendered = new Map(); // message key -> {el, json}

function renderMessages() {
  const box = $("messages");
  const list = [...st.messages, ...st.partials.values()];
  const calls = callsOf(list);
  const seen = new Set();
  let prev = null;
  list.forEach((m, i) => {
    const key = m.id || `at-${i}`;
    const call = m.tool_call_id ? calls.get(m.tool_call_id) : null;
    const json = JSON.stringify(m) + (call ? JSON.stringify(call) : "");
    let item = rendered.get(key);
    if (!item || item.json !== json) {
      const el = renderMessage(m, calls);
      el.dataset.key = key;
      if (item) item.el.replaceWith(el);
      item = { el, json };
      rendered.set(key, item);
    }
    const want = prev ? prev.nextSibling : box.firstChild;
    if (want !== item.el) box.insertBefore(item.el, want);
    prev = item.el;
    seen.add(key);
  });
  for (const [key, item] of rendered) {
    if (!seen.has(key)) {
      item.el.remove();
      rendered.delete(key);
    }
  }
  box.scrollTop = box.scrollHeight;
}

// A streamed chunk: text to add and pieces of tool calls by index.
function addChunk(chunk) {
  let p = st.partials.get(chunk.id);
  if (!p) {
    p = { type: "ai", id: chunk.id, content: "", tool_calls: [], partial: true };
    st.partials.set(chunk.id, p);
  }
  p.content += typeof chunk.content === "string" ? chunk.content : "";
  for (const piece of chunk.tool_call_chunks || []) {
    const c = (p.tool_calls[piece.index || 0] ||= { id: "", name: "", args: "" });
    if (piece.id) c.id = piece.id;
    if (piece.name) c.name = piece.name;
    c.args += piece.args || "";
  }
  p.tool_calls = p.tool_calls.filter(Boolean);
}

function upsertMessage(m) {
  const i = m.id ? st.messages.findIndex((x) => x.id === m.id) : -1;
  if (i >= 0) st.messages[i] = m;
  else st.messages.push(m);
}

// ---- runs ----

function onEvent(name, data) {
  const [kind, ns] = name.split("|");
  if (ns) return; // subgraph events: the parent's show the outcome
  switch (kind) {
    case "metadata":
      if (st.run && data && data.run_id) {
        st.run.id = data.run_id;
        $("cancel").disabled = false;
      }
      break;
    case "messages": {
      const [m] = Array.isArray(data) ? data : [data];
      if (!m || typeof m !== "object") break;
      if (m.type === "AIMessageChunk") addChunk(m);
      else upsertMessage(m);
      renderMessages();
      break;
    }
    case "values":
      if (data && data.__interrupt__) {
        st.interrupts = data.__interrupt__;
        renderInterrupts();
      } else if (data && Array.isArray(data.messages)) {
        st.messages = data.messages;
        st.partials.clear();
        renderMessages();
      }
      break;
    case "updates":
      if (data && data.__interrupt__) {
        st.interrupts = data.__interrupt__;
        renderInterrupts();
      } else if (data) {
        const nodes = Object.keys(data);
        if (nodes.length) setStatus(`Node ${nodes.join(", ")} finished.`);
      }
      break;
    case "debug":
      if (!data || !data.payload) break;
      taskEvent(data.type, data.payload.name);
      break;
    case "error":
      setAlert(`The run failed: ${data && data.message ? data.message : JSON.stringify(data)}`);
      break;
  }
}

// A node stays marked a moment after its task ends, so that one that runs
// in a millisecond is still seen.
const linger = 400;

function taskEvent(type, name) {
  if (!name) return;
  const n = st.tasks.get(name) || 0;
  if (type === "task_start") {
    st.tasks.set(name, n + 1);
    st.running.add(name);
    showRunning();
  } else if (type === "task_end") {
    st.tasks.set(name, Math.max(0, n - 1));
    setTimeout(() => {
      if (!st.tasks.get(name)) {
        st.running.delete(name);
        showRunning();
      }
    }, linger);
  }
}

function runControls(busy) {
  $("send").disabled = busy;
  $("cancel").disabled = !busy || !st.run || !st.run.id;
  for (const b of document.querySelectorAll("#interrupt button, .fork-actions button")) b.disabled = busy;
  document.body.classList.toggle("busy", busy);
}

// startRun streams a new run of the selected thread. body adds to the
// request: input, command, checkpoint_id.
async function startRun(body, what) {
  if (st.run) {
    setAlert("A run is already streaming on this page; cancel it or wait for it to end.");
    return;
  }
  const tid = st.thread.thread_id;
  const controller = new AbortController();
  const run = { id: "", tid, controller };
  st.run = run;
  st.interrupts = [];
  renderInterrupts();
  setAlert("");
  setStatus(`${what}: running…`);
  runControls(true);
  try {
    await api.stream("POST", `/threads/${enc(tid)}/runs/stream`, { assistant_id: st.assistant.assistant_id, stream_mode: streamModes, ...body }, {
      signal: controller.signal,
      onOpen(location) {
        const id = location.split("/runs/")[1];
        if (id && !run.id) run.id = id;
        $("cancel").disabled = !run.id;
      },
      onEvent,
    });
  } finally {
    await endRun(run, what);
  }
}

// joinActiveRun watches a run another client started.
async function joinActiveRun(tid) {
  const runs = (await api.get(`/threads/${enc(tid)}/runs?limit=10`)) || [];
  const active = runs.find((r) => r.status === "running" || r.status === "pending");
  if (!active) return;
  const controller = new AbortController();
  const run = { id: active.run_id, tid, controller };
  st.run = run;
  setStatus("Watching a run in progress…");
  runControls(true);
  try {
    await api.stream("GET", `/threads/${enc(tid)}/runs/${enc(active.run_id)}/stream`, undefined, { signal: controller.signal, onEvent });
  } finally {
    await endRun(run, "The run");
  }
}

async function endRun(run, what) {
  if (st.run !== run) return;
  const tid = run.tid;
  st.run = null;
  st.partials.clear();
  st.running.clear();
  st.tasks.clear();
  showRunning();
  runControls(false);
  if (!st.thread || st.thread.thread_id !== tid) return;
  let outcome = "ended";
  if (run.id) {
    const rec = await api.get(`/threads/${enc(tid)}/runs/${enc(run.id)}`).catch(() => null);
    if (rec) outcome = rec.status;
  }
  st.thread = await api.get(`/threads/${enc(tid)}`);
  await refreshState();
  files.load(tid).catch(report);
  if (st.interrupts.length) outcome = "interrupted: waiting for your answer";
  await loadThreads();
  if (st.timelineOpen) await loadTimeline();
  setStatus(`${what} ${outcome === "success" ? "finished" : outcome}.`);
}

async function send(event) {
  event.preventDefault();
  const box = $("chat-input");
  const text = box.value.trim();
  if (!text || st.run) return;
  let input;
  if (st.hasMessages) {
    input = { messages: [{ type: "human", content: text }] };
  } else {
    try {
      input = JSON.parse(text);
    } catch (err) {
      setAlert(`The input is not JSON: ${err.message}`);
      return;
    }
  }
  if (!st.thread) {
    const t = await api.post("/threads", { metadata: { graph_id: st.assistant.graph_id } });
    await selectThread(t.thread_id);
  }
  box.value = "";
  if (st.hasMessages) {
    st.messages.push({ type: "human", content: text, id: `pending-${Date.now()}` });
    renderMessages();
  }
  await startRun({ input }, "The run");
}

async function cancelRun() {
  if (!st.run || !st.run.id) return;
  setStatus("Cancelling the run…");
  await api.post(`/threads/${enc(st.run.tid)}/runs/${enc(st.run.id)}/cancel`);
}

// ---- interrupts ----

function renderInterrupts() {
  const form = $("interrupt");
  form.hidden = st.interrupts.length === 0;
  $("interrupt-values").replaceChildren(
    ...st.interrupts.map((it) =>
      h(
        "div",
        { class: "interrupt-value" },
        typeof it.value === "string"
          ? h("p", { class: "question" }, it.value)
          : [
              it.value && typeof it.value.question === "string" ? h("p", { class: "question" }, it.value.question) : null,
              tree(it.value, { label: "value", openDepth: 2 }),
            ],
      ),
    ),
  );
}

async function resume(event) {
  event.preventDefault();
  if (!st.thread || st.interrupts.length === 0) return;
  const raw = $("resume-value").value;
  let value;
  try {
    value = JSON.parse(raw);
  } catch {
    value = raw;
  }
  // One answer for one interrupt; several are answered by id.
  const resumeWith = st.interrupts.length === 1 ? value : Object.fromEntries(st.interrupts.map((it) => [it.id, value]));
  $("resume-value").value = "";
  await startRun({ command: { resume: resumeWith } }, "The resumed run");
}

// ---- timeline ----

function setTimeline(open) {
  st.timelineOpen = open;
  const button = $("timeline-toggle");
  button.setAttribute("aria-expanded", String(open));
  button.textContent = open ? "Hide checkpoints" : "Show checkpoints";
  $("timeline").hidden = !open;
}

async function toggleTimeline() {
  setTimeline(!st.timelineOpen);
  if (st.timelineOpen) await loadTimeline();
}

async function loadTimeline() {
  if (!st.thread) return;
  const tid = st.thread.thread_id;
  const hist = (await api.post(`/threads/${enc(tid)}/history`, { limit: 100 })) || [];
  if (!st.thread || st.thread.thread_id !== tid) return;
  st.history = hist;
  const byID = new Map(hist.map((cp) => [cp.checkpoint && cp.checkpoint.checkpoint_id, cp]));
  const list = $("timeline");
  if (hist.length === 0) {
    list.replaceChildren(h("li", { class: "muted" }, "No checkpoints yet."));
    return;
  }
  list.replaceChildren(
    ...hist.map((cp, i) => {
      const parent = cp.parent_checkpoint ? byID.get(cp.parent_checkpoint.checkpoint_id) : null;
      // History is newest first: a parent other than the next entry is a fork.
      const forkOf = parent && hist[i + 1] !== parent ? parent : null;
      return checkpointItem(cp, parent, forkOf, i === 0);
    }),
  );
}

function checkpointItem(cp, parent, forkOf, latest) {
  const md = cp.metadata || {};
  const id = cp.checkpoint ? cp.checkpoint.checkpoint_id : "";
  const next = cp.next || [];
  const when = cp.created_at ? new Date(cp.created_at).toLocaleTimeString() : "";
  const writes = changes(parent ? parent.values : {}, cp.values || {});
  const wrote = Object.keys(writes);
  const summary = `Step ${md.step} · ${md.source || "?"}${wrote.length ? ` · wrote ${wrote.join(", ")}` : ""} · ${next.length ? `next: ${next.join(", ")}` : "done"}`;
  return h(
    "li",
    { class: "checkpoint", "data-checkpoint": id, "data-step": md.step, "data-next": next.join(",") },
    h(
      "details",
      null,
      h(
        "summary",
        null,
        latest ? h("span", { class: "badge ok" }, "current") : null,
        h("span", null, ` ${summary}`),
        forkOf ? h("span", { class: "fork-note" }, ` · forked from step ${(forkOf.metadata || {}).step}`) : null,
        h("span", { class: "muted when" }, ` ${when}`),
      ),
      h("p", { class: "muted cid" }, `checkpoint ${id}`),
      h("h3", null, "Writes"),
      wrote.length ? tree(writes, { openDepth: 3 }) : h("p", { class: "muted" }, parent ? "Nothing changed." : "The thread's first checkpoint."),
      (cp.interrupts || []).length ? [h("h3", null, "Interrupts"), tree(cp.interrupts, { openDepth: 3 })] : null,
      h("h3", null, "State"),
      tree(cp.values || {}, { openDepth: 1 }),
      h("h3", null, "Metadata"),
      tree(md, { openDepth: 0, label: "metadata" }),
      h(
        "div",
        { class: "buttons fork-actions" },
        h("button", { type: "button", class: "fork", onclick: () => openFork(cp) }, "Edit state and fork…"),
        next.length ? h("button", { type: "button", class: "rerun", onclick: guarded(() => runFrom(id, `Run from step ${md.step}`)) }, "Run again from here") : null,
      ),
    ),
  );
}

// changes is what a checkpoint's values add to its parent's: changed keys,
// and of lists of messages only the messages that are new or changed.
function changes(before, after) {
  const out = {};
  for (const [k, v] of Object.entries(after)) {
    const old = before ? before[k] : undefined;
    if (JSON.stringify(old) === JSON.stringify(v)) continue;
    if (Array.isArray(v) && Array.isArray(old) && v.every((x) => x && x.id)) {
      const was = new Map(old.map((x) => [x && x.id, JSON.stringify(x)]));
      out[k] = v.filter((x) => was.get(x.id) !== JSON.stringify(x));
    } else {
      out[k] = v;
    }
  }
  return out;
}

let forking = null; // the checkpoint the fork dialog edits

function openFork(cp) {
  forking = cp;
  const md = cp.metadata || {};
  $("fork-about").textContent = `Checkpoint ${cp.checkpoint.checkpoint_id}, step ${md.step}${(cp.next || []).length ? `, before ${cp.next.join(", ")}` : ""}. Forking writes a new checkpoint after this one; the thread goes on from there and its later checkpoints stay in the timeline.`;
  $("fork-values").value = JSON.stringify(cp.values || {}, null, 2);
  const select = $("fork-as-node");
  select.replaceChildren(
    h("option", { value: "" }, "new input (the graph goes on from its entry)"),
    ...st.nodes.filter((n) => n !== "__start__" && n !== "__end__").map((n) => h("option", { value: n }, `an update by node ${n}`)),
  );
  $("fork-dialog").showModal();
  $("fork-values").focus();
}

// edits is what to write for the edited values: changed keys; of lists of
// messages, the changed and new messages, and removals of deleted ones.
function edits(before, after) {
  const out = {};
  for (const [k, v] of Object.entries(after)) {
    const old = before[k];
    if (JSON.stringify(old) === JSON.stringify(v)) continue;
    if (Array.isArray(v) && Array.isArray(old) && old.every((x) => x && x.id)) {
      const was = new Map(old.map((x) => [x.id, JSON.stringify(x)]));
      const kept = new Set(v.map((x) => x && x.id));
      out[k] = [
        ...old.filter((x) => !kept.has(x.id)).map((x) => ({ type: "remove", id: x.id })),
        ...v.filter((x) => !x || !x.id || was.get(x.id) !== JSON.stringify(x)),
      ];
    } else {
      out[k] = v;
    }
  }
  return out;
}

async function submitFork(event) {
  event.preventDefault();
  const action = event.submitter ? event.submitter.value : "run";
  const dialog = $("fork-dialog");
  if (action === "close" || !forking) {
    dialog.close();
    return;
  }
  let edited;
  try {
    edited = JSON.parse($("fork-values").value);
  } catch (err) {
    setAlert(`The state is not valid JSON: ${err.message}`);
    $("fork-values").focus();
    return;
  }
  const cp = forking;
  const values = edits(cp.values || {}, edited);
  const asNode = $("fork-as-node").value;
  dialog.close();
  let target = cp.checkpoint.checkpoint_id;
  if (Object.keys(values).length > 0 || asNode) {
    const res = await api.post(`/threads/${enc(st.thread.thread_id)}/state`, {
      checkpoint: { checkpoint_id: target },
      values,
      as_node: asNode || undefined,
    });
    target = res.checkpoint.checkpoint_id;
    setStatus(`Forked: new checkpoint ${target}.`);
  }
  if (action === "run") await runFrom(target, "The forked run");
  else {
    st.thread = await api.get(`/threads/${enc(st.thread.thread_id)}`);
    await refreshState();
    await loadThreads();
    await loadTimeline();
  }
}

async function runFrom(checkpointID, what) {
  await startRun({ input: null, checkpoint_id: checkpointID }, what);
}

// ---- wiring ----

async function start() {
  api.onUnauthorized = () => {
    $("key-form").hidden = false;
    $("api-key").focus();
  };
  $("assistant").addEventListener("change", guarded(async (e) => {
    await selectAssistant(e.target.value);
    // A thread runs one graph: another assistant starts another thread.
    const graphID = st.thread && st.thread.metadata && st.thread.metadata.graph_id;
    if (graphID && graphID !== st.assistant.graph_id) newThread();
  }));
  $("new-thread").addEventListener("click", newThread);
  $("thread-search").addEventListener("input", renderThreads);
  $("thread-status").addEventListener("change", guarded(loadThreads));
  $("chat-form").addEventListener("submit", guarded(send));
  $("chat-input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("chat-form").requestSubmit();
    }
  });
  $("cancel").addEventListener("click", guarded(cancelRun));
  $("delete-thread").addEventListener("click", guarded(deleteThread));
  $("interrupt").addEventListener("submit", guarded(resume));
  $("timeline-toggle").addEventListener("click", guarded(toggleTimeline));
  $("fork-form").addEventListener("submit", guarded(submitFork));
  $("key-form").addEventListener("submit", guarded(async (e) => {
    e.preventDefault();
    api.setKey($("api-key").value);
    $("key-form").hidden = true;
    setAlert("");
    await boot();
  }));
  renderMessages();
  await boot();
}

async function boot() {
  await loadAssistants();
  const info = await api.get("/info");
  files.enable(Boolean(info && info.flags && info.flags.thread_files));
  await loadThreads();
  const m = /^#thread=(.+)$/.exec(location.hash);
  if (m) await selectThread(decodeURIComponent(m[1]));
  document.body.dataset.ready = "true";
}

guarded(start)();
