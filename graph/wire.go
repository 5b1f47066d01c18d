package graph

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/agentgraph/agentgraph/checkpoint"
)

// KeyInfo describes one key of a graph's state: its name, the Go type of
// its value, and whether it keeps only the last value written (LastValue)
// or folds writes with a reducer.
type KeyInfo struct {
	Name      string
	Type      reflect.Type
	LastValue bool
}

// Keys describes the graph's state keys, in the order New took them.
func (g *Graph[S]) Keys() []KeyInfo {
	out := make([]KeyInfo, len(g.keys))
	for i, k := range g.keys {
		out[i] = KeyInfo{Name: k.Name(), Type: k.valueType(), LastValue: k.isLastValue()}
	}
	return out
}

// DecodeUpdate turns JSON values named by key into an Update, as a client
// of a server sends a run's input: each value is one write of its key (for
// a slice key, the list of elements to add), folded by the key's reducer. A
// name the graph does not declare, or a value its key's type cannot hold,
// is an error that names the key.
func (g *Graph[S]) DecodeUpdate(values map[string]json.RawMessage) (Update[S], error) {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)
	var u Update[S]
	for _, name := range names {
		ki, ok := g.keyByName[name]
		if !ok {
			return Update[S]{}, fmt.Errorf("graph: the state has no key %q (its keys: %v)", name, g.keyNames())
		}
		w, err := g.keys[ki].decodeWrite(checkpoint.JSON, values[name], false)
		if err != nil {
			return Update[S]{}, fmt.Errorf("graph: key %q: %w", name, err)
		}
		u.writes = append(u.writes, w)
	}
	return u, nil
}

// EncodeState returns each key of s as JSON, by key name.
func (g *Graph[S]) EncodeState(s S) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(g.keys))
	for _, k := range g.keys {
		b, err := k.encodeValue(&s, checkpoint.JSON)
		if err != nil {
			return nil, fmt.Errorf("graph: encoding key %q: %w", k.Name(), err)
		}
		out[k.Name()] = b
	}
	return out, nil
}

func (g *Graph[S]) keyNames() []string {
	names := make([]string, len(g.keys))
	for i, k := range g.keys {
		names[i] = k.Name()
	}
	return names
}
