// Package scripted provides chat models that answer from a script instead of
// a network, for tests, examples and demos: New replays fixed steps in order,
// and CodeAct turns each user message into one run_python call and each tool
// result into a reply.
//
// Both implement model.ChatModel, including Stream, so code that consumes
// token streams can be tested without a real model.
package scripted
