package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/storetest"
)

type Chat struct{ Messages []string }

var messages = graph.SliceField("messages", func(s *Chat) *[]string { return &s.Messages }, graph.Append[string]())

// A node keeps what it learns about a user in the store, under the user's
// namespace, and every thread of that user sees it. This is the code of
// docs/howto-store.md.
func Example_graph() {
	b := graph.New(messages)
	b.AddNodeFunc("assistant", func(ctx context.Context, s Chat) (graph.Update[Chat], error) {
		memories := graph.StoreFrom(ctx)
		cfg, _ := graph.ConfigFrom(ctx)
		space := []string{"memories", cfg.Values["user_id"].(string)}

		last := s.Messages[len(s.Messages)-1]
		if fact, ok := strings.CutPrefix(last, "remember "); ok {
			key := fmt.Sprintf("%s-%d", cfg.ThreadID, len(s.Messages))
			if err := memories.Put(ctx, space, key, map[string]any{"fact": fact}, store.PutOptions{}); err != nil {
				return graph.Update[Chat]{}, err
			}
			return graph.Updates(messages.Add("noted")), nil
		}
		found, err := memories.Search(ctx, space, store.SearchOptions{})
		if err != nil {
			return graph.Update[Chat]{}, err
		}
		var facts []string
		for _, it := range found {
			facts = append(facts, it.Value["fact"].(string))
		}
		return graph.Updates(messages.Add("I know: " + strings.Join(facts, "; "))), nil
	})
	b.AddEdge(graph.START, "assistant")

	memories := store.NewMemory()
	defer memories.Close()
	g, err := b.Compile(graph.WithSaver(checkpoint.NewMemory()), graph.WithStore(memories))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	say := func(thread, text string) {
		res, err := g.Invoke(ctx, graph.Updates(messages.Add(text)), graph.WithThread(thread), graph.WithValue("user_id", "ada"))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(thread+":", res.State.Messages[len(res.State.Messages)-1])
	}
	say("monday", "remember likes green tea")
	say("tuesday", "remember is allergic to nuts")
	say("friday", "what do you know?")
	// Output:
	// monday: noted
	// tuesday: noted
	// friday: I know: is allergic to nuts; likes green tea
}

func ExampleNewMemory() {
	s := store.NewMemory()
	defer s.Close()
	ctx := context.Background()

	err := s.Put(ctx, []string{"users", "u42"}, "prefs", map[string]any{"theme": "dark", "font": 14}, store.PutOptions{})
	if err != nil {
		log.Fatal(err)
	}
	it, err := s.Get(ctx, []string{"users", "u42"}, "prefs", store.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(it.Namespace, it.Key, it.Value["theme"], it.Value["font"])

	_, err = s.Get(ctx, []string{"users", "u7"}, "prefs", store.GetOptions{})
	fmt.Println(errors.Is(err, store.ErrNotFound))
	// Output:
	// [users u42] prefs dark 14
	// true
}

func ExampleMemory_Search() {
	s := store.NewMemory()
	defer s.Close()
	ctx := context.Background()
	for i, m := range []map[string]any{
		{"text": "likes tea", "kind": "preference", "score": 3},
		{"text": "lives in Oslo", "kind": "fact", "score": 5},
		{"text": "prefers mornings", "kind": "preference", "score": 4},
	} {
		if err := s.Put(ctx, []string{"memories", "ada"}, fmt.Sprint(i), m, store.PutOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	found, err := s.Search(ctx, []string{"memories"}, store.SearchOptions{
		Filter: map[string]any{"kind": "preference", "score": map[string]any{"$gte": 4}},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range found {
		fmt.Println(it.Namespace, it.Value["text"])
	}
	// Output: [memories ada] prefers mornings
}

func ExampleMemory_ListNamespaces() {
	s := store.NewMemory()
	defer s.Close()
	ctx := context.Background()
	for _, ns := range [][]string{
		{"memories", "ada", "facts"}, {"memories", "ada", "prefs"}, {"memories", "bob", "prefs"}, {"docs", "ada"},
	} {
		if err := s.Put(ctx, ns, "k", map[string]any{}, store.PutOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	all, _ := s.ListNamespaces(ctx, store.NamespaceOptions{})
	fmt.Println(all)
	users, _ := s.ListNamespaces(ctx, store.NamespaceOptions{Prefix: []string{"memories"}, MaxDepth: 2})
	fmt.Println(users)
	prefs, _ := s.ListNamespaces(ctx, store.NamespaceOptions{Suffix: []string{"*", "prefs"}})
	fmt.Println(prefs)
	// Output:
	// [[docs ada] [memories ada facts] [memories ada prefs] [memories bob prefs]]
	// [[memories ada] [memories bob]]
	// [[memories ada prefs] [memories bob prefs]]
}

func ExampleMemory_Delete() {
	s := store.NewMemory()
	defer s.Close()
	ctx := context.Background()
	ns := []string{"memories", "ada"}
	if err := s.Put(ctx, ns, "tea", map[string]any{"likes": "green"}, store.PutOptions{}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Delete(ctx, ns, "tea"), s.Delete(ctx, ns, "tea"))
	_, err := s.Get(ctx, ns, "tea", store.GetOptions{})
	fmt.Println(errors.Is(err, store.ErrNotFound))
	// Output:
	// <nil> <nil>
	// true
}

// Items put with a TTL expire that long after their last write or read. The
// clock here is moved by hand (stores use the machine's unless told), and
// the background sweep is off so that Sweep shows what it would delete.
func ExampleWithTTL() {
	clock := storetest.NewClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	s := store.NewMemory(store.WithClock(clock), store.WithTTL(store.TTLConfig{Default: time.Hour, SweepInterval: -1}))
	defer s.Close()
	ctx := context.Background()
	ns := []string{"sessions"}

	_ = s.Put(ctx, ns, "default", map[string]any{}, store.PutOptions{})                    // the store's default: an hour
	_ = s.Put(ctx, ns, "short", map[string]any{}, store.PutOptions{TTL: 10 * time.Minute}) // its own
	_ = s.Put(ctx, ns, "kept", map[string]any{}, store.PutOptions{TTL: store.NoTTL})       // none

	clock.Advance(9 * time.Minute)
	it, _ := s.Get(ctx, ns, "short", store.GetOptions{}) // a read restarts the TTL
	fmt.Println("short expires", it.ExpiresAt.Format("15:04"))

	clock.Advance(30 * time.Minute)
	_, err := s.Get(ctx, ns, "short", store.GetOptions{})
	fmt.Println("short after 39m:", errors.Is(err, store.ErrNotFound))

	clock.Advance(30 * time.Minute)
	left, _ := s.Search(ctx, ns, store.SearchOptions{})
	fmt.Println("after 69m:", left[0].Key, len(left))
	n, _ := s.Sweep(ctx)
	fmt.Println("swept", n)
	// Output:
	// short expires 12:19
	// short after 39m: true
	// after 69m: kept 1
	// swept 2
}

func ExampleWithClock() {
	clock := storetest.NewClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	s := store.NewMemory(store.WithClock(clock))
	defer s.Close()
	ctx := context.Background()
	_ = s.Put(ctx, []string{"notes"}, "n", map[string]any{"v": 1}, store.PutOptions{})
	clock.Advance(time.Minute)
	_ = s.Put(ctx, []string{"notes"}, "n", map[string]any{"v": 2}, store.PutOptions{})
	it, _ := s.Get(ctx, []string{"notes"}, "n", store.GetOptions{})
	fmt.Println(it.CreatedAt.Format("15:04"), it.UpdatedAt.Format("15:04"))
	// Output: 12:00 12:01
}

// The background sweep runs every TTLConfig.SweepInterval; Close stops it.
func ExampleMemory_Close() {
	clock := storetest.NewClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	s := store.NewMemory(store.WithClock(clock), store.WithTTL(store.TTLConfig{SweepInterval: time.Minute}))
	ctx := context.Background()
	_ = s.Put(ctx, []string{"m"}, "k", map[string]any{}, store.PutOptions{TTL: time.Second})

	_ = clock.WaitTimers(ctx, 1) // the sweeper sleeps on the clock
	clock.Advance(time.Minute)   // and wakes to delete k
	_ = clock.WaitTimers(ctx, 1) // then sleeps again
	n, _ := s.Sweep(ctx)
	fmt.Println("left to sweep:", n)

	fmt.Println(s.Close(), s.Close())
	err := s.Put(ctx, []string{"m"}, "k", map[string]any{}, store.PutOptions{})
	fmt.Println(errors.Is(err, store.ErrClosed))
	// Output:
	// left to sweep: 0
	// <nil> <nil>
	// true
}

func ExampleValidateNamespace() {
	for _, ns := range [][]string{
		{"memories", "ada"},
		{},
		{"memories", ""},
		{"v1.2"},
		{"langgraph", "x"},
	} {
		err := store.ValidateNamespace(ns)
		fmt.Printf("%q: %v\n", ns, errors.Is(err, store.ErrInvalid))
	}
	// Output:
	// ["memories" "ada"]: false
	// []: true
	// ["memories" ""]: true
	// ["v1.2"]: true
	// ["langgraph" "x"]: true
}

func ExampleValidatePrefix() {
	fmt.Println(store.ValidatePrefix(nil))
	fmt.Println(store.ValidatePrefix([]string{"langgraph"})) // reserved for items, fine to search
	fmt.Println(errors.Is(store.ValidatePrefix([]string{"a.b"}), store.ErrInvalid))
	// Output:
	// <nil>
	// <nil>
	// true
}

func ExampleParseFilter() {
	f, err := store.ParseFilter(map[string]any{
		"kind":  "preference",
		"score": map[string]any{"$gte": 3, "$lt": 5},
		"tag":   map[string]any{"$nin": []string{"stale"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(f.Match(map[string]any{"kind": "preference", "score": 4.0}))
	fmt.Println(f.Match(map[string]any{"kind": "preference", "score": 5.0}))
	fmt.Println(f.Match(map[string]any{"kind": "preference", "score": 3.0, "tag": "stale"}))

	_, err = store.ParseFilter(map[string]any{"text": map[string]any{"$regex": "tea"}})
	fmt.Println(errors.Is(err, store.ErrInvalid))
	// Output:
	// true
	// false
	// false
	// true
}

func ExampleNamespaceOptions_Match() {
	o := store.NamespaceOptions{Prefix: []string{"memories", "*"}, Suffix: []string{"prefs"}}
	fmt.Println(o.Match([]string{"memories", "ada", "prefs"}))
	fmt.Println(o.Match([]string{"memories", "ada", "facts"}))
	fmt.Println(o.Match([]string{"memories"}))
	fmt.Println(o.Match([]string{"memories", "prefs"})) // prefix and suffix may overlap
	// Output:
	// true
	// false
	// false
	// true
}

func ExampleNamespaceOptions_Validate() {
	fmt.Println(store.NamespaceOptions{Prefix: []string{"memories", "*"}}.Validate())
	fmt.Println(errors.Is(store.NamespaceOptions{MaxDepth: -1}.Validate(), store.ErrInvalid))
	// Output:
	// <nil>
	// true
}

func ExampleTTLConfig() {
	c := store.TTLConfig{Default: time.Hour, NoRefreshOnRead: true}
	fmt.Println(c.ItemTTL(0), c.ItemTTL(time.Minute), c.ItemTTL(store.NoTTL))
	fmt.Println(c.Refreshes(store.RefreshDefault), c.Refreshes(store.RefreshOn))
	fmt.Println(c.Interval(), store.TTLConfig{SweepInterval: -1}.Interval())
	// Output:
	// 1h0m0s 1m0s 0s
	// false true
	// 5m0s 0s
}
