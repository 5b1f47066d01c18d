package bolt_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/agentgraph/agentgraph/checkpoint"
	"github.com/agentgraph/agentgraph/checkpoint/bolt"
)

var ctx = context.Background()

// The test binary doubles as the child process of the tests below.
func TestMain(m *testing.M) {
	switch os.Getenv("BOLT_TEST_CHILD") {
	case "":
		os.Exit(m.Run())
	case "hold":
		childHold(os.Getenv("BOLT_TEST_FILE"))
	case "put":
		childPut(os.Getenv("BOLT_TEST_FILE"))
	}
	os.Exit(0)
}

// childHold opens the file, says so, and keeps it open until stdin closes.
func childHold(path string) {
	s, err := bolt.Open(path)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	s.Close()
}

// childPut puts checkpoints on a thread forever, printing each id once Put
// has returned, with the step it carries.
func childPut(path string) {
	s, err := bolt.Open(path)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	cfg := checkpoint.Config{ThreadID: "crash"}
	if tp, err := s.Get(ctx, cfg); err == nil {
		cfg = tp.Config
	}
	for i := 0; ; i++ {
		cp := &checkpoint.Checkpoint{ID: checkpoint.NewID(), Values: map[string][]byte{"i": []byte(strconv.Itoa(i))}}
		got, err := s.Put(ctx, cfg, cp, checkpoint.Metadata{Step: i})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		if err := s.PutWrites(ctx, got, "task", []checkpoint.PendingWrite{{Channel: "ch", Value: []byte(strconv.Itoa(i))}}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(got.CheckpointID, i)
		cfg = got
	}
}

func child(t *testing.T, mode, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BOLT_TEST_CHILD="+mode, "BOLT_TEST_FILE="+path)
	return cmd
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "threads.db")
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.Put(ctx, checkpoint.Config{ThreadID: "t1", Namespace: "sub"}, &checkpoint.Checkpoint{ID: checkpoint.NewID(), Values: map[string][]byte{"k": []byte("v")}}, checkpoint.Metadata{Step: 7})
	if err != nil {
		t.Fatal(err)
	}
	w := []checkpoint.PendingWrite{{Index: 0, Channel: "ch", Value: []byte("x")}}
	if err := s.PutWrites(ctx, cfg, "task", w); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Get(ctx, cfg); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Get after Close: %v, want an error saying the Saver is closed", err)
	}

	s, err = bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The same write again, as a task retried after a restart would send it.
	if err := s.PutWrites(ctx, cfg, "task", w); err != nil {
		t.Fatal(err)
	}
	tp, err := s.Get(ctx, checkpoint.Config{ThreadID: "t1", Namespace: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	if tp.Config != cfg || string(tp.Checkpoint.Values["k"]) != "v" || tp.Metadata.Step != 7 {
		t.Fatalf("after reopening: %+v %q step %d", tp.Config, tp.Checkpoint.Values, tp.Metadata.Step)
	}
	if len(tp.PendingWrites) != 1 || string(tp.PendingWrites[0].Value) != "x" {
		t.Fatalf("after reopening and retrying a write: %+v, want the one write", tp.PendingWrites)
	}
}

func TestOpenRejectsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	random := make([]byte, 64<<10)
	rand.Read(random)
	bboltFile := func(name string, fill func(*bbolt.Tx) error) string {
		p := filepath.Join(dir, name)
		db, err := bbolt.Open(p, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(fill); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		path string
		want error
	}{
		{"text", write("notes.txt", []byte("these are not checkpoints\n")), bolt.ErrNotBolt},
		{"random", write("random.bin", random), bolt.ErrNotBolt},
		{"other program", bboltFile("other.db", func(tx *bbolt.Tx) error {
			_, err := tx.CreateBucket([]byte("users"))
			return err
		}), bolt.ErrIncompatible},
		{"other format", bboltFile("future.db", func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucket([]byte("agentgraph"))
			if err != nil {
				return err
			}
			return b.Put([]byte("format"), []byte("agentgraph.checkpoint/999"))
		}), bolt.ErrIncompatible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(tc.path)
			s, err := bolt.Open(tc.path)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) succeeded", tc.path)
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("Open: %v; want an error wrapping %v that names the file", err, tc.want)
			}
			if after, _ := os.ReadFile(tc.path); string(after) != string(before) {
				t.Fatal("Open changed a file it rejected")
			}
		})
	}
	// An empty file is a new checkpoint file.
	s, err := bolt.Open(write("empty.db", nil))
	if err != nil {
		t.Fatalf("Open of an empty file: %v", err)
	}
	s.Close()
}

func TestOpenLockedByAnotherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "threads.db")
	cmd := child(t, "hold", path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v", err)
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	s, err := bolt.Open(path, bolt.WithTimeout(100*time.Millisecond))
	if err == nil {
		s.Close()
		t.Fatal("Open of a file another process holds succeeded")
	}
	if !errors.Is(err, bolt.ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open: %v; want an error wrapping ErrLocked that names the file", err)
	}
}

// TestSurvivesKill kills a writer at arbitrary points: every checkpoint whose
// Put returned is there after reopening, with its write, and the thread
// continues from it.
func TestSurvivesKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "threads.db")
	confirmed := map[string]int{}
	for round := range 3 {
		cmd := child(t, "put", path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		want := 20 + round*17
		for n := 0; n < want && sc.Scan(); n++ {
			var id string
			var i int
			if _, err := fmt.Sscan(sc.Text(), &id, &i); err != nil {
				t.Fatalf("child said %q", sc.Text())
			}
			confirmed[id] = i
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
	}
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, i := range confirmed {
		tp, err := s.Get(ctx, checkpoint.Config{ThreadID: "crash", CheckpointID: id})
		if err != nil {
			t.Fatalf("checkpoint %q (step %d) confirmed before the kill: %v", id, i, err)
		}
		if string(tp.Checkpoint.Values["i"]) != strconv.Itoa(i) || tp.Metadata.Step != i {
			t.Fatalf("checkpoint %q: %q step %d, want %d", id, tp.Checkpoint.Values, tp.Metadata.Step, i)
		}
		if len(tp.PendingWrites) != 1 || string(tp.PendingWrites[0].Value) != strconv.Itoa(i) {
			t.Fatalf("checkpoint %q: writes %+v", id, tp.PendingWrites)
		}
	}
	// Each round continued the chain: one unbroken line of parents.
	n := 0
	for tp, err := range s.List(ctx, checkpoint.Config{ThreadID: "crash"}, checkpoint.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if tp.ParentConfig == nil {
			break
		}
		if _, err := s.Get(ctx, *tp.ParentConfig); err != nil {
			t.Fatalf("parent of %q: %v", tp.Checkpoint.ID, err)
		}
	}
	if n < len(confirmed) {
		t.Fatalf("thread has %d checkpoints, %d were confirmed", n, len(confirmed))
	}
}

// TestFreePagesReused puts and deletes threads in rounds: after the first
// rounds the file stops growing, because freed pages are reused, and keeps
// doing so after a reopen rebuilds the freelist.
func TestFreePagesReused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "threads.db")
	s, err := bolt.Open(path, bolt.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 2000)
	rand.Read(value)
	round := func(r int) {
		thread := checkpoint.Config{ThreadID: "round-" + strconv.Itoa(r)}
		cfg := thread
		for i := range 150 {
			cfg, err = s.Put(ctx, cfg, &checkpoint.Checkpoint{Deltas: map[string][][]byte{"messages": {value}}}, checkpoint.Metadata{Step: i})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.PutWrites(ctx, cfg, "task", []checkpoint.PendingWrite{{Channel: "ch", Value: value[:100]}}); err != nil {
				t.Fatal(err)
			}
		}
		// Another thread lives on across rounds.
		if _, err := s.Put(ctx, checkpoint.Config{ThreadID: "steady"}, &checkpoint.Checkpoint{Values: map[string][]byte{"r": []byte(strconv.Itoa(r))}}, checkpoint.Metadata{Step: r}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteThread(ctx, thread.ThreadID); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	for r := range 3 {
		round(r)
	}
	warm := size()
	for r := 3; r < 10; r++ {
		round(r)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = bolt.Open(path, bolt.WithoutSync()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for r := 10; r < 16; r++ {
		round(r)
	}
	final := size()
	t.Logf("file size after 3 rounds %d, after 16 rounds %d", warm, final)
	if final > warm+warm/4 {
		t.Fatalf("file grew from %d to %d bytes over rounds that keep the same data: free pages are not reused", warm, final)
	}
	if tp, err := s.Get(ctx, checkpoint.Config{ThreadID: "steady"}); err != nil || string(tp.Checkpoint.Values["r"]) != "15" {
		t.Fatalf("steady thread: %v %v", tp, err)
	}
}

// TestFailedCallDoesNotFailItsBatch: calls that share a commit with one that
// fails still succeed.
func TestFailedCallDoesNotFailItsBatch(t *testing.T) {
	s := open(t)
	const n = 40
	errs := make(chan error, 2*n)
	start := make(chan struct{})
	for i := range n {
		go func() {
			<-start
			_, err := s.Put(ctx, checkpoint.Config{ThreadID: "t" + strconv.Itoa(i)}, &checkpoint.Checkpoint{ID: checkpoint.NewID()}, checkpoint.Metadata{Step: i})
			errs <- err
		}()
		go func() {
			<-start
			err := s.PutWrites(ctx, checkpoint.Config{ThreadID: "nobody", CheckpointID: "missing"}, "task", []checkpoint.PendingWrite{{Channel: "ch"}})
			if errors.Is(err, checkpoint.ErrNotFound) {
				err = nil
			} else {
				err = fmt.Errorf("PutWrites to a missing checkpoint: %v, want ErrNotFound", err)
			}
			errs <- err
		}()
	}
	close(start)
	for range 2 * n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		tp, err := s.Get(ctx, checkpoint.Config{ThreadID: "t" + strconv.Itoa(i)})
		if err != nil || tp.Metadata.Step != i {
			t.Fatalf("thread t%d: %v %v", i, tp, err)
		}
	}
}
