// Package anthropic is a model.ChatModel over Anthropic's Messages API,
// built on github.com/anthropics/anthropic-sdk-go.
//
// It sends system prompts, tools, tool choice and JSON-schema output
// formats, turns tool calls and tool results into tool_use and tool_result
// blocks, streams text and tool-input deltas, maps stop reasons and token
// usage to the model package's terms, and lets the SDK retry rate limits,
// overload and server errors.
package anthropic
