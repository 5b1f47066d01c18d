package gvisor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentgraph/agentgraph/sandbox/internal/hostroot"
)

// rootfs is the read-only root every container starts from: a directory of mount points, the merged-usr
// links and a synthetic /etc, with the host paths bound over it read-only. The host's own root is never
// the container's root.
type rootfs struct {
	dir   string
	binds []string // host paths bound at the same path, read-only
}

// etcBinds are the host's /etc entries programs need; the rest of the host's /etc stays out.
var etcBinds = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ssl",
	"/etc/ca-certificates", "/etc/alternatives", "/etc/localtime", "/etc/timezone", "/etc/mime.types",
	"/etc/protocols", "/etc/services", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf", "/etc/python3"}

var etcFiles = map[string]string{
	"passwd":   "root:x:0:0:root:/root:/usr/sbin/nologin\nuser:x:1000:1000:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
	"group":    "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n",
	"hosts":    "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tsandbox\n",
	"hostname": "sandbox\n",
}

// buildRootfs makes the root under dir once per distinct content (named by its hash, so processes with the
// same settings share one, and a changed host gets a new one).
func buildRootfs(dir string, python []string) (*rootfs, error) {
	links, dirs := hostroot.MergedUsr()
	r := &rootfs{binds: append([]string{"/usr"}, dirs...)}
	if !strings.HasPrefix(filepath.Clean(python[0]), "/usr/") {
		return nil, fmt.Errorf("interpreter %s: it must lie under /usr, the only tree the sandbox sees", python[0])
	}
	pyEtc, _ := filepath.Glob("/etc/python3.*")
	for _, p := range append(slices.Clone(etcBinds), pyEtc...) {
		if _, err := os.Stat(p); err == nil {
			r.binds = append(r.binds, p)
		}
	}
	files := map[string]string{}
	for name, content := range etcFiles {
		files["etc/"+name] = content
	}
	wrapper := "#!/bin/sh\nexec " + shellQuote(python) + " \"$@\"\n"
	files["opt/agentgraph/bin/python3"] = wrapper
	files["opt/agentgraph/bin/python"] = wrapper

	// The name covers everything the tree holds, so a reused tree is the one this process would build.
	h := sha256.New()
	for _, k := range sortedKeys(files) {
		fmt.Fprintf(h, "f %s %q\n", k, files[k])
	}
	for _, k := range sortedKeys(links) {
		fmt.Fprintf(h, "l %s %s\n", k, links[k])
	}
	points := map[string]bool{} // mount point -> is a directory
	for _, p := range r.binds {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("build the sandbox root: %w", err)
		}
		points[p] = fi.IsDir()
		fmt.Fprintf(h, "m %s %v\n", p, fi.IsDir())
	}
	r.dir = filepath.Join(dir, ".rootfs-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(r.dir, ".complete")); err == nil {
		return r, nil
	}
	tmp, err := os.MkdirTemp(dir, ".rootfs-build-")
	if err != nil {
		return nil, fmt.Errorf("build the sandbox root: %w", err)
	}
	if err := fillRootfs(tmp, files, links, points); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("build the sandbox root: %w", err)
	}
	if err := os.Rename(tmp, r.dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(filepath.Join(r.dir, ".complete")); serr != nil {
			return nil, fmt.Errorf("build the sandbox root: %w", err)
		}
	}
	return r, nil
}

func fillRootfs(dir string, files, links map[string]string, points map[string]bool) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	for _, d := range []string{"usr", "etc", "home/user", "tmp", "dev", "proc", "opt/agentgraph/bin", "root"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	for p, isDir := range points {
		at := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			return err
		}
		if isDir {
			err := os.Mkdir(at, 0o755)
			if err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
		} else if err := os.WriteFile(at, nil, 0o644); err != nil {
			return err
		}
	}
	for name, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "opt/") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, ".complete"), nil, 0o644)
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// shellQuote quotes words for /bin/sh.
func shellQuote(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
