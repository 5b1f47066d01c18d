//go:build !linux

package gvisor

import (
	"context"
	"fmt"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Backend is unavailable off Linux: gVisor runs only there.
type Backend struct{}

var errNotLinux = fmt.Errorf("%w: gVisor runs only on Linux", sandbox.ErrUnsupported)

// New fails off Linux.
func New(opts ...Option) (*Backend, error) { return nil, errNotLinux }

func (b *Backend) Create(context.Context, sandbox.CreateOptions) (sandbox.Sandbox, error) {
	return nil, errNotLinux
}
func (b *Backend) Get(context.Context, string) (sandbox.Sandbox, error) { return nil, errNotLinux }
func (b *Backend) List(context.Context, sandbox.Filter) ([]sandbox.Info, error) {
	return nil, errNotLinux
}
func (b *Backend) Reap(context.Context) ([]string, error) { return nil, errNotLinux }
func (b *Backend) Root() string                           { return "" }
func (b *Backend) Close() error                           { return nil }
