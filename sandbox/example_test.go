package sandbox_test

import (
	"errors"
	"fmt"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Paths given to a sandbox are relative to its home or absolute under /home/user or /tmp.
func ExampleResolvePath() {
	for _, p := range []string{"main.py", "data/../out.csv", "/tmp/scratch", "../../etc/passwd"} {
		abs, err := sandbox.ResolvePath(p)
		fmt.Println(abs, errors.Is(err, sandbox.ErrInvalidPath))
	}
	// Output:
	// /home/user/main.py false
	// /home/user/out.csv false
	// /tmp/scratch false
	//  true
}

func ExampleSize_Limits() {
	l, _ := sandbox.SizeSmall.Limits()
	fmt.Printf("%g CPU, %d MiB memory, %d GiB disk\n", l.CPUs, l.MemoryBytes>>20, l.DiskBytes>>30)
	// Output: 1 CPU, 512 MiB memory, 1 GiB disk
}
