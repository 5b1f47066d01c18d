package storetest

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/store"
)

var itemTests = []test{
	{name: "PutGet", run: func(t *testing.T, e *env) {
		value := map[string]any{
			"text":   "Ada likes tea ☕",
			"int":    42,
			"float":  2.5,
			"yes":    true,
			"none":   nil,
			"list":   []any{1, "two", []int{3}},
			"nested": map[string]any{"a": map[string]any{"b": []string{"c"}}},
			"empty":  map[string]any{},
		}
		e.put(t, ns("users", "u1"), "prefs", value)
		it := e.get(t, ns("users", "u1"), "prefs")
		want := map[string]any{
			"text":   "Ada likes tea ☕",
			"int":    42.0,
			"float":  2.5,
			"yes":    true,
			"none":   nil,
			"list":   []any{1.0, "two", []any{3.0}},
			"nested": map[string]any{"a": map[string]any{"b": []any{"c"}}},
			"empty":  map[string]any{},
		}
		if !reflect.DeepEqual(it.Value, want) {
			t.Errorf("Value = %#v; want %#v (as encoding/json decodes it)", it.Value, want)
		}
		if !reflect.DeepEqual(it.Namespace, ns("users", "u1")) || it.Key != "prefs" {
			t.Errorf("address = %q %q; want [users u1] prefs", it.Namespace, it.Key)
		}
		wantTime(t, "CreatedAt", it.CreatedAt, start)
		wantTime(t, "UpdatedAt", it.UpdatedAt, start)
		wantTime(t, "ExpiresAt", it.ExpiresAt, time.Time{})
	}},
	{name: "Missing", run: func(t *testing.T, e *env) {
		e.put(t, ns("a", "b"), "k", doc("v", 1))
		e.wantNotFound(t, ns("a", "b"), "other")
		e.wantNotFound(t, ns("a"), "k")
		e.wantNotFound(t, ns("a", "b", "c"), "k")
		e.wantNotFound(t, ns("b"), "k")
		e.wantNotFound(t, ns("A", "b"), "k")
	}},
	{name: "Replace", run: func(t *testing.T, e *env) {
		e.put(t, ns("docs"), "d", doc("title", "draft", "words", 10))
		e.clock.Advance(time.Second)
		e.put(t, ns("docs"), "d", doc("title", "final"))
		it := e.get(t, ns("docs"), "d")
		if !reflect.DeepEqual(it.Value, doc("title", "final")) {
			t.Errorf("Value = %v; want the second value whole, {title: final}", it.Value)
		}
		wantTime(t, "CreatedAt", it.CreatedAt, start)
		wantTime(t, "UpdatedAt", it.UpdatedAt, start.Add(time.Second))
	}},
	{name: "Delete", run: func(t *testing.T, e *env) {
		e.put(t, ns("docs"), "d", doc("v", 1))
		e.put(t, ns("docs"), "keep", doc("v", 2))
		for range 2 {
			if err := e.s.Delete(ctx, ns("docs"), "d"); err != nil {
				t.Fatalf("Delete: %v", err)
			}
		}
		e.wantNotFound(t, ns("docs"), "d")
		e.get(t, ns("docs"), "keep")
		if err := e.s.Delete(ctx, ns("never", "was"), "x"); err != nil {
			t.Errorf("Delete of a missing item: %v; want nil", err)
		}
		e.clock.Advance(time.Second)
		e.put(t, ns("docs"), "d", doc("v", 3))
		wantTime(t, "CreatedAt of an item put again after Delete", e.get(t, ns("docs"), "d").CreatedAt, start.Add(time.Second))
	}},
	{name: "NilValue", run: func(t *testing.T, e *env) {
		e.put(t, ns("docs"), "nil", nil)
		if v := e.get(t, ns("docs"), "nil").Value; v == nil || len(v) != 0 {
			t.Errorf("Value = %#v; want an empty, non-nil map", v)
		}
	}},
	{name: "Addresses", run: func(t *testing.T, e *env) {
		// Every address is its own item: labels are compared whole and
		// exactly, and keys may hold anything.
		addrs := []struct {
			ns  []string
			key string
		}{
			{ns("a"), "k"}, {ns("a", "b"), "k"}, {ns("ab"), "k"}, {ns("a", "b", "c"), "k"},
			{ns("A"), "k"}, {ns("a"), "K"}, {ns("x", "langgraph"), "k"}, {ns("*"), "k"},
			{ns("a", "*"), "k"}, {ns("user_1", "%", "[x]", "?"), "k"}, {ns("a:b", "c/d"), "k"},
			{ns("naïve", "日本"), "k"}, {ns("nul\x00", "\x00"), "k"}, {ns("line\n"), "k"},
			{ns("a"), "with.dot"}, {ns("a"), "with/slash"}, {ns("a"), "nul\x00key"}, {ns("a"), " "},
		}
		for i, a := range addrs {
			e.put(t, a.ns, a.key, doc("i", i))
		}
		for i, a := range addrs {
			it := e.get(t, a.ns, a.key)
			if it.Value["i"] != float64(i) || !reflect.DeepEqual(it.Namespace, a.ns) || it.Key != a.key {
				t.Errorf("Get(%q, %q) = %s; want item %d at that address", a.ns, a.key, describe(it), i)
			}
		}
		if got := e.search(t, nil, store.SearchOptions{Limit: 100}); len(got) != len(addrs) {
			t.Errorf("Search of everything found %d items; want %d", len(got), len(addrs))
		}
	}},
	{name: "Invalid", run: func(t *testing.T, e *env) {
		cases := []struct {
			name string
			ns   []string
			key  string
		}{
			{"no namespace", nil, "k"},
			{"empty namespace", ns(), "k"},
			{"empty label", ns(""), "k"},
			{"empty inner label", ns("a", "", "b"), "k"},
			{"empty last label", ns("a", "b", ""), "k"},
			{"dot in label", ns("the", "thing.about"), "k"},
			{"reserved root", ns("langgraph", "foo"), "k"},
			{"reserved root alone", ns("langgraph"), "k"},
			{"empty key", ns("a"), ""},
		}
		for _, c := range cases {
			wantErr(t, "Put with "+c.name, e.s.Put(ctx, c.ns, c.key, doc("v", 1), store.PutOptions{}), store.ErrInvalid)
			_, err := e.s.Get(ctx, c.ns, c.key, store.GetOptions{})
			wantErr(t, "Get with "+c.name, err, store.ErrInvalid)
			wantErr(t, "Delete with "+c.name, e.s.Delete(ctx, c.ns, c.key), store.ErrInvalid)
		}
		for name, v := range map[string]map[string]any{
			"a func":  {"f": func() {}},
			"a NaN":   {"n": math.NaN()},
			"a chan":  {"c": make(chan int)},
			"deep +∞": {"a": []any{map[string]any{"b": math.Inf(1)}}},
		} {
			wantErr(t, "Put of a value with "+name, e.s.Put(ctx, ns("bad"), "v", v, store.PutOptions{}), store.ErrInvalid)
		}
		if got := e.search(t, nil, store.SearchOptions{}); len(got) != 0 {
			t.Errorf("after failed Puts the store holds %q; want nothing", paths(got))
		}
	}},
	{name: "Immutable", run: func(t *testing.T, e *env) {
		space := ns("users", "u1")
		value := map[string]any{"list": []any{"a"}, "obj": map[string]any{"x": "y"}}
		e.put(t, space, "k", value)
		space[1] = "changed"
		value["list"].([]any)[0] = "changed"
		value["obj"].(map[string]any)["x"] = "changed"
		value["new"] = true

		want := map[string]any{"list": []any{"a"}, "obj": map[string]any{"x": "y"}}
		it := e.get(t, ns("users", "u1"), "k")
		if !reflect.DeepEqual(it.Value, want) {
			t.Fatalf("after the caller changed what it passed to Put, Get = %v; want %v", it.Value, want)
		}
		it.Namespace[0] = "changed"
		it.Value["list"].([]any)[0] = "changed"
		it.Value["obj"].(map[string]any)["x"] = "changed"
		found := e.search(t, ns("users"), store.SearchOptions{})
		if len(found) != 1 || !reflect.DeepEqual(found[0].Value, want) || !reflect.DeepEqual(found[0].Namespace, ns("users", "u1")) {
			t.Fatalf("after the caller changed what Get returned, Search = %v; want one item %v", paths(found), want)
		}
		found[0].Value["obj"].(map[string]any)["x"] = "changed"
		found[0].Namespace[1] = "changed"
		if it := e.get(t, ns("users", "u1"), "k"); !reflect.DeepEqual(it.Value, want) {
			t.Errorf("after the caller changed what Search returned, Get = %v; want %v", it.Value, want)
		}
		names := e.list(t, store.NamespaceOptions{})
		names[0][0] = "changed"
		wantNamespaces(t, "ListNamespaces after the caller changed its result", e.list(t, store.NamespaceOptions{}), ns("users", "u1"))
	}},
}
