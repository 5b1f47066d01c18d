package server

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/store"
	"github.com/agentgraph/agentgraph/store/storetest"
)

func TestStoreRoutes(t *testing.T) {
	saver := checkpoint.NewMemory()
	st := store.NewMemory()
	_, ts := startServer(t, nil, WithGraph("echo", echoGraph(t, saver)), WithSaver(saver), WithStore(st))

	before := time.Now().UTC().Truncate(time.Millisecond)
	for _, p := range []string{
		`{"namespace":["users","ann"],"key":"prefs","value":{"lang":"go","tabs":true}}`,
		`{"namespace":["users","ann","notes"],"key":"n1","value":{"text":"buy milk","done":false}}`,
		`{"namespace":["users","bob"],"key":"prefs","value":{"lang":"python","tabs":false}}`,
	} {
		if code, body, _ := call(t, ts, "PUT", "/store/items", p); code != 204 || body != "" {
			t.Fatalf("put %s: %d %q", p, code, body)
		}
	}
	code, v := callJSON(t, ts, "GET", "/store/items?namespace=users.ann&key=prefs", "")
	item := obj(t, v)
	if code != 200 || len(item) != 5 || item["key"] != "prefs" || strings.Join(toStrings(item["namespace"]), ".") != "users.ann" {
		t.Fatalf("get: %d %v", code, v)
	}
	if val := obj(t, item["value"]); len(val) != 2 || val["lang"] != "go" || val["tabs"] != true {
		t.Fatalf("value: %v", item["value"])
	}
	for _, f := range []string{"created_at", "updated_at"} {
		at, err := time.Parse("2006-01-02T15:04:05.000Z", item[f].(string))
		if err != nil || at.Before(before) || at.After(time.Now()) {
			t.Fatalf("%s = %v (%v)", f, item[f], err)
		}
	}
	// The item is the store's: a graph reading it sees the same value.
	got, err := st.Get(context.Background(), []string{"users", "ann"}, "prefs", store.GetOptions{})
	if err != nil || got.Value["lang"] != "go" {
		t.Fatalf("store.Get: %v %v", got, err)
	}

	code, v = callJSON(t, ts, "POST", "/store/items/search", `{"namespace_prefix":["users"],"filter":{"lang":"python"}}`)
	items, _ := obj(t, v)["items"].([]any)
	if code != 200 || len(items) != 1 || obj(t, items[0])["key"] != "prefs" || strings.Join(toStrings(obj(t, items[0])["namespace"]), ".") != "users.bob" {
		t.Fatalf("search by filter: %d %v", code, v)
	}
	code, v = callJSON(t, ts, "POST", "/store/items/search", `{"namespace_prefix":["users","ann"]}`)
	if items, _ := obj(t, v)["items"].([]any); code != 200 || len(items) != 2 {
		t.Fatalf("search by prefix: %d %v", code, v)
	}
	code, v = callJSON(t, ts, "POST", "/store/items/search", `{"namespace_prefix":["users"],"limit":1,"offset":1}`)
	if items, _ := obj(t, v)["items"].([]any); code != 200 || len(items) != 1 {
		t.Fatalf("search page: %d %v", code, v)
	}
	code, v = callJSON(t, ts, "POST", "/store/namespaces", `{"prefix":["users"],"max_depth":2}`)
	ns, _ := obj(t, v)["namespaces"].([]any)
	var joined []string
	for _, n := range ns {
		joined = append(joined, strings.Join(toStrings(n), "."))
	}
	if code != 200 || strings.Join(joined, " ") != "users.ann users.bob" {
		t.Fatalf("namespaces: %d %v", code, v)
	}

	if code, body, _ := call(t, ts, "DELETE", "/store/items", `{"namespace":["users","ann"],"key":"prefs"}`); code != 204 || body != "" {
		t.Fatalf("delete: %d %q", code, body)
	}
	if code, body, _ := call(t, ts, "GET", "/store/items?namespace=users.ann&key=prefs", ""); code != 200 || body != "null" {
		t.Fatalf("get after delete: %d %q", code, body)
	}

	for _, c := range []struct {
		method, path, body, field string
	}{
		{"PUT", "/store/items", `{"namespace":["a.b"],"key":"k","value":{}}`, "namespace"},
		{"PUT", "/store/items", `{"namespace":[],"key":"k","value":{}}`, "namespace"},
		{"PUT", "/store/items", `{"namespace":["a"],"value":{}}`, "key"},
		{"PUT", "/store/items", `{"namespace":["a"],"key":"k"}`, "value"},
		{"PUT", "/store/items", `{"namespace":["a"],"key":"k","value":[1]}`, "value"},
		{"PUT", "/store/items", `{"namespace":["a"],"key":"k","value":{},"ttl":-1}`, "ttl"},
		{"GET", "/store/items?namespace=a", "", "key"},
		{"DELETE", "/store/items", `{"namespace":["a"]}`, "key"},
		{"POST", "/store/items/search", `{"namespace_prefix":["a"],"limit":0}`, "limit"},
		{"POST", "/store/items/search", `{"namespace_prefix":["",""]}`, "namespace_prefix"},
	} {
		code, body, _ := call(t, ts, c.method, c.path, c.body)
		if code != 422 || !strings.Contains(body, c.field) {
			t.Errorf("%s %s %s: %d %s; want 422 naming %s", c.method, c.path, c.body, code, body, c.field)
		}
	}
}

func TestStoreTTLAndNoStore(t *testing.T) {
	saver := checkpoint.NewMemory()
	_, bare := startServer(t, nil, WithGraph("echo", echoGraph(t, saver)), WithSaver(saver))
	if code, body, _ := call(t, bare, "GET", "/store/items?namespace=a&key=k", ""); code != 404 || !strings.Contains(body, "WithStore") {
		t.Fatalf("a server without a store: %d %s", code, body)
	}

	clock := storetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := store.NewMemory(store.WithClock(clock))
	_, ts := startServer(t, nil, WithGraph("echo", echoGraph(t, checkpoint.NewMemory())), WithStore(st))
	// LangGraph's ttl is in minutes.
	if code, body, _ := call(t, ts, "PUT", "/store/items", `{"namespace":["s"],"key":"k","value":{"n":1},"ttl":1.5}`); code != 204 {
		t.Fatalf("put with ttl: %d %s", code, body)
	}
	clock.Advance(89 * time.Second)
	if code, body, _ := call(t, ts, "GET", "/store/items?namespace=s&key=k&refresh_ttl=false", ""); code != 200 || !strings.Contains(body, `"n":1`) {
		t.Fatalf("before the ttl: %d %s", code, body)
	}
	clock.Advance(2 * time.Second)
	if code, body, _ := call(t, ts, "GET", "/store/items?"+url.Values{"namespace": {"s"}, "key": {"k"}}.Encode(), ""); code != 200 || body != "null" {
		t.Fatalf("after the ttl: %d %s", code, body)
	}
}

// TestStoreFromRuns checks that a run's nodes reach the server's store.
func TestStoreFromRuns(t *testing.T) {
	saver := checkpoint.NewMemory()
	st := store.NewMemory()
	g, err := graph.New(prebuilt.Messages).
		AddNodeFunc("remember", func(ctx context.Context, s prebuilt.MessagesState) (graph.Update[prebuilt.MessagesState], error) {
			last := s.Messages[len(s.Messages)-1].Content
			if err := graph.StoreFrom(ctx).Put(ctx, []string{"memories"}, "last", map[string]any{"text": last}, store.PutOptions{}); err != nil {
				return graph.Update[prebuilt.MessagesState]{}, err
			}
			return graph.Updates(prebuilt.Messages.Add(model.Message{Role: model.RoleAssistant, Content: "noted"})), nil
		}).
		AddEdge(graph.START, "remember").AddEdge("remember", graph.END).
		Compile(graph.WithSaver(saver))
	if err != nil {
		t.Fatal(err)
	}
	_, ts := startServer(t, nil, WithGraph("mem", g), WithSaver(saver), WithStore(st))
	if code, body, _ := call(t, ts, "POST", "/runs/wait", `{"assistant_id":"mem","input":{"messages":[{"role":"user","content":"tea, no sugar"}]}}`); code != 200 || !strings.Contains(body, `"noted"`) {
		t.Fatalf("run: %d %s", code, body)
	}
	code, v := callJSON(t, ts, "GET", "/store/items?namespace=memories&key=last", "")
	if code != 200 || obj(t, obj(t, v)["value"])["text"] != "tea, no sugar" {
		t.Fatalf("memory written by the run: %d %v", code, v)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}
