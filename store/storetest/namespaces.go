package storetest

import (
	"fmt"
	"testing"

	"github.com/agentgraph/agentgraph/store"
)

// putAll puts one item in each namespace.
func (e *env) putAll(t *testing.T, spaces ...[]string) {
	t.Helper()
	for i, space := range spaces {
		e.put(t, space, fmt.Sprintf("id_%d", i), doc("data", i))
	}
}

// namespaceTests follow LangGraph's own list_namespaces tests, then add
// order, deletion and the option checks.
var namespaceTests = []test{
	{name: "Basic", run: func(t *testing.T, e *env) {
		e.putAll(t,
			ns("a", "b", "c"), ns("a", "b", "d", "e"), ns("a", "b", "d", "i"), ns("a", "b", "f"),
			ns("a", "c", "f"), ns("b", "a", "f"), ns("users", "123"), ns("users", "456", "settings"),
			ns("admin", "users", "789"))
		for _, c := range []struct {
			opts store.NamespaceOptions
			want [][]string
		}{
			{store.NamespaceOptions{Prefix: ns("a", "b")}, [][]string{ns("a", "b", "c"), ns("a", "b", "d", "e"), ns("a", "b", "d", "i"), ns("a", "b", "f")}},
			{store.NamespaceOptions{Suffix: ns("f")}, [][]string{ns("a", "b", "f"), ns("a", "c", "f"), ns("b", "a", "f")}},
			{store.NamespaceOptions{Prefix: ns("a"), Suffix: ns("f")}, [][]string{ns("a", "b", "f"), ns("a", "c", "f")}},
			{store.NamespaceOptions{Prefix: ns("a", "b"), MaxDepth: 3}, [][]string{ns("a", "b", "c"), ns("a", "b", "d"), ns("a", "b", "f")}},
			{store.NamespaceOptions{Prefix: ns("a", "b"), Limit: 2}, [][]string{ns("a", "b", "c"), ns("a", "b", "d", "e")}},
			{store.NamespaceOptions{Prefix: ns("a", "b"), Offset: 2}, [][]string{ns("a", "b", "d", "i"), ns("a", "b", "f")}},
			{store.NamespaceOptions{Prefix: ns("a", "*", "f")}, [][]string{ns("a", "b", "f"), ns("a", "c", "f")}},
			{store.NamespaceOptions{Suffix: ns("*", "f")}, [][]string{ns("a", "b", "f"), ns("a", "c", "f"), ns("b", "a", "f")}},
			{store.NamespaceOptions{Prefix: ns("nonexistent")}, nil},
			{store.NamespaceOptions{Prefix: ns("users", "123")}, [][]string{ns("users", "123")}},
			{store.NamespaceOptions{MaxDepth: 1}, [][]string{ns("a"), ns("admin"), ns("b"), ns("users")}},
			{store.NamespaceOptions{MaxDepth: 2, Suffix: ns("f")}, [][]string{ns("a", "b"), ns("a", "c"), ns("b", "a")}},
			{store.NamespaceOptions{MaxDepth: 10, Prefix: ns("users")}, [][]string{ns("users", "123"), ns("users", "456", "settings")}},
			{store.NamespaceOptions{MaxDepth: 2, Offset: 1, Limit: 2}, [][]string{ns("a", "c"), ns("admin", "users")}},
		} {
			wantNamespaces(t, fmt.Sprintf("ListNamespaces(%+v)", c.opts), e.list(t, c.opts), c.want...)
		}
	}},
	{name: "Wildcards", run: func(t *testing.T, e *env) {
		e.putAll(t, ns("users", "123"), ns("users", "456"), ns("users", "789", "settings"),
			ns("admin", "users", "789"), ns("guests", "123"), ns("guests", "456", "preferences"))
		wantNamespaces(t, "prefix [users *]", e.list(t, store.NamespaceOptions{Prefix: ns("users", "*")}),
			ns("users", "123"), ns("users", "456"), ns("users", "789", "settings"))
		wantNamespaces(t, "suffix [* preferences]", e.list(t, store.NamespaceOptions{Suffix: ns("*", "preferences")}),
			ns("guests", "456", "preferences"))
		wantNamespaces(t, "prefix [* users] suffix [* settings]", e.list(t, store.NamespaceOptions{Prefix: ns("*", "users"), Suffix: ns("*", "settings")}))
		e.put(t, ns("admin", "users", "settings", "789"), "foo", doc("data", "some_val"))
		wantNamespaces(t, "prefix [* users] suffix [settings *]", e.list(t, store.NamespaceOptions{Prefix: ns("*", "users"), Suffix: ns("settings", "*")}),
			ns("admin", "users", "settings", "789"))
		wantNamespaces(t, "prefix [* * *] suffix [*]", e.list(t, store.NamespaceOptions{Prefix: ns("*", "*", "*"), Suffix: ns("*")}),
			ns("admin", "users", "789"), ns("admin", "users", "settings", "789"), ns("guests", "456", "preferences"), ns("users", "789", "settings"))
	}},
	{name: "SegmentBoundary", run: func(t *testing.T, e *env) {
		e.putAll(t, ns("foo"), ns("foo", "child"), ns("foobar"), ns("foobar", "baz"),
			ns("uid", "users", "alice"), ns("uid", "users", "malice"), ns("uid", "a", "b", "alice"),
			ns("users", "alice"), ns("users", "alice\n"), ns("star*"), ns("starX"))
		wantNamespaces(t, "prefix [foo]", e.list(t, store.NamespaceOptions{Prefix: ns("foo")}), ns("foo"), ns("foo", "child"))
		wantNamespaces(t, "suffix [alice]", e.list(t, store.NamespaceOptions{Suffix: ns("alice")}),
			ns("uid", "a", "b", "alice"), ns("uid", "users", "alice"), ns("users", "alice"))
		wantNamespaces(t, "prefix [uid * alice]", e.list(t, store.NamespaceOptions{Prefix: ns("uid", "*", "alice")}), ns("uid", "users", "alice"))
		wantNamespaces(t, "prefix [users alice]", e.list(t, store.NamespaceOptions{Prefix: ns("users", "alice")}), ns("users", "alice"))
		wantNamespaces(t, "prefix [star*]", e.list(t, store.NamespaceOptions{Prefix: ns("star*")}), ns("star*"))
	}},
	{name: "Pagination", run: func(t *testing.T, e *env) {
		var all [][]string
		for i := range 20 {
			all = append(all, ns("namespace", fmt.Sprintf("sub_%02d", i)))
		}
		// Put in reverse: the order is the namespaces', not the puts'.
		for i := len(all) - 1; i >= 0; i-- {
			e.put(t, all[i], "k", doc())
		}
		for _, off := range []int{0, 5, 15} {
			wantNamespaces(t, fmt.Sprintf("limit 5 offset %d", off), e.list(t, store.NamespaceOptions{Prefix: ns("namespace"), Limit: 5, Offset: off}), all[off:off+5]...)
		}
		wantNamespaces(t, "offset 20", e.list(t, store.NamespaceOptions{Offset: 20}))
	}},
	{name: "DefaultLimit", run: func(t *testing.T, e *env) {
		for i := range store.DefaultNamespaceLimit + 5 {
			e.put(t, ns("n", fmt.Sprintf("%03d", i)), "k", doc())
		}
		if got := e.list(t, store.NamespaceOptions{}); len(got) != store.DefaultNamespaceLimit {
			t.Errorf("ListNamespaces with limit 0 returned %d; want %d", len(got), store.DefaultNamespaceLimit)
		}
		if got := e.list(t, store.NamespaceOptions{Limit: 1000}); len(got) != store.DefaultNamespaceLimit+5 {
			t.Errorf("ListNamespaces with limit 1000 returned %d; want %d", len(got), store.DefaultNamespaceLimit+5)
		}
	}},
	{name: "Order", run: func(t *testing.T, e *env) {
		// Label by label, as strings compare: a namespace comes before
		// those it is a prefix of, and "a" before "a\x00" before "a-x".
		e.putAll(t, ns("b"), ns("a-x"), ns("a", "b"), ns("a"), ns("a", "a", "z"), ns("A"), ns("a\x00"), ns("a", "b", "c"))
		wantNamespaces(t, "ListNamespaces", e.list(t, store.NamespaceOptions{}),
			ns("A"), ns("a"), ns("a", "a", "z"), ns("a", "b"), ns("a", "b", "c"), ns("a\x00"), ns("a-x"), ns("b"))
	}},
	{name: "ManyItems", run: func(t *testing.T, e *env) {
		for i := range 50 {
			e.put(t, ns("a", "b"), fmt.Sprintf("k%d", i), doc())
			e.put(t, ns("a", "c", fmt.Sprint(i%3)), fmt.Sprintf("k%d", i), doc())
		}
		wantNamespaces(t, "ListNamespaces", e.list(t, store.NamespaceOptions{}),
			ns("a", "b"), ns("a", "c", "0"), ns("a", "c", "1"), ns("a", "c", "2"))
		wantNamespaces(t, "max depth 2", e.list(t, store.NamespaceOptions{MaxDepth: 2}), ns("a", "b"), ns("a", "c"))
	}},
	{name: "Deleted", run: func(t *testing.T, e *env) {
		e.put(t, ns("a"), "k1", doc())
		e.put(t, ns("a"), "k2", doc())
		e.put(t, ns("b"), "k", doc())
		for _, k := range []string{"k1", "k2"} {
			if err := e.s.Delete(ctx, ns("a"), k); err != nil {
				t.Fatal(err)
			}
		}
		wantNamespaces(t, "ListNamespaces after its items were deleted", e.list(t, store.NamespaceOptions{}), ns("b"))
	}},
	{name: "Empty", run: func(t *testing.T, e *env) {
		wantNamespaces(t, "ListNamespaces of an empty store", e.list(t, store.NamespaceOptions{}))
	}},
	{name: "Invalid", run: func(t *testing.T, e *env) {
		for _, o := range []store.NamespaceOptions{
			{Prefix: ns("")}, {Suffix: ns("a", "")}, {Prefix: ns("a.b")}, {Suffix: ns("x.*")},
			{MaxDepth: -1}, {Limit: -1}, {Offset: -1},
		} {
			_, err := e.s.ListNamespaces(ctx, o)
			wantErr(t, fmt.Sprintf("ListNamespaces(%+v)", o), err, store.ErrInvalid)
		}
	}},
}
