package sandboxer

import (
	"math"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
)

// The JSON the API speaks (camelCase). Fields the client does not use are left out; unknown fields are
// ignored, so a server may send more.

type wireSandbox struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	State        string          `json:"state"`
	Error        *string         `json:"error"`
	Type         string          `json:"type"`
	VCPU         float64         `json:"vcpu"`
	MemoryGB     float64         `json:"memoryGB"`
	CreatedAt    *time.Time      `json:"createdAt"`
	UpdatedAt    *time.Time      `json:"updatedAt"`
	ArchiveAfter *time.Time      `json:"archiveAfter"`
	Limits       *sandbox.Limits `json:"limits"`      // agentgraph-sandboxd's exact limits
	HostNetwork  bool            `json:"hostNetwork"` // agentgraph-sandboxd only
}

// info maps the wire's sandbox to the sandbox package's Info.
func (w *wireSandbox) info() sandbox.Info {
	in := sandbox.Info{ID: w.ID, Name: w.Name, State: mapState(w.State), Size: sandbox.Size(w.Type),
		HostNetwork: w.HostNetwork}
	if w.Limits != nil {
		in.Limits = *w.Limits
	} else {
		in.Limits = sandbox.Limits{CPUs: w.VCPU, MemoryBytes: int64(math.Round(w.MemoryGB * (1 << 30)))}
	}
	for _, t := range []struct {
		dst *time.Time
		src *time.Time
	}{{&in.CreatedAt, w.CreatedAt}, {&in.UpdatedAt, w.UpdatedAt}, {&in.ExpiresAt, w.ArchiveAfter}} {
		if t.src != nil {
			*t.dst = *t.src
		}
	}
	return in
}

// mapState folds the API's many states into running and stopped. A sandbox on its way up counts as running
// (commands wait for it); one on its way down as stopped. Other states (error) pass through as they are.
func mapState(s string) sandbox.State {
	switch s {
	case "init", "provisioning", "provisioned", "cloning", "ready", "idle", "running":
		return sandbox.StateRunning
	case "archiving", "archived", "stopped", "stopping":
		return sandbox.StateStopped
	}
	return sandbox.State(s)
}

// settling reports whether a sandbox in state s is not yet ready for commands.
func settling(s string) bool {
	switch s {
	case "init", "provisioning", "provisioned", "cloning", "resuming":
		return true
	}
	return false
}

type createRequest struct {
	Type        string            `json:"type,omitempty"`
	TTLSeconds  int64             `json:"ttlSeconds,omitempty"`
	Name        string            `json:"name,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	HostNetwork bool              `json:"hostNetwork,omitempty"`
}

type sandboxResponse struct {
	Type       string      `json:"type"`
	Status     string      `json:"status"`
	TTLSeconds *int64      `json:"ttlSeconds"`
	Sandbox    wireSandbox `json:"sandbox"`
}

type listResponse struct {
	Sandboxes []wireSandbox `json:"sandboxes"`
	PageInfo  struct {
		NextCursor *string `json:"nextCursor"`
		HasMore    bool    `json:"hasMore"`
		Limit      int     `json:"limit"`
	} `json:"pageInfo"`
}

type commandRequest struct {
	Command        string `json:"command"`
	Cwd            string `json:"cwd,omitempty"`
	TimeoutSeconds int64  `json:"timeoutSeconds,omitempty"`
	Detached       bool   `json:"detached,omitempty"`
	Stream         bool   `json:"stream,omitempty"`
}

type commandFinished struct {
	Success         bool       `json:"success"`
	ExitCode        *int       `json:"exitCode"`
	Signal          *string    `json:"signal"`
	Stdout          string     `json:"stdout"`
	Stderr          string     `json:"stderr"`
	StdoutTruncated bool       `json:"stdoutTruncated"`
	StderrTruncated bool       `json:"stderrTruncated"`
	TimedOut        bool       `json:"timedOut"`
	StartedAt       *time.Time `json:"startedAt"`
	FinishedAt      *time.Time `json:"finishedAt"`
}

type commandStarted struct {
	ProcessID int64  `json:"processId"`
	PID       int64  `json:"pid"`
	Command   string `json:"command"`
}

type commandStatus struct {
	ProcessID int64   `json:"processId"`
	Status    string  `json:"status"`
	Running   bool    `json:"running"`
	ExitCode  *int    `json:"exitCode"`
	Command   *string `json:"command"`
	Stdout    string  `json:"stdout"`
	Stderr    string  `json:"stderr"`
}

type fileRead struct {
	Path     string `json:"path"`
	Encoding string `json:"encoding"`
	Size     int64  `json:"size"`
	Content  string `json:"content"`
}

type fileWrite struct {
	Path     string `json:"path"`
	Content  string `json:"content"`
	Encoding string `json:"encoding"`
}

type fileList struct {
	Path  string             `json:"path"`
	Files []sandbox.FileInfo `json:"files"`
}
