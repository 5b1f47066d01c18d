package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/openai"
)

// The adapter's own cost per call over a loopback httptest server: request
// encoding, HTTP, response decoding and conversion.
func BenchmarkGenerate(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, completionWithCalls)
	}))
	defer srv.Close()
	m, err := openai.New("gpt-test", openai.WithAPIKey("k"), openai.WithBaseURL(srv.URL+"/v1"), openai.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	req := model.Request{Messages: conversation(), Tools: []model.ToolSpec{runPython}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Generate(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStream(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, f := range streamFrames {
			fmt.Fprintf(w, "data: %s\n\n", f)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	m, err := openai.New("gpt-test", openai.WithAPIKey("k"), openai.WithBaseURL(srv.URL+"/v1"), openai.WithHTTPClient(srv.Client()))
	if err != nil {
		b.Fatal(err)
	}
	req := model.Request{Messages: conversation(), Tools: []model.ToolSpec{runPython}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := model.Collect(m.Stream(context.Background(), req)); err != nil {
			b.Fatal(err)
		}
	}
}
