// The scripted CodeAct graph, as LangGraph.js builds it: an agent node whose
// scripted model turns a user message into a run_python call and a tool
// result into "Tool said:\n<result>", and a tools node whose run_python
// answers at once without running Python (the benchmark measures the
// server, not a sandbox). main.go serves the same graph from agentgraph.
import { AIMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { z } from "zod";

const runPython = tool(async ({ code }) => `[sb_bench] exit code 0\n${code.length} bytes of code`, {
  name: "run_python",
  description: "Run a Python program in the thread's sandbox.",
  schema: z.object({ code: z.string() }),
});

function agent(state) {
  const msgs = state.messages;
  const last = msgs[msgs.length - 1];
  if (last.getType() === "tool") {
    return { messages: [new AIMessage({ content: `Tool said:\n${last.content}` })] };
  }
  return {
    messages: [
      new AIMessage({
        content: "",
        tool_calls: [{ id: `call_${msgs.length}`, name: "run_python", args: { code: String(last.content) }, type: "tool_call" }],
      }),
    ],
  };
}

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("agent", agent)
  .addNode("tools", new ToolNode([runPython]))
  .addEdge(START, "agent")
  .addConditionalEdges("agent", toolsCondition, ["tools", END])
  .addEdge("tools", "agent")
  .compile();
