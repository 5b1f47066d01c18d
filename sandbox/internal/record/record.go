// Package record is what the Linux sandbox backends keep on disk of a sandbox, beside its files: its id and
// name, its JSON record, replaced whole, and the lock that orders starting commands against state changes.
package record

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentgraph/agentgraph/sandbox"
)

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// NewID returns prefix and ten random letters or digits.
func NewID(prefix string) string {
	b := make([]byte, 10)
	rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return prefix + string(b)
}

// ValidID says whether id is a sandbox id (sb_ and up to 64 letters or digits), and so a safe directory name.
func ValidID(id string) bool {
	rest, ok := strings.CutPrefix(id, "sb_")
	if !ok || len(rest) == 0 || len(rest) > 64 {
		return false
	}
	for _, c := range rest {
		if !strings.ContainsRune(idAlphabet, c) {
			return false
		}
	}
	return true
}

// maxNameLen bounds a sandbox name, which tools show and shells may handle.
const maxNameLen = 128

// ValidName refuses names that could not serve as a file or path component, or would not print.
func ValidName(name string) error {
	switch {
	case len(name) > maxNameLen:
		return fmt.Errorf("%w: sandbox name of %d bytes: use at most %d", sandbox.ErrInvalidArgument, len(name), maxNameLen)
	case strings.ContainsAny(name, "/\x00"), strings.Contains(name, ".."):
		return fmt.Errorf("%w: sandbox name %q: leave out NUL, \"/\" and \"..\"", sandbox.ErrInvalidArgument, name)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: sandbox name %q is not UTF-8", sandbox.ErrInvalidArgument, name)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: sandbox name %q holds a control character", sandbox.ErrInvalidArgument, name)
		}
	}
	return nil
}

// List returns what info says of each sandbox under root that matches f, oldest first. A sandbox info
// cannot read (deleted meanwhile, or half-created) is left out.
func List(root string, f sandbox.Filter, info func(id string) (sandbox.Info, error)) ([]sandbox.Info, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes in %s: %w", root, err)
	}
	var out []sandbox.Info
	for _, e := range entries {
		if !e.IsDir() || !ValidID(e.Name()) {
			continue
		}
		in, err := info(e.Name())
		if err != nil || (f.Name != "" && in.Name != f.Name) || (f.State != "" && in.State != f.State) {
			continue
		}
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b sandbox.Info) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// Read decodes the record of sandbox id (root/id/sandbox.json) into v; a missing one is
// sandbox.ErrNotFound.
func Read(root, id string, v any) error {
	data, err := os.ReadFile(filepath.Join(root, id, "sandbox.json"))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s (it was deleted, or belongs to another root than %s)", sandbox.ErrNotFound, id, root)
	}
	if err != nil {
		return fmt.Errorf("read sandbox %s: %w", id, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("sandbox %s: corrupt record: %w", id, err)
	}
	return nil
}

// Write replaces dir/sandbox.json with v as JSON, whole: readers see the old record or the new one.
func Write(dir string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".sandbox.json.*")
	if err != nil {
		return fmt.Errorf("write sandbox record: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, "sandbox.json"))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write sandbox record: %w", err)
	}
	return nil
}
