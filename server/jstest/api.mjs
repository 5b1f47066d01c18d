// Drives an agentgraph server with @langchain/langgraph-sdk: node api.mjs URL.
// The server serves three graphs (server/jstest_test.go): "echo" answers
// "echo: <text>"; "nap" sleeps in node nap for "nap MS" and then node wake
// answers; "ask" asks for a name with an interrupt and greets it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.argv[2] });
const human = (content) => ({ type: "human", content });
const texts = (values) => values.messages.map((m) => `${m.type}: ${m.content}`);

async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}

async function status(threadId) {
  return (await client.threads.get(threadId)).status;
}

async function untilRunning(threadId, runId) {
  for (let i = 0; i < 500; i++) {
    const run = await client.runs.get(threadId, runId);
    if (run.status === "running") return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`run ${runId} never started`);
}

async function rejects(promise, status) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.status, status, String(err));
    return true;
  });
}

test("assistants: search, get, graph", async () => {
  const found = await client.assistants.search({ graphId: "echo" });
  assert.equal(found.length, 1);
  assert.equal(found[0].graph_id, "echo");
  const byId = await client.assistants.get(found[0].assistant_id);
  assert.equal(byId.assistant_id, found[0].assistant_id);
  const drawing = await client.assistants.getGraph("echo");
  assert.deepEqual(drawing.nodes.map((n) => n.id), ["__start__", "agent", "__end__"]);
  await rejects(client.assistants.get("nobody"), 404);
});

test("threads: create with metadata, get, search, update, copy, delete", async () => {
  const t = await client.threads.create({ metadata: { user: "ann" } });
  assert.equal(t.status, "idle");
  assert.deepEqual(t.metadata, { user: "ann" });
  const got = await client.threads.get(t.thread_id);
  assert.equal(got.thread_id, t.thread_id);
  const found = await client.threads.search({ metadata: { user: "ann" } });
  assert.ok(found.some((x) => x.thread_id === t.thread_id));
  const patched = await client.threads.update(t.thread_id, { metadata: { plan: "pro" } });
  assert.deepEqual(patched.metadata, { user: "ann", plan: "pro" });
  await client.runs.wait(t.thread_id, "echo", { input: { messages: [human("copy me")] } });
  const copy = await client.threads.copy(t.thread_id);
  assert.notEqual(copy.thread_id, t.thread_id);
  const copied = await client.threads.getState(copy.thread_id);
  assert.deepEqual(texts(copied.values), ["human: copy me", "ai: echo: copy me"]);
  await client.threads.delete(t.thread_id);
  await rejects(client.threads.get(t.thread_id), 404);
});

test("runs.stream: values, updates and messages-tuple", async () => {
  const t = await client.threads.create();
  let created;
  const parts = await collect(
    client.runs.stream(t.thread_id, "echo", {
      input: { messages: [human("hi")] },
      streamMode: ["values", "updates", "messages-tuple"],
      onRunCreated: (meta) => (created = meta),
    }),
  );
  const events = parts.map((p) => p.event);
  assert.equal(events[0], "metadata");
  assert.equal(parts[0].data.run_id, created.run_id);
  assert.deepEqual([...new Set(events)].sort(), ["messages", "metadata", "updates", "values"]);
  const values = parts.filter((p) => p.event === "values");
  assert.deepEqual(texts(values.at(-1).data), ["human: hi", "ai: echo: hi"]);
  const update = parts.find((p) => p.event === "updates").data;
  assert.equal(update.agent.messages[0].type, "ai");
  assert.equal(update.agent.messages[0].content, "echo: hi");
  const [message, meta] = parts.find((p) => p.event === "messages").data;
  assert.equal(message.content, "echo: hi");
  assert.equal(meta.langgraph_node, "agent");
  assert.equal(meta.thread_id, t.thread_id);
  // Every frame has an id, so a client can rejoin from any of them.
  assert.ok(parts.every((p) => p.id !== undefined));
  const rest = await collect(client.runs.joinStream(t.thread_id, created.run_id, { lastEventId: parts[0].id }));
  assert.deepEqual(rest.map((p) => p.event), events.slice(1));
  const run = await client.runs.get(t.thread_id, created.run_id);
  assert.equal(run.status, "success");
});

test("runs.wait, state, history, updateState", async () => {
  const t = await client.threads.create();
  const values = await client.runs.wait(t.thread_id, "echo", { input: { messages: [{ role: "user", content: "yo" }] } });
  assert.deepEqual(texts(values), ["human: yo", "ai: echo: yo"]);
  const state = await client.threads.getState(t.thread_id);
  assert.deepEqual(state.next, []);
  assert.deepEqual(texts(state.values), ["human: yo", "ai: echo: yo"]);
  const history = await client.threads.getHistory(t.thread_id);
  assert.ok(history.length >= 2);
  assert.equal(history[0].checkpoint.checkpoint_id, state.checkpoint.checkpoint_id);
  const updated = await client.threads.updateState(t.thread_id, {
    values: { messages: [human("added by hand")] },
    asNode: "agent",
  });
  assert.ok(updated.checkpoint.checkpoint_id);
  const after = await client.threads.getState(t.thread_id);
  assert.equal(after.values.messages.at(-1).content, "added by hand");
  // The earlier checkpoint is still there to read.
  const earlier = await client.threads.getState(t.thread_id, state.checkpoint.checkpoint_id);
  assert.equal(earlier.values.messages.length, 2);
});

test("stateless runs", async () => {
  const values = await client.runs.wait(null, "echo", { input: { messages: [human("nobody's thread")] } });
  assert.equal(values.messages.at(-1).content, "echo: nobody's thread");
  const parts = await collect(client.runs.stream(null, "echo", { input: { messages: [human("s")] }, streamMode: "updates" }));
  assert.deepEqual(parts.map((p) => p.event), ["metadata", "updates"]);
});

test("bad input: 422 naming the field", async () => {
  const t = await client.threads.create();
  await assert.rejects(
    client.runs.wait(t.thread_id, "echo", { input: { messages: [{ type: "robot", content: "x" }] } }),
    (err) => err.status === 422 && err.message.includes("input.messages[0].type"),
  );
  assert.equal(await status(t.thread_id), "idle");
});

test("a failing run: runs.wait throws the run's error", async () => {
  const t = await client.threads.create();
  // echo indexes the last message; with none its node panics.
  await assert.rejects(client.runs.wait(t.thread_id, "echo", { input: { messages: [] } }), /^Error: NodeError: .*panicked/);
  assert.equal(await status(t.thread_id), "error");
  const [run] = await client.runs.list(t.thread_id);
  assert.equal(run.status, "error");
});

test("interrupt and resume with a command", async () => {
  const t = await client.threads.create();
  const parts = await collect(client.runs.stream(t.thread_id, "ask", { input: { messages: [human("hi")] }, streamMode: "updates" }));
  const paused = parts.find((p) => p.event === "updates" && p.data.__interrupt__);
  assert.ok(paused, JSON.stringify(parts));
  assert.deepEqual(paused.data.__interrupt__[0].value, { question: "what is your name?" });
  assert.equal(await status(t.thread_id), "interrupted");
  const state = await client.threads.getState(t.thread_id);
  assert.deepEqual(state.next, ["ask"]);
  assert.equal(state.tasks[0].interrupts[0].id, paused.data.__interrupt__[0].id);
  const values = await client.runs.wait(t.thread_id, "ask", { command: { resume: "Ada" } });
  assert.deepEqual(texts(values), ["human: hi", "ai: hello, Ada"]);
  assert.equal(await status(t.thread_id), "idle");
});

test("breakpoints per run", async () => {
  const t = await client.threads.create();
  await client.runs.wait(t.thread_id, "nap", { input: { messages: [human("quick")] }, interruptBefore: ["wake"] });
  assert.equal(await status(t.thread_id), "interrupted");
  assert.deepEqual((await client.threads.getState(t.thread_id)).next, ["wake"]);
  const values = await client.runs.wait(t.thread_id, "nap", { input: null });
  assert.deepEqual(texts(values), ["human: quick", "ai: napped: quick", "ai: awake: quick"]);
});

test("runs.cancel", async () => {
  const t = await client.threads.create();
  const run = await client.runs.create(t.thread_id, "nap", { input: { messages: [human("nap 30000")] } });
  await untilRunning(t.thread_id, run.run_id);
  await client.runs.cancel(t.thread_id, run.run_id, true);
  assert.equal((await client.runs.get(t.thread_id, run.run_id)).status, "interrupted");
  // The stopped step wrote nothing.
  assert.deepEqual(texts((await client.threads.getState(t.thread_id)).values), ["human: nap 30000"]);
});

test("multitaskStrategy", async (t) => {
  const cases = [
    ["reject", "success", ["human: nap 300", "ai: napped: nap 300", "ai: awake: nap 300"]],
    ["interrupt", "interrupted", ["human: nap 30000", "human: quick", "ai: napped: quick", "ai: awake: quick"]],
    ["rollback", null, ["human: quick", "ai: napped: quick", "ai: awake: quick"]],
    ["enqueue", "success", ["human: nap 300", "ai: napped: nap 300", "ai: awake: nap 300", "human: quick", "ai: napped: quick", "ai: awake: quick"]],
  ];
  for (const [strategy, firstStatus, messages] of cases) {
    await t.test(strategy, async () => {
      const thread = await client.threads.create();
      const nap = strategy === "interrupt" || strategy === "rollback" ? "nap 30000" : "nap 300";
      const first = await client.runs.create(thread.thread_id, "nap", { input: { messages: [human(nap)] } });
      await untilRunning(thread.thread_id, first.run_id);
      const input = { messages: [human("quick")] };
      if (strategy === "reject") {
        await rejects(client.runs.create(thread.thread_id, "nap", { input, multitaskStrategy: strategy }), 422);
        await client.runs.join(thread.thread_id, first.run_id);
      } else {
        const second = await client.runs.create(thread.thread_id, "nap", { input, multitaskStrategy: strategy });
        assert.equal(second.multitask_strategy, strategy);
        await client.runs.join(thread.thread_id, second.run_id);
        assert.equal((await client.runs.get(thread.thread_id, second.run_id)).status, "success");
      }
      if (firstStatus === null) {
        await rejects(client.runs.get(thread.thread_id, first.run_id), 404);
      } else {
        assert.equal((await client.runs.get(thread.thread_id, first.run_id)).status, firstStatus);
      }
      assert.deepEqual(texts((await client.threads.getState(thread.thread_id)).values), messages);
      assert.equal(await status(thread.thread_id), "idle");
    });
  }
});

test("store: putItem, getItem, searchItems, listNamespaces, deleteItem", async () => {
  await client.store.putItem(["sdk", "ann"], "prefs", { lang: "go", tabs: true });
  await client.store.putItem(["sdk", "bob"], "prefs", { lang: "python", tabs: false }, { ttl: 10 });
  const item = await client.store.getItem(["sdk", "ann"], "prefs");
  assert.deepEqual(item.namespace, ["sdk", "ann"]);
  assert.equal(item.key, "prefs");
  assert.deepEqual(item.value, { lang: "go", tabs: true });
  assert.ok(!Number.isNaN(Date.parse(item.createdAt)));
  const found = await client.store.searchItems(["sdk"], { filter: { lang: "python" } });
  assert.deepEqual(found.items.map((i) => i.namespace), [["sdk", "bob"]]);
  const all = await client.store.searchItems(["sdk"], { limit: 10 });
  assert.equal(all.items.length, 2);
  const spaces = await client.store.listNamespaces({ prefix: ["sdk"] });
  assert.deepEqual(spaces.namespaces, [["sdk", "ann"], ["sdk", "bob"]]);
  await client.store.deleteItem(["sdk", "ann"], "prefs");
  assert.equal(await client.store.getItem(["sdk", "ann"], "prefs"), null);
});
