package prebuilt_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/scripted"
	"github.com/agentgraph/agentgraph/prebuilt"
)

type Weather struct {
	City        string  `json:"city"`
	Temperature float64 `json:"temperature"`
}

type cityArgs struct {
	City string `json:"city"`
}

func TestReactAgentWithResponse(t *testing.T) {
	lookup := prebuilt.MustTool("weather", "Look up the weather.", func(ctx context.Context, a cityArgs) (string, error) {
		return a.City + ": 21.5 degrees", nil
	})
	m := scripted.New(
		scripted.Calls(model.ToolCall{ID: "c1", Name: "weather", Arguments: []byte(`{"city":"Oslo"}`)}),
		scripted.Text("It is 21.5 degrees in Oslo."),
		scripted.Text(`{"city":"Oslo"}`), // misses a field: sent back once
		scripted.Text(`{"city":"Oslo","temperature":21.5}`),
	)
	agent, err := prebuilt.NewReactAgentWithResponse[Weather](m, []prebuilt.Tool{lookup}, "weather_report")
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Invoke(context.Background(), graph.Updates(agent.Messages.Add(model.User("weather in Oslo?"))))
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Response == nil || *res.State.Response != (Weather{City: "Oslo", Temperature: 21.5}) {
		t.Fatalf("response %+v", res.State.Response)
	}
	reqs := m.Requests()
	if len(reqs) != 4 || reqs[2].ResponseFormat == nil || reqs[2].ResponseFormat.Name != "weather_report" || reqs[0].ResponseFormat != nil {
		t.Fatalf("requests: %d, formats %v %v", len(reqs), reqs[0].ResponseFormat, reqs[2].ResponseFormat)
	}
	// The retry carries the misfit answer and what was wrong with it.
	retry := reqs[3].Messages
	if last := retry[len(retry)-1]; !strings.Contains(last.Content, "temperature") {
		t.Fatalf("feedback %q does not name the missing field", last.Content)
	}
	// The conversation itself has no trace of the structured call.
	if n := len(res.State.Messages); n != 4 {
		t.Fatalf("%d messages in the conversation, want 4", n)
	}
}

func TestReactAgentWithResponseFailsAfterOneRetry(t *testing.T) {
	m := scripted.New(scripted.Text("done"), scripted.Text("not json"), scripted.Text("still not json"))
	agent, err := prebuilt.NewReactAgentWithResponse[Weather](m, nil, "weather_report")
	if err != nil {
		t.Fatal(err)
	}
	_, err = agent.Invoke(context.Background(), graph.Updates(agent.Messages.Add(model.User("hi"))))
	if !errors.Is(err, model.ErrInvalidOutput) {
		t.Fatalf("err %v, want model.ErrInvalidOutput", err)
	}
}
