// Package studio serves agentgraph's studio: a web page to watch and steer
// the threads of an Agent Server (package server). The page draws each
// assistant's graph, streams runs into a chat, shows a thread's checkpoints,
// forks a thread from an edited checkpoint and answers interrupts.
//
// The page is static files embedded in the binary, plain HTML, CSS and
// JavaScript modules with no build step; it talks to the server only through
// the server's public HTTP API, from the same origin.
package studio
