package studio_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/prebuilt"
	"github.com/agentgraph/agentgraph/server"
	"github.com/agentgraph/agentgraph/studio"
)

// Serve the page and the Agent Server on one origin: the page at "/", the
// API everywhere else.
func ExampleMount() {
	saver := checkpoint.NewMemory()
	echo, err := graph.New(prebuilt.Messages).
		AddNodeFunc("echo", func(ctx context.Context, s prebuilt.MessagesState) (graph.Update[prebuilt.MessagesState], error) {
			return graph.Updates(prebuilt.Messages.Add(model.Assistant("echo: " + s.Messages[len(s.Messages)-1].Content))), nil
		}).
		AddEdge(graph.START, "echo").
		AddEdge("echo", graph.END).
		Compile(graph.WithSaver(saver))
	if err != nil {
		panic(err)
	}
	srv, err := server.New(server.WithGraph("echo", echo), server.WithSaver(saver))
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())

	ts := httptest.NewServer(studio.Mount(srv)) // or http.ListenAndServe(addr, studio.Mount(srv))
	defer ts.Close()

	for _, path := range []string{"/", "/ok"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		first, _, _ := strings.Cut(string(body), "\n")
		fmt.Println(path, resp.Header.Get("Content-Type"), first)
	}
	// Output:
	// / text/html; charset=utf-8 <!doctype html>
	// /ok application/json {"ok":true}
}
