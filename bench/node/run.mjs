// LangGraph.js column of the agentgraph benchmark table.
//
// Builds LangGraph's own benchmark workloads (libs/langgraph/bench in the
// Python repository) with @langchain/langgraph and prints one JSON line per
// cell:
//
//   {"framework":"langgraphjs","workload":"react_agent_10x","variant":"memory",
//    "n":12,"median_ms":4.1,"min_ms":3.9,"check":22}
//
// Runs use durability "exit", as LangGraph's bench does: with a saver, only the
// final checkpoint of each run is written. The growth check instead uses
// durability "sync" so that every superstep is saved before the next starts.
//
// Usage: node run.mjs [-workloads a,b] [-variants none,memory] [-quick]
//        [-growth 100,1000] [-growth-budget-ms 90000] [-target-ms 1000]
//        [-min-runs 5]
import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import { performance } from "node:perf_hooks";

import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { tool } from "@langchain/core/tools";
import {
  Annotation,
  END,
  MemorySaver,
  MessagesAnnotation,
  START,
  Send,
  StateGraph,
} from "@langchain/langgraph";
import { createReactAgent } from "@langchain/langgraph/prebuilt";

const FRAMEWORK = "langgraphjs";

// A fan-out of 100 Sends adds one abort listener per task to the run's signal;
// that is by design, so the leak warning would only be noise.
setMaxListeners(1000);

// ---- flags -----------------------------------------------------------------

function parseFlags(argv) {
  const flags = {
    workloads: null,
    variants: ["none", "memory"],
    quick: false,
    growth: null,
    targetMs: 1000,
    minRuns: 5,
    growthBudgetMs: 90_000,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i].replace(/^--?/, "");
    const [key, inline] = a.split("=", 2);
    const next = () => (inline !== undefined ? inline : argv[++i]);
    switch (key) {
      case "workloads":
        flags.workloads = next().split(",").filter(Boolean);
        break;
      case "variants":
        flags.variants = next().split(",").filter(Boolean);
        break;
      case "quick":
        flags.quick = true;
        break;
      case "growth":
        flags.growth = next().split(",").filter(Boolean).map(Number);
        break;
      case "target-ms":
        flags.targetMs = Number(next());
        break;
      case "growth-budget-ms":
        flags.growthBudgetMs = Number(next());
        break;
      case "min-runs":
        flags.minRuns = Number(next());
        break;
      default:
        throw new Error(`unknown flag ${argv[i]}: see the usage line at the top of run.mjs`);
    }
  }
  if (flags.quick) {
    flags.targetMs = Math.min(flags.targetMs, 200);
    flags.minRuns = Math.min(flags.minRuns, 3);
  }
  return flags;
}

// ---- workloads -------------------------------------------------------------

const LETTERS = "abcdefghijklmnopqrstuvwxyz";
const randomLetter = () => LETTERS[Math.floor(Math.random() * LETTERS.length)];
const randomString = (n) => {
  let s = "";
  for (let i = 0; i < n; i++) s += randomLetter();
  return s;
};

// sequential_N: a chain of N no-op nodes over the messages state.
function sequential(n) {
  let calls = 0;
  const builder = new StateGraph(MessagesAnnotation);
  let prev = START;
  for (let i = 0; i < n; i++) {
    const name = `node_${i}`;
    builder.addNode(name, () => {
      calls++;
      return {};
    });
    builder.addEdge(prev, name);
    prev = name;
  }
  builder.addEdge(prev, END);
  return {
    builder,
    input: () => ({ messages: [] }),
    reset: () => {
      calls = 0;
    },
    check: () => calls,
    expect: n,
  };
}

// fanout_to_subgraph_Nx: one Send per subject to a compiled subgraph that
// edits the subject, writes a joke, then bumps it until it ends in ten " a".
function fanoutToSubgraph(n) {
  const Overall = Annotation.Root({
    subjects: Annotation(),
    jokes: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  });
  const JokeInput = Annotation.Root({ subject: Annotation() });
  const JokeOutput = Annotation.Root({ jokes: Annotation() });
  const JokeState = Annotation.Root({ subject: Annotation(), jokes: Annotation() });

  const tenA = " a".repeat(10);
  const sub = new StateGraph({ stateSchema: JokeState, input: JokeInput, output: JokeOutput })
    .addNode("edit", (s) => ({ subject: `${s.subject} - hohoho` }))
    .addNode("generate", (s) => ({ jokes: [`Joke about ${s.subject}`] }))
    .addNode("bump", (s) => ({ jokes: [s.jokes[0] + " a"] }))
    .addEdge(START, "edit")
    .addEdge("edit", "generate")
    .addEdge("generate", "bump")
    .addConditionalEdges("bump", (s) => (s.jokes[0].endsWith(tenA) ? END : "bump"))
    .addEdge("generate", END)
    .compile();

  const builder = new StateGraph(Overall)
    .addNode("generate_joke", sub)
    .addConditionalEdges(START, (s) => s.subjects.map((subject) => new Send("generate_joke", { subject })))
    .addEdge("generate_joke", END);

  // Subjects are lists of 1000 letters, as in LangGraph's bench.
  const subjects = Array.from({ length: n }, () => Array.from({ length: 1000 }, randomLetter));
  let last = null;
  return {
    builder,
    input: () => ({ subjects }),
    reset: () => {
      last = null;
    },
    onChunk: (c) => {
      if (c.generate_joke) last = (last ?? 0) + c.generate_joke.jokes.filter((j) => j.endsWith(tenA)).length;
    },
    check: () => last,
    expect: n,
  };
}

// A chat model that replays a fixed list of messages, cycling, and ignores
// the tools it is bound to.
class ScriptedChatModel extends BaseChatModel {
  constructor(responses, onCall) {
    super({});
    this.responses = responses;
    this.i = 0;
    this.onCall = onCall;
  }
  _llmType() {
    return "scripted";
  }
  bindTools() {
    return this;
  }
  async _generate() {
    this.onCall?.();
    const message = this.responses[this.i];
    this.i = (this.i + 1) % this.responses.length;
    return { generations: [{ message, text: typeof message.content === "string" ? message.content : "" }] };
  }
}

function reactModel(turns, onCall) {
  const toolName = randomUUID();
  const searchTool = tool(({ query }) => `result for query: ${query}`.repeat(10), {
    name: toolName,
    description: "",
    schema: {
      type: "object",
      properties: { query: { type: "string" } },
      required: ["query"],
    },
  });
  const responses = [];
  for (let i = 0; i < turns; i++) {
    responses.push(
      new AIMessage({
        content: "",
        id: randomUUID(),
        tool_calls: [{ id: randomUUID(), name: toolName, args: { query: randomUUID().repeat(100) } }],
      }),
    );
  }
  responses.push(new AIMessage({ content: "answer".repeat(100), id: randomUUID() }));
  return { model: new ScriptedChatModel(responses, onCall), tools: [searchTool] };
}

// react_agent_Nx: createReactAgent, a scripted model, one tool; N rounds.
function reactAgent(turns, checkpointer, onCall) {
  const { model, tools } = reactModel(turns, onCall);
  let final = null;
  // "v2" sends each tool call to the tool node, as Python's default does.
  const graph = createReactAgent({ llm: model, tools, checkpointSaver: checkpointer, version: "v2" });
  return {
    graph,
    input: () => ({ messages: [new HumanMessage("hi?")] }),
    reset: () => {
      final = 0;
    },
    onChunk: (c) => {
      for (const k of Object.keys(c)) final += c[k]?.messages?.length ?? 0;
    },
    // input message + per round an AI and a tool message + the final answer
    check: () => final + 1,
    expect: 2 * turns + 2,
  };
}

// wide_state_IxN: 15 keys with append, merge and last-non-null reducers,
// a two-way join, looping until there are more than N messages.
function wideState(n, outer, inner) {
  const concat = () => Annotation({ reducer: (a, b) => a.concat(b), default: () => [] });
  const nonNull = () => Annotation({ reducer: (x, y) => (y !== null && y !== undefined ? y : x), default: () => null });
  const merge = () => Annotation({ reducer: (x, y) => ({ ...x, ...y }), default: () => ({}) });
  const State = Annotation.Root({
    messages: concat(),
    trigger_events: concat(),
    primary_issue_medium: Annotation({ reducer: (x, y) => y || x, default: () => "email" }),
    autoresponse: Annotation({ reducer: (_, y) => y, default: () => null }),
    issue: Annotation({ reducer: (x, y) => (y ? y : x), default: () => null }),
    relevant_rules: Annotation(),
    memory_docs: Annotation(),
    categorizations: concat(),
    responses: concat(),
    user_info: nonNull(),
    crm_info: nonNull(),
    email_thread_id: nonNull(),
    slack_participants: merge(),
    bot_id: Annotation(),
    notified_assignees: merge(),
  });
  const listFields = new Set(["messages", "trigger_events", "categorizations", "responses", "memory_docs", "relevant_rules"]);
  const dictFields = new Set(["user_info", "crm_info", "slack_participants", "notified_assignees", "autoresponse", "issue"]);
  const readWrite = (read, write) => (state) => {
    let val = state[read];
    if (typeof val === "string") val = { [val]: val };
    const single = Array.isArray(val) ? val[val.length - 1] : val;
    const list = Array.isArray(val) ? val : [val];
    const out = {};
    for (const k of write) out[k] = listFields.has(k) ? list : dictFields.has(k) ? single : randomString(n);
    return out;
  };
  let messages = 0;
  const builder = new StateGraph(State)
    .addNode("one", readWrite("messages", ["trigger_events", "primary_issue_medium"]))
    .addNode("two", readWrite("trigger_events", ["autoresponse", "issue"]))
    .addNode("three", readWrite("autoresponse", ["relevant_rules"]))
    .addNode("four", readWrite("trigger_events", ["categorizations", "responses", "memory_docs"]))
    .addNode(
      "five",
      readWrite("categorizations", ["user_info", "crm_info", "email_thread_id", "slack_participants", "bot_id", "notified_assignees"]),
    )
    .addNode("six", readWrite("responses", ["messages"]))
    .addEdge(START, "one")
    .addEdge("one", "two")
    .addEdge("two", "three")
    .addEdge("two", "four")
    .addEdge(["three", "four"], "five")
    .addEdge("five", "six")
    .addConditionalEdges("six", (s) => {
      messages = s.messages.length;
      return s.messages.length > n ? END : "one";
    });

  const leaf = [];
  for (let r = 0; r < 5; r++) leaf.push("hi?".repeat(10), true, 1, 6327816386138, null);
  const message = {};
  for (let i = 0; i < outer; i++) {
    const m = {};
    for (let j = 0; j < inner; j++) m[String(j).repeat(10)] = leaf;
    message[String(i).repeat(10)] = m;
  }
  return {
    builder,
    input: () => ({ messages: [message] }),
    reset: () => {
      messages = 0;
    },
    check: () => messages,
    expect: wideExpect(n),
  };
}

// The number of messages at which wide_state stops: each loop appends
// messages to trigger_events, trigger_events to responses, responses to messages.
export function wideExpect(n) {
  let m = 1,
    t = 0,
    r = 0;
  while (!(m > n)) {
    t += m;
    r += t;
    m += r;
  }
  return m;
}

const WORKLOADS = {
  sequential_10: (saver) => compiled(sequential(10), saver),
  sequential_1000: (saver) => compiled(sequential(1000), saver),
  fanout_to_subgraph_10x: (saver) => compiled(fanoutToSubgraph(10), saver),
  fanout_to_subgraph_100x: (saver) => compiled(fanoutToSubgraph(100), saver),
  react_agent_10x: (saver) => reactAgent(10, saver),
  react_agent_100x: (saver) => reactAgent(100, saver),
  wide_state_25x300: (saver) => compiled(wideState(300, 5, 5), saver),
  wide_state_15x600: (saver) => compiled(wideState(600, 3, 5), saver),
  wide_state_9x1200: (saver) => compiled(wideState(1200, 3, 3), saver),
};

function compiled(w, saver) {
  return { ...w, graph: w.builder.compile({ checkpointer: saver }) };
}

// ---- measurement -----------------------------------------------------------

async function runOnce(w, durability) {
  w.reset?.();
  const config = {
    configurable: { thread_id: randomUUID() },
    recursionLimit: 1_000_000_000,
    durability,
  };
  const stream = await w.graph.stream(w.input(), config);
  for await (const chunk of stream) w.onChunk?.(chunk);
  const got = w.check();
  if (got !== w.expect) throw new Error(`wrong result: check ${got}, want ${w.expect}`);
  return got;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function measure(w, flags) {
  // Warm up: one run, then more until 0.3 s has passed or five ran.
  const warm = performance.now();
  for (let i = 0; i === 0 || (i < 5 && performance.now() - warm < 300); i++) await runOnce(w, "exit");
  const times = [];
  const started = performance.now();
  let check = 0;
  while (times.length < flags.minRuns || performance.now() - started < flags.targetMs) {
    const t0 = performance.now();
    check = await runOnce(w, "exit");
    times.push(performance.now() - t0);
    if (times.length >= 10000) break;
  }
  return { n: times.length, median_ms: median(times), min_ms: Math.min(...times), check };
}

// growth: one agent run of `turns` rounds with every superstep saved; the
// offsets (ms since start) of each model call tell time per turn against
// thread length. A run still going after budgetMs is stopped, and what it
// reached is reported.
async function growth(turns, budgetMs) {
  const calls = [];
  const abort = new AbortController();
  let t0 = 0;
  const w = reactAgent(turns, new MemorySaver(), () => {
    const t = performance.now() - t0;
    calls.push(t);
    if (t - calls[0] > budgetMs) abort.abort(new Error("time budget"));
  });
  w.reset();
  t0 = performance.now();
  const config = {
    configurable: { thread_id: randomUUID() },
    recursionLimit: 1_000_000_000,
    durability: "sync",
    signal: abort.signal,
  };
  try {
    const stream = await w.graph.stream(w.input(), config);
    for await (const chunk of stream) w.onChunk(chunk);
  } catch (err) {
    if (!abort.signal.aborted) throw err;
    // Turns finished: every model call but the last started a turn that ended.
    const reached = calls.length - 1;
    return {
      total_ms: calls[reached] - calls[0],
      call_ms: calls.slice(0, reached + 1),
      reached,
      stopped: `stopped after ${Math.round(budgetMs / 1000)} s`,
    };
  }
  // From the first model call to the last: building the graph is not a turn.
  const total = calls[calls.length - 1] - calls[0];
  if (w.check() !== w.expect) throw new Error(`growth ${turns}: check ${w.check()}, want ${w.expect}`);
  return { total_ms: total, call_ms: calls, reached: turns };
}

function emit(obj) {
  process.stdout.write(JSON.stringify({ framework: FRAMEWORK, ...obj }) + "\n");
}

async function main() {
  const flags = parseFlags(process.argv.slice(2));
  const names = flags.workloads ?? Object.keys(WORKLOADS);
  for (const name of names) {
    const make = WORKLOADS[name];
    if (!make) {
      emit({ workload: name, error: `unknown workload: pick from ${Object.keys(WORKLOADS).join(", ")}` });
      continue;
    }
    for (const variant of flags.variants) {
      if (variant !== "none" && variant !== "memory") {
        emit({ workload: name, variant, na: "LangGraph.js has no such saver in this harness" });
        continue;
      }
      try {
        const w = make(variant === "memory" ? new MemorySaver() : undefined);
        emit({ workload: name, variant, durability: "exit", ...(await measure(w, flags)) });
      } catch (err) {
        emit({ workload: name, variant, error: String(err?.stack ?? err) });
      }
    }
  }
  for (const turns of flags.growth ?? []) {
    try {
      emit({ workload: "growth", variant: "memory", durability: "sync", turns, ...(await growth(turns, flags.growthBudgetMs)) });
    } catch (err) {
      emit({ workload: "growth", variant: "memory", turns, error: String(err?.stack ?? err) });
    }
  }
}

await main();
