package scripted_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentgraph/agentgraph/model"
	"github.com/agentgraph/agentgraph/model/modeltest"
	"github.com/agentgraph/agentgraph/model/scripted"
)

func TestConformance(t *testing.T) {
	modeltest.Run(t, func(t *testing.T, answers ...modeltest.Answer) modeltest.Backend {
		var (
			mu   sync.Mutex
			reqs []model.Request
		)
		m := scripted.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
			mu.Lock()
			a := answers[min(len(reqs), len(answers)-1)]
			reqs = append(reqs, req)
			mu.Unlock()
			switch a.Fail {
			case modeltest.Reject:
				return model.Response{}, fmt.Errorf("scripted: %w", model.ErrRejected)
			case modeltest.Overload:
				return model.Response{}, fmt.Errorf("scripted: %w", model.ErrTemporary)
			case modeltest.Hang:
				<-ctx.Done()
				return model.Response{}, ctx.Err()
			}
			return a.Response, nil
		})
		return modeltest.Backend{Model: m, Received: func() []model.Request {
			mu.Lock()
			defer mu.Unlock()
			return append([]model.Request(nil), reqs...)
		}}
	})
}
