package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"
)

// threadRecord is a thread as the wire shows it.
type threadRecord struct {
	ThreadID   string                     `json:"thread_id"`
	CreatedAt  wireTime                   `json:"created_at"`
	UpdatedAt  wireTime                   `json:"updated_at"`
	Metadata   map[string]any             `json:"metadata"`
	Status     string                     `json:"status"`
	Config     map[string]any             `json:"config"`
	Values     map[string]json.RawMessage `json:"values,omitempty"`
	Interrupts map[string][]wireInterrupt `json:"interrupts,omitempty"`
}

// runRecord is a run as the wire shows it.
type runRecord struct {
	RunID             string         `json:"run_id"`
	ThreadID          string         `json:"thread_id"`
	AssistantID       string         `json:"assistant_id"`
	Metadata          map[string]any `json:"metadata"`
	Status            string         `json:"status"`
	Kwargs            runKwargs      `json:"kwargs"`
	MultitaskStrategy string         `json:"multitask_strategy"`
	CreatedAt         wireTime       `json:"created_at"`
	UpdatedAt         wireTime       `json:"updated_at"`
}

// storedRun is what the state file keeps of a run.
type storedRun struct {
	Run     runRecord `json:"run"`
	GraphID string    `json:"graph_id"`
	// Resume marks a run cut short by a shutdown after its input was
	// saved: it continues the thread's pending step.
	Resume bool `json:"resume,omitempty"`
}

// records holds threads and runs, in memory and, with a state file, on
// disk. Callers hold mu while they read or change a record.
type records struct {
	mu      sync.Mutex
	threads map[string]*threadRecord
	runs    map[string]*storedRun
	db      *bbolt.DB
}

var (
	threadsBucket = []byte("threads")
	runsBucket    = []byte("runs")
)

func openRecords(path string) (*records, error) {
	r := &records{threads: map[string]*threadRecord{}, runs: map[string]*storedRun{}}
	if path == "" {
		return r, nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("server: open state file %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{threadsBucket, runsBucket} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if err := tx.Bucket(threadsBucket).ForEach(func(k, v []byte) error {
			var t threadRecord
			if err := json.Unmarshal(v, &t); err != nil {
				return fmt.Errorf("thread %s: %w", k, err)
			}
			r.threads[t.ThreadID] = &t
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(runsBucket).ForEach(func(k, v []byte) error {
			var sr storedRun
			if err := json.Unmarshal(v, &sr); err != nil {
				return fmt.Errorf("run %s: %w", k, err)
			}
			r.runs[sr.Run.RunID] = &sr
			return nil
		})
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("server: read state file %s: %w", path, err)
	}
	r.db = db
	return r, nil
}

func (r *records) close() error {
	if r.db == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.db.Close()
	r.db = nil
	return err
}

func (r *records) put(bucket []byte, key string, v any) {
	if r.db == nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	// A failed write leaves the record in memory; the next change of the
	// same record writes it again.
	_ = r.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Put([]byte(key), b) })
}

func (r *records) del(bucket []byte, key string) {
	if r.db == nil {
		return
	}
	_ = r.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Delete([]byte(key)) })
}

// saveThread writes t to disk; the caller holds mu.
func (r *records) saveThread(t *threadRecord) { r.put(threadsBucket, t.ThreadID, t) }

// saveRun writes sr to disk; the caller holds mu.
func (r *records) saveRun(sr *storedRun) { r.put(runsBucket, sr.Run.RunID, sr) }

// deleteThread removes a thread and its runs; the caller holds mu.
func (r *records) deleteThread(id string) {
	delete(r.threads, id)
	r.del(threadsBucket, id)
	for rid, sr := range r.runs {
		if sr.Run.ThreadID == id {
			delete(r.runs, rid)
			r.del(runsBucket, rid)
		}
	}
}

func (r *records) deleteRun(id string) {
	delete(r.runs, id)
	r.del(runsBucket, id)
}

// threadRuns lists a thread's runs, newest first; the caller holds mu.
func (r *records) threadRuns(threadID string) []*storedRun {
	var out []*storedRun
	for _, sr := range r.runs {
		if sr.Run.ThreadID == threadID {
			out = append(out, sr)
		}
	}
	slices.SortFunc(out, func(a, b *storedRun) int {
		return -time.Time(a.Run.CreatedAt).Compare(time.Time(b.Run.CreatedAt))
	})
	return out
}

// snapshot returns a deep copy of v made through JSON, so a response can be
// encoded after mu is released.
func snapshot[T any](v *T) *T {
	b, _ := json.Marshal(v)
	var out T
	_ = json.Unmarshal(b, &out)
	return &out
}
