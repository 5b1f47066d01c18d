package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentgraph/agentgraph/model"
)

// ErrNoTurn reports a request CodeAct cannot answer: its last message is
// neither a user message nor a tool message.
var ErrNoTurn = errors.New("scripted: CodeAct answers only a user or tool message")

// PrimesPrompt and PrimesProgram reproduce the sandbox guide's first graph
// turn: pass WithProgram(PrimesPrompt, PrimesProgram) and a user message
// starting "count the primes" runs a sieve that writes primes.json and
// prints the count below one million (78498) and the largest gap.
const (
	PrimesPrompt  = "count the primes"
	PrimesProgram = `import json

N = 1_000_000
flags = bytearray([1]) * N
flags[0] = flags[1] = 0
for p in range(2, int(N ** 0.5) + 1):
    if flags[p]:
        flags[p * p::p] = bytes(len(range(p * p, N, p)))
primes = [n for n, f in enumerate(flags) if f]
with open("primes.json", "w") as out:
    json.dump(primes, out)
gap, after = 0, 0
for a, b in zip(primes, primes[1:]):
    if b - a > gap:
        gap, after = b - a, a
print("primes below 1,000,000:", len(primes))
print("largest gap:", gap, "after", after)
`
)

// CodeActOption configures CodeAct.
type CodeActOption func(*codeAct)

type program struct{ prefix, code string }

type codeAct struct {
	tool     string
	programs []program
}

// WithProgram makes a user message that starts with prefix run code instead
// of the message text. Prefixes are tried in the order given.
func WithProgram(prefix, code string) CodeActOption {
	return func(c *codeAct) { c.programs = append(c.programs, program{prefix, code}) }
}

// WithToolName names the tool CodeAct calls; the default is "run_python".
func WithToolName(name string) CodeActOption {
	return func(c *codeAct) { c.tool = name }
}

// CodeAct returns the stand-in model of the CodeAct pattern. When the last
// message is a user message it asks for one call of the run_python tool with
// arguments {"code": <the message text>} (or the program registered for the
// text's prefix) and call id "call_<number of messages>". When the last
// message is a tool message it replies "Tool said:\n" followed by that
// message's content.
func CodeAct(opts ...CodeActOption) *Model {
	c := codeAct{tool: "run_python"}
	for _, o := range opts {
		o(&c)
	}
	return Func(c.respond)
}

func (c codeAct) respond(_ context.Context, req model.Request) (model.Response, error) {
	n := len(req.Messages)
	if n == 0 {
		return model.Response{}, fmt.Errorf("%w: the request has no messages; send a user message", ErrNoTurn)
	}
	last := req.Messages[n-1]
	switch last.Role {
	case model.RoleTool:
		return model.Response{Message: model.Assistant("Tool said:\n" + last.Content), FinishReason: "stop"}, nil
	case model.RoleUser:
		code := last.Content
		for _, p := range c.programs {
			if strings.HasPrefix(last.Content, p.prefix) {
				code = p.code
				break
			}
		}
		args, err := json.Marshal(struct {
			Code string `json:"code"`
		}{code})
		if err != nil {
			return model.Response{}, fmt.Errorf("scripted: encode arguments: %w", err)
		}
		call := model.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: c.tool, Arguments: args}
		return model.Response{Message: model.Assistant("", call), FinishReason: "tool_calls"}, nil
	default:
		return model.Response{}, fmt.Errorf("%w: the last message has role %q; end the conversation with a user or tool message", ErrNoTurn, last.Role)
	}
}
