// Package storetest is the conformance suite for store.Store
// implementations: Run(t, newStore) holds a store to the contract written in
// package store's documentation, with time on a Clock the suite moves by
// hand. Any store, in this module or outside it, calls Run from one of its
// tests.
package storetest
