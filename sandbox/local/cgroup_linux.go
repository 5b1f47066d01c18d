package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/sandbox"
	"golang.org/x/sys/unix"
)

// cgroup v1 hierarchies used when running as root; each sandbox gets <hierarchy>/agentgraph/<id>.
const cgroupRoot = "/sys/fs/cgroup"

var cgroupControllers = []string{"memory", "pids", "cpu"}

func cgroupsAvailable() bool {
	for _, c := range cgroupControllers {
		if unix.Access(filepath.Join(cgroupRoot, c, "cgroup.procs"), unix.W_OK) != nil {
			return false
		}
	}
	return true
}

func cgroupDir(controller, id string) string {
	return filepath.Join(cgroupRoot, controller, "agentgraph", id)
}

// prepareCgroups creates the sandbox's cgroups if needed, sets their limits and returns their directories.
// The zygote forks the sandbox's commands from a thread that has joined them, so a command starts inside
// and no process is moved per command. All commands of a sandbox share its limits, as processes of one
// machine would. lim.has says this process wrote the limits of an existing cgroup before; lim.set records
// that it has.
func prepareCgroups(id string, lim sandbox.Limits, mem limitMemory) ([]string, error) {
	files := map[string]map[string]string{
		"memory": {"memory.limit_in_bytes": strconv.FormatInt(lim.MemoryBytes, 10), "memory.swappiness": "0"},
		"pids":   {"pids.max": strconv.Itoa(lim.Pids)},
		"cpu":    {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": strconv.Itoa(int(lim.CPUs * 100000))},
	}
	var dirs []string
	for _, c := range cgroupControllers {
		dir := cgroupDir(c, id)
		dirs = append(dirs, dir)
		// Limits are written into an existing cgroup too, unless this process wrote them: a concurrent
		// command of another process may have made it an instant ago and not have written them yet.
		made, err := mkCgroup(dir)
		if err != nil {
			return nil, err
		}
		if !made && mem.has(c) {
			continue
		}
		for name, v := range files[c] {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil &&
				name != "memory.swappiness" { // absent on some kernels; the limit itself is what matters
				return nil, fmt.Errorf("set %s: %w", name, err)
			}
		}
		mem.set(c)
	}
	return dirs, nil
}

// limitMemory remembers which cgroups of a sandbox got their limits from this process.
type limitMemory struct {
	has func(controller string) bool
	set func(controller string)
}

// mkCgroup makes dir and reports whether it is new.
func mkCgroup(dir string) (bool, error) {
	for range 5 { // another backend may remove the shared parent between the two mkdirs
		err := unix.Mkdir(dir, 0o755)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EEXIST):
			return false, nil
		case errors.Is(err, unix.ENOENT):
			if err := unix.Mkdir(filepath.Dir(dir), 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				return false, err
			}
		default:
			return false, err
		}
	}
	return false, fmt.Errorf("make cgroup %s: its parent keeps disappearing", dir)
}

// removeCgroups removes the sandbox's cgroups, waiting briefly for dying processes to leave them.
// cgroupDrain bounds how long removing a sandbox's cgroups waits for them
// to empty.
const cgroupDrain = 15 * time.Second

func removeCgroups(ctx context.Context, id string) error {
	var errs []error
	// A cgroup stays busy until its last task is reaped, which on a loaded
	// machine can take a while after the kill: wait up to cgroupDrain.
	deadline := time.Now().Add(cgroupDrain)
	for _, c := range cgroupControllers {
		dir := cgroupDir(c, id)
		for {
			err := unix.Rmdir(dir)
			if err == nil || errors.Is(err, unix.ENOENT) {
				break
			}
			if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		unix.Rmdir(filepath.Dir(dir)) // the shared parent, once no sandbox uses it; busy is fine
	}
	return errors.Join(errs...)
}

// oomKills is how many processes the kernel has killed for memory in the sandbox's memory cgroup (the
// oom_kill line of memory.oom_control); 0 when the cgroup does not exist yet.
func oomKills(id string) int64 {
	data, err := os.ReadFile(filepath.Join(cgroupDir("memory", id), "memory.oom_control"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
