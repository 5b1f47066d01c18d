// Package checkpointtest is the conformance suite for checkpoint.Saver
// implementations: Run(t, newSaver) holds a saver to the contract written in
// package checkpoint's doc comments, including its optional interfaces.
// Any saver, in this module or outside it, calls Run from one of its tests.
package checkpointtest
