// Package sandboxtest is the conformance suite for sandbox backends: Run holds a backend to the contract
// written in package sandbox's doc comments, with real commands and real files.
//
// A backend's tests call Run with a constructor, in the manner of testing/slogtest; optional interfaces
// (Downloader, FileLister, FileRemover, Starter) are tested when the sandbox has them.
package sandboxtest
