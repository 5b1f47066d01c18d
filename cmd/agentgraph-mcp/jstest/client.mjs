// Drives agentgraph-mcp over streamable HTTP with the official MCP
// TypeScript SDK: lists the tools, runs Python in the session's sandbox,
// writes and reads files, uses a shared thread, and ends the session.
// Usage: node client.mjs <url of /mcp>
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
const client = new Client({ name: "jstest", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(url);
await client.connect(transport);
assert.ok(transport.sessionId, "the server gave no session id");

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
assert.deepEqual(names, ["read_file", "run_python", "write_file"]);
const runPython = tools.find((t) => t.name === "run_python");
assert.equal(runPython.inputSchema.type, "object");
assert.deepEqual(runPython.inputSchema.required, ["code"]);
assert.ok(runPython.inputSchema.properties.thread, "run_python has no thread argument");

const text = (res) => {
  assert.ok(!res.isError, `tool error: ${JSON.stringify(res.content)}`);
  return res.content.map((c) => c.text).join("\n");
};
const call = async (name, args) => text(await client.callTool({ name, arguments: args }));

// Files stay in the session's sandbox from one call to the next.
assert.match(await call("write_file", { path: "data/numbers.txt", content: "3\n4\n5\n" }), /wrote 6 bytes to \/home\/\w+\/data\/numbers.txt/);
const out = await call("run_python", {
  code: "nums = [int(x) for x in open('data/numbers.txt')]\nprint(sum(n*n for n in nums))\nopen('out.txt','w').write('done')",
});
assert.match(out, /^\[sb_[a-z0-9]+\] exit code 0\n50$/);
assert.equal(await call("read_file", { path: "out.txt" }), "done");

// A failing program is a result, not an error.
assert.match(await call("run_python", { code: "raise SystemExit(3)" }), /exit code 3/);

// A thread names a sandbox of its own.
await call("write_file", { path: "t.txt", content: "shared", thread: "team" });
assert.equal(await call("read_file", { path: "t.txt", thread: "team" }), "shared");
const missing = await client.callTool({ name: "read_file", arguments: { path: "t.txt" } });
assert.ok(missing.isError, "the session's sandbox should not hold the thread's file");

// Bad arguments are refused by the server's schema.
const bad = await client.callTool({ name: "run_python", arguments: { code: 1 } }).catch((e) => ({ thrown: e }));
assert.ok(bad.thrown || bad.isError, "a number for code was accepted");

// Ending the session deletes its sandbox (the test checks).
await transport.terminateSession();
await client.close();
console.log("ok");
