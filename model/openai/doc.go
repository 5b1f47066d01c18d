// Package openai is a model.ChatModel for any endpoint that speaks the
// OpenAI Chat Completions API (OpenAI itself, vLLM, Ollama, llama.cpp,
// LiteLLM and the like), built on github.com/sashabaranov/go-openai.
//
// It sends tools, tool choice and parallel tool calls, assembles streamed
// tool-call pieces into whole calls, reports token usage, and retries 429 and
// 5xx answers with bounded exponential backoff that honours Retry-After.
package openai
