package gvisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentgraph/agentgraph/sandbox"
)

// Each sandbox gets cgroup v1 memory and cpu groups of its own, <controller>/agentgraph-gvisor/<id>, holding
// its limits; runsc puts each of its containers there. The whole container counts — gVisor's
// kernel, its file proxy and the code — so a memory bomb ends the container rather than one process.
const cgroupBase = "/sys/fs/cgroup"

const cgroupParent = "agentgraph-gvisor"

func cgroupsAvailable() bool {
	for _, c := range []string{"memory", "cpu"} {
		if _, err := os.Stat(filepath.Join(cgroupBase, c, "cgroup.procs")); err != nil {
			return false
		}
	}
	return true
}

func cgroupDir(controller, id string) string {
	return filepath.Join(cgroupBase, controller, cgroupParent, id)
}

// cgroupsPath is the containers' group, relative to each controller's root, as the OCI spec wants it. All
// containers of a sandbox share it, so its limits hold for the sandbox as a whole and its OOM count sees
// every kill (cgroup v1 counts a kill only in the victim's own group).
func cgroupsPath(sandboxID string) string {
	return "/" + cgroupParent + "/" + sandboxID
}

// setupCgroups makes the sandbox's groups and writes its limits; it is idempotent.
func setupCgroups(id string, lim sandbox.Limits) error {
	mem := cgroupDir("memory", id)
	if err := os.MkdirAll(mem, 0o755); err != nil {
		return fmt.Errorf("create memory cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(mem, "memory.limit_in_bytes"), []byte(strconv.FormatInt(lim.MemoryBytes, 10)), 0); err != nil {
		return fmt.Errorf("set memory limit: %w", err)
	}
	// Without swap accounting the file is absent; with it, swap must not lift the limit.
	os.WriteFile(filepath.Join(mem, "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(lim.MemoryBytes, 10)), 0)
	cpu := cgroupDir("cpu", id)
	if err := os.MkdirAll(cpu, 0o755); err != nil {
		return fmt.Errorf("create cpu cgroup: %w", err)
	}
	if lim.CPUs > 0 {
		if err := os.WriteFile(filepath.Join(cpu, "cpu.cfs_period_us"), []byte("100000"), 0); err != nil {
			return fmt.Errorf("set cpu period: %w", err)
		}
		quota := int64(lim.CPUs * 100000)
		if err := os.WriteFile(filepath.Join(cpu, "cpu.cfs_quota_us"), []byte(strconv.FormatInt(quota, 10)), 0); err != nil {
			return fmt.Errorf("set cpu quota: %w", err)
		}
	}
	return nil
}

// removeCgroups removes the sandbox's groups under every controller (runsc makes the path in all of them).
// Groups still holding a process stay and are reported.
func removeCgroups(id string) error {
	ctrls, err := os.ReadDir(cgroupBase)
	if err != nil {
		return nil
	}
	var errs []error
	for _, c := range ctrls {
		dir := filepath.Join(cgroupBase, c.Name(), cgroupParent, id)
		subs, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, s := range subs {
			if s.IsDir() {
				if err := os.Remove(filepath.Join(dir, s.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
			}
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// oomKills is the sandbox's memory group's count of OOM kills, -1 if unknown.
func oomKills(id string) int64 {
	data, err := os.ReadFile(filepath.Join(cgroupDir("memory", id), "memory.oom_control"))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}
