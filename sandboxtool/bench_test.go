package sandboxtool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentgraph/agentgraph/sandbox"
	"github.com/agentgraph/agentgraph/sandboxtool"
)

// BenchmarkRunPython is one run_python call of a trivial program on a thread whose sandbox exists: write
// main.py, run python3, format the answer.
func BenchmarkRunPython(b *testing.B) {
	backend := openBackendB(b)
	reg := sandboxtool.New(backend)
	defer reg.Close(context.Background())
	tool := reg.RunPython()
	ctx := onThread("bench")
	args := json.RawMessage(`{"code":"print(1)"}`)
	if _, err := tool.Call(ctx, args); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := tool.Call(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExec is the same program run through the backend directly, the floor RunPython builds on.
func BenchmarkExec(b *testing.B) {
	backend := openBackendB(b)
	sb, err := backend.Create(context.Background(), sandbox.CreateOptions{Size: sandbox.SizeSmall})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Delete(context.Background())
	if err := sb.WriteFile(context.Background(), "main.py", []byte("print(1)")); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := sb.Exec(context.Background(), "python3 main.py", sandbox.ExecOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstUse is a thread's first call: the name lookup and Create, then the run; Close deletes.
func BenchmarkFirstUse(b *testing.B) {
	backend := openBackendB(b)
	reg := sandboxtool.New(backend)
	tool := reg.RunPython()
	args := json.RawMessage(`{"code":"print(1)"}`)
	i := 0
	for b.Loop() {
		i++
		if _, err := tool.Call(onThread(fmt.Sprint(i)), args); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if _, err := reg.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
