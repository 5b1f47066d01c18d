package sandboxd

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// KeyPrefix starts every API key this package makes, as the hosted service's keys start.
const KeyPrefix = "sbx_live_"

// Limits bound what one key may hold at once. Zero fields take the server's defaults (WithDefaultLimits).
type Limits struct {
	Sandboxes int `json:"sandboxes,omitempty"` // running sandboxes
	Commands  int `json:"commands,omitempty"`  // commands running, detached ones included
}

// Key is an API key as the key file keeps it: only a hash of the secret, which is shown once, by Add.
type Key struct {
	ID        string    `json:"id"`   // key_..., safe to log and to show
	Name      string    `json:"name"` // the operator's label
	Hash      string    `json:"hash"` // "sha256:" and the hex SHA-256 of the secret
	Hint      string    `json:"hint"` // the secret's prefix and last four characters, to recognize it
	CreatedAt time.Time `json:"createdAt"`
	Limits    Limits    `json:"limits"`
}

// Keys is a set of API keys, read from and written to a key file (JSON, mode 0600). A secret is 160 random
// bits, so a plain SHA-256 of it cannot be reversed or guessed; no slow hash is needed.
type Keys struct {
	keys []Key
}

type keyFile struct {
	Version int   `json:"version"`
	Keys    []Key `json:"keys"`
}

// ReadKeys reads a key file. A missing file is an error wrapping fs.ErrNotExist.
func ReadKeys(path string) (*Keys, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read key file: %w (create it with: agentgraph-sandboxd keys add -keys %s -name NAME)", err, path)
	}
	var f keyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	for _, k := range f.Keys {
		if k.ID == "" || !strings.HasPrefix(k.Hash, "sha256:") || len(k.Hash) != len("sha256:")+64 {
			return nil, fmt.Errorf("key file %s: key %q has no id or no sha256 hash", path, k.Name)
		}
	}
	return &Keys{keys: f.Keys}, nil
}

// WriteFile writes the keys to path atomically, readable by the owner only.
func (k *Keys) WriteFile(path string) error {
	data, err := json.MarshalIndent(keyFile{Version: 1, Keys: k.List()}, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	_, err = tmp.Write(append(data, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write key file: %w", err)
	}
	return nil
}

// Add makes a new key and returns its secret, which exists nowhere else: hand it to the user now.
func (k *Keys) Add(name string, l Limits) (secret string, key Key, err error) {
	if name == "" {
		return "", Key{}, errors.New("a key needs a name (who or what uses it)")
	}
	if l.Sandboxes < 0 || l.Commands < 0 {
		return "", Key{}, errors.New("limits must not be negative")
	}
	var raw [20]byte
	rand.Read(raw[:])
	secret = KeyPrefix + hex.EncodeToString(raw[:])
	var id [8]byte
	rand.Read(id[:])
	key = Key{ID: "key_" + hex.EncodeToString(id[:]), Name: name, Hash: hashSecret(secret),
		Hint: secret[:len(KeyPrefix)+4] + "…" + secret[len(secret)-4:], CreatedAt: time.Now().UTC().Truncate(time.Second), Limits: l}
	k.keys = append(k.keys, key)
	return secret, key, nil
}

// Remove deletes the key with the id (or, if no id matches, the only key with that name).
func (k *Keys) Remove(idOrName string) error {
	i := slices.IndexFunc(k.keys, func(x Key) bool { return x.ID == idOrName })
	if i < 0 {
		var found []int
		for j, x := range k.keys {
			if x.Name == idOrName {
				found = append(found, j)
			}
		}
		switch len(found) {
		case 0:
			return fmt.Errorf("no key with id or name %q", idOrName)
		case 1:
			i = found[0]
		default:
			return fmt.Errorf("%d keys are named %q: remove one by its id", len(found), idOrName)
		}
	}
	k.keys = slices.Delete(k.keys, i, i+1)
	return nil
}

// List returns the keys, oldest first.
func (k *Keys) List() []Key { return slices.Clone(k.keys) }

// Lookup returns the key whose secret this is.
func (k *Keys) Lookup(secret string) (Key, bool) {
	if k == nil || !strings.HasPrefix(secret, KeyPrefix) {
		return Key{}, false
	}
	h := hashSecret(secret)
	for _, key := range k.keys {
		if subtle.ConstantTimeCompare([]byte(h), []byte(key.Hash)) == 1 {
			return key, true
		}
	}
	return Key{}, false
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(sum[:])
}
