//go:build !linux

package local

import (
	"context"
	"fmt"
	"runtime"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Init does nothing where the local backend cannot run.
func Init() {}

// Backend is unavailable on this operating system; New says so.
type Backend struct{}

// New fails: the local backend needs Linux namespaces.
func New(opts ...Option) (*Backend, error) {
	return nil, fmt.Errorf("%w: the local sandbox needs Linux namespaces and this is %s: use a remote backend",
		sandbox.ErrUnsupported, runtime.GOOS)
}

func (b *Backend) Create(context.Context, sandbox.CreateOptions) (sandbox.Sandbox, error) {
	return nil, sandbox.ErrUnsupported
}
func (b *Backend) Get(context.Context, string) (sandbox.Sandbox, error) {
	return nil, sandbox.ErrUnsupported
}
func (b *Backend) List(context.Context, sandbox.Filter) ([]sandbox.Info, error) {
	return nil, sandbox.ErrUnsupported
}
func (b *Backend) Reap(context.Context) ([]string, error) { return nil, sandbox.ErrUnsupported }
func (b *Backend) Root() string                           { return "" }
func (b *Backend) Close() error                           { return nil }
