package sandboxtool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/graph"
	"github.com/agentgraph/agentgraph/sandbox/local"
	"github.com/agentgraph/agentgraph/sandboxtool"
)

// Long work: start_python starts the program and answers at once with a command id; command_status reports
// on it later. Give the model both tools beside run_python.
func ExampleRegistry_StartPython() {
	root, _ := os.MkdirTemp("", "sandboxes")
	defer os.RemoveAll(root)
	backend, err := local.New(local.WithRoot(root))
	if err != nil {
		panic(err)
	}
	defer backend.Close()
	reg := sandboxtool.New(backend)
	defer reg.Close(context.Background())
	start, status := reg.StartPython(), reg.CommandStatus()

	ctx := graph.ContextWithConfig(context.Background(), graph.Config{ThreadID: "1"})
	args, _ := json.Marshal(map[string]string{"code": "print(sum(range(10_000_000)))"})
	v, err := start.Call(ctx, args)
	if err != nil {
		panic(err)
	}
	out := v.(string) // run_python and its siblings answer with text
	id := regexp.MustCompile(`started (\S+)`).FindStringSubmatch(out)[1]
	ids := regexp.MustCompile(`sb_[a-z0-9]+|cmd_[a-z0-9]+`)
	fmt.Println(ids.ReplaceAllString(strings.SplitN(out, "\n", 2)[0], "…"))
	for {
		args, _ := json.Marshal(map[string]string{"command_id": id})
		v, err := status.Call(ctx, args)
		if err != nil {
			panic(err)
		}
		out := v.(string)
		if !strings.Contains(out, " running") {
			fmt.Println(ids.ReplaceAllString(out, "…"))
			break
		}
		time.Sleep(50 * time.Millisecond) // the model would do other work, or ask again later
	}
	// Output:
	// […] started …
	// […] … exit code 0
	// 49999995000000
}
