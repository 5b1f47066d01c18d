// The sandbox guide's four scenarios, played over HTTP against
// cmd/agentgraph-server (graph "codeact", scripted model) with
// @langchain/langgraph-sdk: node guide.mjs URL. The server runs with
// RUN_TIMEOUT=3 (cmd/agentgraph-server/main_test.go).
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.argv[2] });
const ask = (content) => ({ messages: [{ role: "user", content }] });
const last = (values) => values.messages.at(-1).content;

// "Tool said:\n[sb_…] <ending>\n<output>" -> [sandbox id, rest]
function toolSaid(text) {
  const m = /^Tool said:\n\[(sb_[a-z0-9]+)\] ([^]*)$/.exec(text);
  assert.ok(m, `not a tool answer: ${JSON.stringify(text)}`);
  return [m[1], m[2]];
}

let thread1, thread2, sandbox1;

test("1. the tool called directly on thread 1", async () => {
  thread1 = (await client.threads.create({ metadata: { scenario: "guide" } })).thread_id;
  const call = {
    type: "ai",
    content: "",
    tool_calls: [{ id: "call_direct", name: "run_python", args: { code: "import platform, os; print(platform.python_version(), os.getcwd())" } }],
  };
  // As if the model had asked for the call: the thread's next step is the
  // tools node, which the run takes.
  await client.threads.updateState(thread1, { values: { messages: [call] }, asNode: "agent" });
  assert.deepEqual((await client.threads.getState(thread1)).next, ["tools"]);
  const values = await client.runs.wait(thread1, "codeact", { input: null });
  const [id, rest] = toolSaid(last(values));
  assert.match(rest, /^exit code 0\n3\.\d+\.\d+ \/home\/user\s*$/);
  assert.equal(values.messages[1].type, "tool");
  assert.equal(values.messages[1].tool_call_id, "call_direct");
  sandbox1 = id;
});

test("2. thread 1 counts the primes, then reads its file back", async () => {
  let values;
  for await (const part of client.runs.stream(thread1, "codeact", { input: ask("count the primes"), streamMode: "values" })) {
    if (part.event === "values") values = part.data;
  }
  const [id, rest] = toolSaid(last(values));
  assert.equal(id, sandbox1);
  assert.equal(rest.trim(), "exit code 0\nprimes below 1,000,000: 78498\nlargest gap: 114 after 492113");
  const again = await client.runs.wait(thread1, "codeact", {
    input: ask("import json; print(len(json.load(open('primes.json'))), 'primes still on disk')"),
  });
  const [id2, rest2] = toolSaid(last(again));
  assert.equal(id2, sandbox1);
  assert.equal(rest2.trim(), "exit code 0\n78498 primes still on disk");
  // Three turns: the direct call's two messages, then four per turn.
  assert.equal((await client.threads.getState(thread1)).values.messages.length, 2 + 1 + 4 + 4);
});

test("3. thread 2 has a sandbox of its own", async () => {
  thread2 = (await client.threads.create()).thread_id;
  const values = await client.runs.wait(thread2, "codeact", { input: ask("import os; print(os.path.exists('primes.json'))") });
  const [id, rest] = toolSaid(last(values));
  assert.notEqual(id, sandbox1);
  assert.equal(rest.trim(), "exit code 0\nFalse");
});

test("4. a runaway loop on thread 2 times out", async () => {
  const started = Date.now();
  const values = await client.runs.wait(thread2, "codeact", { input: ask("import time\nwhile True: time.sleep(1)") });
  const [, rest] = toolSaid(last(values));
  assert.equal(rest.trim(), "timed out");
  assert.ok(Date.now() - started < 20000);
  const runs = await client.runs.list(thread2);
  assert.deepEqual(runs.map((r) => r.status), ["success", "success"]);
  assert.equal((await client.threads.get(thread2)).status, "idle");
});
