// Package openai is a model.ChatModel for any endpoint that speaks the
// OpenAI Chat Completions API (OpenAI itself, vLLM, Ollama, llama.cpp,
// LiteLLM and the like), written directly against that wire format.
//
// It sends tools, tool choice, parallel tool calls and JSON-schema response
// formats, assembles streamed tool-call pieces into whole calls, reports
// token usage (streamed runs ask for it with stream_options), and retries
// 429 and 5xx answers with bounded exponential backoff that honours
// Retry-After.
package openai
