// Package codeact builds the CodeAct agent of the guide that the example,
// the Agent Server and the MCP server all serve: a model node and a tool
// node looping over run_python, and the chat model the flags name.
package codeact

import (
	"fmt"
	"os"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/anthropic"
	"github.com/agentgraph/agentgraph/model/openai"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
)

// ChatModel returns the guide's scripted stand-in when name is "" or
// "scripted", else model name behind an OpenAI-compatible endpoint
// (provider "" or "openai": OPENAI_API_KEY, OPENAI_BASE_URL) or Anthropic's
// API (provider "anthropic": ANTHROPIC_API_KEY). The commands read these
// variables here, on their user's behalf; the model packages do not.
func ChatModel(name, provider string) (model.ChatModel, error) {
	if name == "" || name == "scripted" {
		return scripted.CodeAct(scripted.WithProgram(scripted.PrimesPrompt, scripted.PrimesProgram)), nil
	}
	switch provider {
	case "anthropic":
		m, err := anthropic.New(name, anthropic.WithAPIKey(os.Getenv("ANTHROPIC_API_KEY")))
		if err != nil {
			return nil, fmt.Errorf("model %q: %w (set ANTHROPIC_API_KEY)", name, err)
		}
		return m, nil
	case "", "openai":
	default:
		return nil, fmt.Errorf("unknown provider %q: use -provider openai or -provider anthropic", provider)
	}
	m, err := openai.New(name)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w (set OPENAI_API_KEY, and OPENAI_BASE_URL for an endpoint other than OpenAI's)", name, err)
	}
	return m, nil
}

// Build wires the guide's graph, START -> agent -> (tools -> agent)* -> END,
// with the threads kept by saver.
func Build(chat model.ChatModel, runPython prebuilt.Tool, saver checkpoint.Saver, opts ...graph.CompileOption) (*graph.Graph[prebuilt.MessagesState], error) {
	tools := []prebuilt.Tool{runPython}
	agent, err := prebuilt.NewModelNode(chat, prebuilt.Messages, tools)
	if err != nil {
		return nil, err
	}
	toolNode, err := prebuilt.NewToolNode(prebuilt.Messages, tools)
	if err != nil {
		return nil, err
	}
	return graph.New(prebuilt.Messages).
		AddNode(prebuilt.AgentNode, agent).
		AddNode(prebuilt.ToolsNode, toolNode).
		AddEdge(graph.START, prebuilt.AgentNode).
		AddConditionalEdges(prebuilt.AgentNode, prebuilt.ToolsCondition(prebuilt.Messages), prebuilt.ToolsBranch()).
		AddEdge(prebuilt.ToolsNode, prebuilt.AgentNode).
		Compile(append([]graph.CompileOption{graph.WithSaver(saver)}, opts...)...)
}
