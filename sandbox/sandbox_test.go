package sandbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

func TestValidateExecOptions(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		want    time.Duration // zero: an error
	}{
		{0, sandbox.DefaultExecTimeout},
		{sandbox.MinExecTimeout, sandbox.MinExecTimeout},
		{90 * time.Second, 90 * time.Second},
		{sandbox.MaxExecTimeout, sandbox.MaxExecTimeout},
		{sandbox.MinExecTimeout - time.Nanosecond, 0},
		{sandbox.MaxExecTimeout + time.Nanosecond, 0},
		{-time.Second, 0},
	} {
		got, err := sandbox.ValidateExecOptions(sandbox.ExecOptions{Timeout: tc.timeout})
		if tc.want == 0 {
			if !errors.Is(err, sandbox.ErrInvalidArgument) {
				t.Errorf("timeout %v: %v, %v; want ErrInvalidArgument", tc.timeout, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("timeout %v: %v, %v; want %v", tc.timeout, got, err, tc.want)
		}
	}
}
