package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/store"
)

var searchTests = []test{
	{name: "Prefix", run: func(t *testing.T, e *env) {
		// LangGraph's segment-boundary cases: a prefix matches whole labels.
		for _, space := range [][]string{
			ns("foo"), ns("foo", "child"), ns("foo", "child", "deep"),
			ns("foobar"), ns("foobar", "baz"), ns("foo2"), ns("Foo"),
		} {
			e.put(t, space, "k", doc("v", 1))
			e.clock.Advance(time.Second)
		}
		all := store.SearchOptions{Limit: 100}
		wantPaths(t, "Search([foo])", e.search(t, ns("foo"), all), "foo/child/deep:k", "foo/child:k", "foo:k")
		wantPaths(t, "Search([foobar])", e.search(t, ns("foobar"), all), "foobar/baz:k", "foobar:k")
		wantPaths(t, "Search([foo child])", e.search(t, ns("foo", "child"), all), "foo/child/deep:k", "foo/child:k")
		wantPaths(t, "Search([fo])", e.search(t, ns("fo"), all))
		wantPaths(t, "Search([foo child deep deeper])", e.search(t, ns("foo", "child", "deep", "deeper"), all))
		if got := e.search(t, nil, all); len(got) != 7 {
			t.Errorf("Search with no prefix found %q; want all 7 items", paths(got))
		}
		if got := e.search(t, ns(), all); len(got) != 7 {
			t.Errorf("Search with an empty prefix found %q; want all 7 items", paths(got))
		}
	}},
	{name: "WildcardIsLiteral", run: func(t *testing.T, e *env) {
		e.put(t, ns("star*"), "k", doc())
		e.put(t, ns("starX"), "k", doc())
		e.put(t, ns("*"), "k", doc())
		e.put(t, ns("a", "b"), "k", doc())
		wantPaths(t, "Search([*])", e.search(t, ns("*"), store.SearchOptions{}), "*:k")
		wantPaths(t, "Search([star*])", e.search(t, ns("star*"), store.SearchOptions{}), "star*:k")
		wantPaths(t, "Search([a *])", e.search(t, ns("a", "*"), store.SearchOptions{}))
	}},
	{name: "Order", run: func(t *testing.T, e *env) {
		for _, k := range []string{"k1", "k2", "k3"} {
			e.put(t, ns("docs"), k, doc("k", k))
			e.clock.Advance(time.Second)
		}
		wantPaths(t, "Search, newest first", e.search(t, ns("docs"), store.SearchOptions{}), "docs:k3", "docs:k2", "docs:k1")
		e.put(t, ns("docs"), "k1", doc("k", "k1 again"))
		wantPaths(t, "Search after k1 was replaced", e.search(t, ns("docs"), store.SearchOptions{}), "docs:k1", "docs:k3", "docs:k2")
		// Items updated at the same time come by namespace, then key.
		e.clock.Advance(time.Second)
		for _, a := range []struct {
			ns  []string
			key string
		}{{ns("docs", "b"), "x"}, {ns("docs"), "z"}, {ns("docs", "a"), "y"}, {ns("docs", "a"), "b"}, {ns("docs"), "a"}} {
			e.put(t, a.ns, a.key, doc())
		}
		wantPaths(t, "Search with ties", e.search(t, ns("docs"), store.SearchOptions{Limit: 100}),
			"docs:a", "docs:z", "docs/a:b", "docs/a:y", "docs/b:x", "docs:k1", "docs:k3", "docs:k2")
	}},
	{name: "LimitOffset", run: func(t *testing.T, e *env) {
		var want []string
		for i := range 25 {
			key := fmt.Sprintf("k%02d", i)
			e.put(t, ns("docs"), key, doc("i", i))
			want = append([]string{"docs:" + key}, want...)
			e.clock.Advance(time.Millisecond * 10)
		}
		wantPaths(t, "Search with limit 0", e.search(t, ns("docs"), store.SearchOptions{}), want[:store.DefaultSearchLimit]...)
		wantPaths(t, "Search limit 5", e.search(t, ns("docs"), store.SearchOptions{Limit: 5}), want[:5]...)
		wantPaths(t, "Search limit 5 offset 5", e.search(t, ns("docs"), store.SearchOptions{Limit: 5, Offset: 5}), want[5:10]...)
		wantPaths(t, "Search limit 10 offset 20", e.search(t, ns("docs"), store.SearchOptions{Limit: 10, Offset: 20}), want[20:]...)
		wantPaths(t, "Search offset 25", e.search(t, ns("docs"), store.SearchOptions{Offset: 25}))
		wantPaths(t, "Search offset 1000", e.search(t, ns("docs"), store.SearchOptions{Offset: 1000}))
		wantPaths(t, "Search limit 1000", e.search(t, ns("docs"), store.SearchOptions{Limit: 1000}), want...)
		for _, o := range []store.SearchOptions{{Limit: -1}, {Offset: -1}} {
			_, err := e.s.Search(ctx, ns("docs"), o)
			wantErr(t, fmt.Sprintf("Search(%+v)", o), err, store.ErrInvalid)
		}
	}},
	{name: "QueryIgnored", run: func(t *testing.T, e *env) {
		e.put(t, ns("docs"), "a", doc("text", "apples"))
		e.put(t, ns("docs"), "b", doc("text", "cars"))
		wantPaths(t, "Search with a query", e.search(t, ns("docs"), store.SearchOptions{Query: "apples"}), "docs:a", "docs:b")
	}},
	{name: "InvalidPrefix", run: func(t *testing.T, e *env) {
		for _, p := range [][]string{ns(""), ns("a", ""), ns("a.b")} {
			_, err := e.s.Search(ctx, p, store.SearchOptions{})
			wantErr(t, fmt.Sprintf("Search(%q)", p), err, store.ErrInvalid)
		}
	}},
	{name: "Deleted", run: func(t *testing.T, e *env) {
		e.put(t, ns("docs"), "a", doc())
		e.put(t, ns("docs"), "b", doc())
		if err := e.s.Delete(ctx, ns("docs"), "a"); err != nil {
			t.Fatal(err)
		}
		wantPaths(t, "Search after Delete", e.search(t, ns("docs"), store.SearchOptions{}), "docs:b")
	}},
}

var filterItems = []struct {
	key   string
	value map[string]any
}{
	{"apple", doc("kind", "fruit", "color", "red", "score", 4.5, "count", 3, "tags", []any{"sweet", "crisp"}, "meta", doc("origin", "NZ", "organic", true), "ok", true)},
	{"banana", doc("kind", "fruit", "color", "yellow", "score", 3.0, "count", 12, "tags", []any{"sweet"}, "meta", doc("origin", "EC"), "ok", false)},
	{"car", doc("kind", "vehicle", "color", "red", "score", 5.0, "count", 1, "tags", []any{}, "note", nil)},
	{"stone", doc("kind", "mineral", "score", "high", "count", "many")},
}

// filterTests hold SearchOptions.Filter to ParseFilter's rules, one shared
// set of items and a table of filters.
var filterTests = []test{
	{name: "Table", run: func(t *testing.T, e *env) {
		for _, it := range filterItems {
			e.put(t, ns("things"), it.key, it.value)
		}
		for _, c := range []struct {
			filter map[string]any
			want   []string
		}{
			{nil, []string{"apple", "banana", "car", "stone"}},
			{doc("kind", "fruit"), []string{"apple", "banana"}},
			{doc("kind", "fruit", "color", "red"), []string{"apple"}},
			{doc("color", "blue"), nil},
			{doc("missing", "x"), nil},
			{doc("count", 3), []string{"apple"}},
			{doc("count", 3.0), []string{"apple"}},
			{doc("score", 3), []string{"banana"}},
			{doc("ok", true), []string{"apple"}},
			{doc("ok", false), []string{"banana"}},
			{doc("note", nil), []string{"car"}},
			{doc("tags", []any{"sweet"}), []string{"banana"}},
			{doc("tags", []string{"sweet", "crisp"}), []string{"apple"}},
			{doc("tags", []any{"crisp", "sweet"}), nil},
			{doc("tags", []any{}), []string{"car"}},
			{doc("meta", doc("origin", "EC")), []string{"banana"}},
			{doc("meta", doc("origin", "NZ")), nil}, // objects compare whole
			{doc("meta", doc("organic", true, "origin", "NZ")), []string{"apple"}},
			{doc("kind", doc("$eq", "vehicle")), []string{"car"}},
			{doc("color", doc("$ne", "red")), []string{"banana", "stone"}},
			{doc("note", doc("$ne", nil)), []string{"apple", "banana", "stone"}},
			{doc("score", doc("$gt", 4)), []string{"apple", "car"}},
			{doc("score", doc("$gte", 4.5)), []string{"apple", "car"}},
			{doc("score", doc("$lt", 4.5)), []string{"banana"}},
			{doc("score", doc("$lte", 4.5)), []string{"apple", "banana"}},
			{doc("score", doc("$gte", 3, "$lt", 5)), []string{"apple", "banana"}},
			{doc("count", doc("$gt", 2)), []string{"apple", "banana"}},
			{doc("count", doc("$lt", 1e100)), []string{"apple", "banana", "car"}},
			{doc("count", doc("$gt", -1e100)), []string{"apple", "banana", "car"}},
			{doc("score", doc("$gt", "a")), []string{"stone"}},
			{doc("color", doc("$gte", "red")), []string{"apple", "car", "banana"}},
			{doc("color", doc("$lt", "s")), []string{"apple", "car"}},
			{doc("kind", doc("$in", []any{"fruit", "mineral"})), []string{"apple", "banana", "stone"}},
			{doc("count", doc("$in", []any{1, 12, "3"})), []string{"banana", "car"}},
			{doc("kind", doc("$nin", []any{"fruit"})), []string{"car", "stone"}},
			{doc("color", doc("$nin", []any{"red"})), []string{"banana", "stone"}},
			{doc("kind", "fruit", "count", doc("$gte", 10)), []string{"banana"}},
		} {
			got := e.search(t, ns("things"), store.SearchOptions{Filter: c.filter, Limit: 100})
			want := make([]string, len(c.want))
			for i, k := range c.want {
				want[i] = "things:" + k
			}
			if g := paths(got); !sameSet(g, want) {
				t.Errorf("Search with filter %v = %q; want %q", c.filter, g, want)
			}
		}
	}},
	{name: "FilterThenPage", run: func(t *testing.T, e *env) {
		for i := range 10 {
			e.put(t, ns("n"), fmt.Sprintf("k%d", i), doc("even", i%2 == 0))
			e.clock.Advance(time.Second)
		}
		got := e.search(t, ns("n"), store.SearchOptions{Filter: doc("even", true), Limit: 2, Offset: 1})
		wantPaths(t, "page 2 of even items", got, "n:k6", "n:k4")
	}},
	{name: "Invalid", run: func(t *testing.T, e *env) {
		e.put(t, ns("things"), "x", doc("a", 1))
		for _, f := range []map[string]any{
			doc("a", doc("$regex", "x")),
			doc("a", doc("$gt", 1, "plain", 2)),
			doc("a", doc("$gt", true)),
			doc("a", doc("$lt", []any{1})),
			doc("a", doc("$gte", nil)),
			doc("a", doc("$in", "x")),
			doc("a", doc("$nin", 1)),
			doc("a", func() {}),
		} {
			_, err := e.s.Search(ctx, ns("things"), store.SearchOptions{Filter: f})
			wantErr(t, fmt.Sprintf("Search with filter %v", f), err, store.ErrInvalid)
		}
	}},
}

// sameSet compares two lists of distinct strings as sets.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			return false
		}
	}
	return true
}
